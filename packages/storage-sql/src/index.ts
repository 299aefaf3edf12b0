/** @agent-runs/storage-sql: the storage ports over @effect/sql, shared by the dialect adapters. */
export * as Migrations from "./Migrations.js"
export * as Reader from "./Reader.js"
export * as StorageKey from "./StorageKey.js"
export * as StorageSql from "./StorageSql.js"
export * as Wakeups from "./Wakeups.js"
export * as CacheChanges from "./CacheChanges.js"
export * as ReadCache from "./ReadCache.js"
