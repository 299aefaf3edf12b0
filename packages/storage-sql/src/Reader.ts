/**
 * The client the stores read through outside their transactions: every statement of it sees the
 * last committed state, never another fiber's open transaction, and never waits for one.
 *
 * - PostgreSQL: the pool itself (`sameClient`): a statement outside a transaction runs on a
 *   connection of its own.
 * - SQLite: a second, read-only connection to the same file (SqliteStorage.ts). In WAL mode it
 *   reads the last commit while the writer's connection writes; statements on the writer's
 *   connection outside a transaction would instead share it with any transaction open there
 *   (seeing writes that may be rolled back) and queue behind it.
 *
 * Reads that must see a transaction's own writes stay on `SqlClient` inside that transaction. On
 * PostgreSQL a read through the reader by a fiber that has a transaction open runs on that
 * transaction's connection too (the client follows the fiber's `TransactionConnection`).
 */
import { SqlClient } from "@effect/sql"
import { Context, Layer } from "effect"

export class Reader extends Context.Tag("@agent-runs/storage-sql/Reader")<Reader, SqlClient.SqlClient>() {}

/** The reader is the client itself (PostgreSQL's pool). */
export const sameClient: Layer.Layer<Reader, never, SqlClient.SqlClient> = Layer.effect(Reader, SqlClient.SqlClient)
