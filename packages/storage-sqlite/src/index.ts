/** @agent-runs/storage-sqlite: the storage ports of @agent-runs/core on SQLite. */
export * as SqliteStorage from "./SqliteStorage.js"
export * as SqliteBackup from "./SqliteBackup.js"
