/**
 * Whether the schema after this release's migrations still serves the previous release's code, as
 * it must during a rolling deploy (old and new replicas on one database) and after a rollback
 * (docs/operations.md, "Upgrading and rolling back"): migrations only expand. Every table and
 * column the previous release knew is still there with its type; none that took NULL refuses it
 * now; and a column added to one of its tables takes NULL or has a default, so its INSERTs, which
 * leave the column out, still work. Dropping or renaming waits for the release after the one that
 * stopped using it. Checked on both dialects by the storage packages' compatibility tests, which
 * migrate a database to the previous release's last migration (`Releases.ts`), describe it, migrate
 * the rest and compare.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { migrate, migrateThrough } from "./Migrations.js"
import type { Release } from "./Releases.js"

/** A column as the database describes it. */
export interface Column {
  readonly table: string
  readonly name: string
  readonly type: string
  readonly nullable: boolean
  readonly hasDefault: boolean
}

const key = (column: Pick<Column, "table" | "name">) => `${column.table}.${column.name}`

/** The columns of every table of the schema (SQLite: `pragma_table_info`; PostgreSQL: `information_schema`). */
export const describe = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.onDialectOrElse({
    pg: () =>
      Effect.map(
        sql<{ table_name: string; column_name: string; data_type: string; is_nullable: string; column_default: string | null }>`
          SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns
          WHERE table_schema = current_schema()`,
        (rows) =>
          rows.map((r): Column => ({
            table: r.table_name,
            name: r.column_name,
            type: r.data_type,
            nullable: r.is_nullable === "YES",
            hasDefault: r.column_default !== null
          }))
      ),
    orElse: () =>
      Effect.map(
        sql<{ table_name: string; name: string; type: string; notnull: number; dflt_value: string | null; pk: number }>`
          SELECT m.name AS table_name, p.name, p.type, p."notnull", p.dflt_value, p.pk
          FROM sqlite_master m JOIN pragma_table_info(m.name) p
          WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'`,
        (rows) =>
          rows.map((r): Column => ({
            table: r.table_name,
            name: r.name,
            type: r.type.toUpperCase(),
            nullable: r.notnull === 0,
            // An INTEGER PRIMARY KEY is the rowid: an INSERT without it gets one.
            hasDefault: r.dflt_value !== null || (r.pk === 1 && r.type.toUpperCase() === "INTEGER")
          }))
      )
  }))

/** What in `after` the code that ran on `before` would trip over, one line each (none: compatible). */
export const incompatibilities = (before: ReadonlyArray<Column>, after: ReadonlyArray<Column>): ReadonlyArray<string> => {
  const now = new Map(after.map((c) => [key(c), c]))
  const oldTables = new Set(before.map((c) => c.table))
  const newTables = new Set(after.map((c) => c.table))
  const known = new Set(before.map(key))
  const dropped = [...oldTables].filter((t) => !newTables.has(t)).map((t) => `table ${t} was dropped`)
  const changed = before.filter((c) => newTables.has(c.table)).flatMap((was): ReadonlyArray<string> => {
    const is = now.get(key(was))
    if (is === undefined) return [`column ${key(was)} was dropped or renamed`]
    return [
      ...(is.type === was.type ? [] : [`column ${key(was)} changed type from ${was.type} to ${is.type}`]),
      ...(was.nullable && !is.nullable ? [`column ${key(was)} no longer takes NULL`] : []),
      ...(was.hasDefault && !is.hasDefault && !is.nullable ? [`column ${key(was)} lost its default`] : [])
    ]
  })
  const added = after
    .filter((c) => oldTables.has(c.table) && !known.has(key(c)) && !c.nullable && !c.hasDefault)
    .map((c) => `column ${key(c)} was added NOT NULL without a default: the previous release's INSERTs leave it out`)
  return [...dropped, ...changed, ...added]
}

/**
 * Migrates an empty database to the schema `release` ended with, then to this release's, and
 * answers what the release's code would trip over (none: compatible).
 */
export const checkUpgradeFrom = (release: Release) =>
  Effect.gen(function* () {
    yield* migrateThrough(release.lastMigration)
    const before = yield* describe
    yield* migrate
    return incompatibilities(before, yield* describe)
  })
