/**
 * Backing up and restoring a SQLite database (docs/operations.md): `VACUUM INTO` writes a
 * consistent copy of the database as of one moment while the server keeps reading and writing it
 * (WAL mode: the copy is a read transaction), compacted; a restore copies that file into place.
 */
import { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Effect } from "effect"
import { copyFileSync, existsSync } from "node:fs"

/** Writes a consistent copy of the live database `filename` to `to` (which must not exist). */
export const snapshot = (filename: string, to: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql`VACUUM INTO ${to}`).pipe(
    Effect.provide(SqliteClient.layer({ filename })),
    Effect.asVoid
  )

/** Puts a snapshot in place as the database `filename`; fails when a database is there already. */
export const restore = (from: string, filename: string) =>
  Effect.try({
    try: () => {
      const present = [filename, `${filename}-wal`].filter((file) => existsSync(file))
      if (present.length > 0) throw new Error(`${present[0]} exists: restore into a new data directory, or remove the database first`)
      copyFileSync(from, filename)
    },
    catch: (cause) => cause instanceof Error ? cause : new Error(String(cause))
  })
