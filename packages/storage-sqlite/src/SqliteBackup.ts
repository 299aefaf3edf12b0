/**
 * Backing up and restoring a SQLite database (docs/operations.md): `VACUUM INTO` writes a
 * consistent copy of the database as of one moment while the server keeps reading and writing it
 * (WAL mode: the copy is a read transaction), compacted; a restore copies that file into place.
 */
import { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Effect } from "effect"
import { copyFileSync, existsSync, renameSync } from "node:fs"

/**
 * Writes a consistent copy of the live database `filename` to `to` (which must not exist), read
 * only; fails with a readable message when there is no Agent Runs database there.
 */
export const snapshot = (filename: string, to: string) =>
  Effect.gen(function*() {
    if (!existsSync(filename)) return yield* Effect.fail(new Error(`${filename}: no database there (is AGENT_RUNS_DATA_DIR right?)`))
    const sql = yield* SqlClient.SqlClient
    const migrated = yield* sql`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'agent_runs_migrations'`
    if (migrated.length === 0) return yield* Effect.fail(new Error(`${filename}: not an Agent Runs database`))
    yield* sql`VACUUM INTO ${to}`
  }).pipe(
    Effect.provide(SqliteClient.layer({ filename, readonly: true })),
    Effect.mapError((e) => e instanceof SqlError ? new Error(`${filename}: ${rootMessage(e)}`) : e)
  )

/** The innermost message of a failure's `cause` chain (an SqlError's is the driver's). */
const rootMessage = (error: unknown): string => {
  let message = String(error)
  for (let current = error, depth = 0; current instanceof Error && depth < 10; current = current.cause, depth++) {
    if (current.message !== "") message = current.message
  }
  return message
}

/** Puts a snapshot in place as the database `filename`; fails when a database is there already. */
export const restore = (from: string, filename: string) =>
  Effect.try({
    try: () => {
      const present = [filename, `${filename}-wal`].filter((file) => existsSync(file))
      if (present.length > 0) throw new Error(`${present[0]} exists: restore into a new data directory, or remove the database first`)
      // Whole or not at all: a copy cut short is never taken for the database.
      copyFileSync(from, `${filename}.restoring`)
      renameSync(`${filename}.restoring`, filename)
    },
    catch: (cause) => cause instanceof Error ? cause : new Error(String(cause))
  })
