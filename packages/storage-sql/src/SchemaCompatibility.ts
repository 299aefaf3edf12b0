/**
 * Whether the schema after this release's migrations still serves the previous release's code, as
 * it must during a rolling deploy (old and new replicas on one database) and after a rollback
 * (docs/operations.md, "Upgrading and rolling back"): migrations only expand. Checked:
 * - every table and column the previous release knew is still there with its type, none that took
 *   NULL refuses it now, none lost the default its INSERTs relied on, and a column added to one of
 *   its tables takes NULL or has a default (its INSERTs leave the column out);
 * - every unique index it had is still there (its `ON CONFLICT` clauses name them), and no new one
 *   covers only columns it writes (its INSERTs could start to conflict);
 * - every trigger it had is still there (its writes rely on what they do).
 * Not checked (reviewed by hand, docs/operations.md): CHECK constraints and foreign keys, what new
 * triggers do, and migrations that reshape stored documents. Dropping or renaming waits for the
 * release after the one that stopped using it. Both dialects run `checkUpgradeFrom` in their
 * compatibility tests (storage-sql/testing).
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

/** A unique index (a primary key or UNIQUE constraint's included), by its columns in order. */
export interface UniqueIndex {
  readonly table: string
  readonly name: string
  readonly columns: string
}

/** A trigger on a table. */
export interface Trigger {
  readonly table: string
  readonly name: string
}

/** What the check compares of a schema. */
export interface Description {
  readonly columns: ReadonlyArray<Column>
  readonly uniques: ReadonlyArray<UniqueIndex>
  readonly triggers: ReadonlyArray<Trigger>
}

interface ColumnRow {
  readonly table_name: string
  readonly name: string
  readonly type: string
  readonly nullable: boolean
  readonly has_default: boolean
}

const describePg = (sql: SqlClient.SqlClient) =>
  Effect.all({
    // Base tables only; a type with its length or element type (udt_name); identity and generated
    // columns fill themselves, as a default does.
    columns: sql<ColumnRow>`
      SELECT c.table_name, c.column_name AS name,
        c.udt_name || coalesce('(' || c.character_maximum_length || ')', '') AS type,
        c.is_nullable = 'YES' AS nullable,
        (c.column_default IS NOT NULL OR c.is_identity = 'YES' OR c.is_generated = 'ALWAYS') AS has_default
      FROM information_schema.columns c
      JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
      WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'`,
    uniques: sql<{ table_name: string; name: string; columns: string }>`
      SELECT t.relname AS table_name, i.relname AS name, array_to_string(array_agg(a.attname ORDER BY k.n), ',') AS columns
      FROM pg_index x
      JOIN pg_class i ON i.oid = x.indexrelid
      JOIN pg_class t ON t.oid = x.indrelid
      JOIN pg_namespace ns ON ns.oid = t.relnamespace
      CROSS JOIN LATERAL unnest(x.indkey) WITH ORDINALITY AS k(attnum, n)
      LEFT JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
      WHERE ns.nspname = current_schema() AND x.indisunique
      GROUP BY t.relname, i.relname`,
    triggers: sql<{ table_name: string; name: string }>`
      SELECT DISTINCT event_object_table AS table_name, trigger_name AS name
      FROM information_schema.triggers WHERE trigger_schema = current_schema()`
  })

const describeSqlite = (sql: SqlClient.SqlClient) =>
  Effect.all({
    // An INTEGER PRIMARY KEY alone is the rowid: an INSERT without it gets one.
    columns: sql<ColumnRow>`
      SELECT m.name AS table_name, p.name, upper(p.type) AS type, p."notnull" = 0 AS nullable,
        (p.dflt_value IS NOT NULL OR (p.pk = 1 AND upper(p.type) = 'INTEGER'
          AND (SELECT count(*) FROM pragma_table_info(m.name) q WHERE q.pk > 0) = 1)) AS has_default
      FROM sqlite_master m JOIN pragma_table_info(m.name) p
      WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'`,
    uniques: sql<{ table_name: string; name: string; columns: string }>`
      SELECT m.name AS table_name, l.name, group_concat(c.name, ',') AS columns
      FROM sqlite_master m JOIN pragma_index_list(m.name) l JOIN pragma_index_info(l.name) c
      WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND l."unique" = 1
      GROUP BY m.name, l.name`,
    triggers: sql<{ table_name: string; name: string }>`
      SELECT tbl_name AS table_name, name FROM sqlite_master WHERE type = 'trigger'`
  })

/** The schema's tables, unique indexes and triggers (PostgreSQL: its catalogs; SQLite: its pragmas). */
export const describe: Effect.Effect<Description, unknown, SqlClient.SqlClient> = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.map(sql.onDialectOrElse({ pg: () => describePg(sql), orElse: () => describeSqlite(sql) }), (rows) => ({
    columns: rows.columns.map((r) => ({
      table: r.table_name,
      name: r.name,
      type: r.type,
      nullable: Boolean(r.nullable),
      hasDefault: Boolean(r.has_default)
    })),
    uniques: rows.uniques.map((r) => ({ table: r.table_name, name: r.name, columns: r.columns })),
    triggers: rows.triggers.map((r) => ({ table: r.table_name, name: r.name }))
  })))

const key = (item: { readonly table: string; readonly name: string }) => `${item.table}.${item.name}`

/** What in the columns of `after` the code that ran on `before` would trip over. */
const columnProblems = (before: ReadonlyArray<Column>, after: ReadonlyArray<Column>): ReadonlyArray<string> => {
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

/** Unique indexes: none of `before` gone; none new on its tables over only the columns it knew. */
const uniqueProblems = (before: Description, after: Description): ReadonlyArray<string> => {
  const shape = (u: UniqueIndex) => `${u.table}(${u.columns})`
  const had = new Set(before.uniques.map(shape))
  const has = new Set(after.uniques.map(shape))
  const oldTables = new Set(before.columns.map((c) => c.table))
  const knownColumns = new Set(before.columns.map(key))
  const dropped = before.uniques.filter((u) => !has.has(shape(u)))
    .map((u) => `unique index ${u.name} on ${shape(u)} was dropped: the previous release's ON CONFLICT may name it`)
  const added = after.uniques
    .filter((u) => !had.has(shape(u)) && oldTables.has(u.table) && u.columns.split(",").every((c) => knownColumns.has(`${u.table}.${c}`)))
    .map((u) => `unique index ${u.name} on ${shape(u)} is new over columns the previous release writes: its INSERTs may conflict`)
  return [...dropped, ...added]
}

/** What in `after` the code that ran on `before` would trip over, one line each (none: compatible). */
export const incompatibilities = (before: Description, after: Description): ReadonlyArray<string> => {
  const triggers = new Set(after.triggers.map(key))
  return [
    ...columnProblems(before.columns, after.columns),
    ...uniqueProblems(before, after),
    ...before.triggers.filter((t) => !triggers.has(key(t))).map((t) => `trigger ${t.name} on ${t.table} was dropped`)
  ]
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
