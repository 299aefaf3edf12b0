/** @agent-runs/storage-pg: the storage ports of @agent-runs/core on PostgreSQL. */
export * as PgStorage from "./PgStorage.js"
export * as PgBackup from "./PgBackup.js"
