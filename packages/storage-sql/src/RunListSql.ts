/**
 * The run list query in SQL: every filter of `RunListQuery` as a condition on the runs table,
 * and keyset pagination that returns the rows `RunQuery.pageOf` would, in its order.
 *
 * - A page reads one index `(team_uid, key, run_id)` from the cursor's position onwards
 *   (`(key, run_id) > (cursor key, cursor id)`, or `<` in descending order), so the first page
 *   and one a million rows deep cost the same.
 * - Nulls last in both orders (runs without a skill when sorting by agent): the rows with a key
 *   come from one range of the index and, when the page is not full yet, the rows without one from
 *   a second range (`key IS NULL`, ordered by run id). Each range is a plain index scan, which an
 *   `ORDER BY key IS NULL, key` over both could not be on either dialect.
 * - `q`: `search_text` holds the lowercased title, prompt and skill spec joined by U+0001. A term
 *   is a substring of one of them exactly when it is a substring of `search_text`, unless the term
 *   itself holds U+0001; such a term is matched against each part, cut out by its stored length.
 *   PostgreSQL uses `LIKE` (served by the trigram index), SQLite `instr`.
 */
import type { Viewer } from "@agent-runs/core/domain/Access"
import type { RunListQuery } from "@agent-runs/core/domain/RunQuery"
import type { SqlClient, Statement } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"
import { visibleTo } from "./internal/Catalog.js"

/** The separator of the parts of `search_text`. */
export const SEARCH_SEPARATOR = "\u0001"

/** The number of code points of a string (the length SQL's `substr` counts in). */
const codePoints = (s: string): number => {
  let n = 0
  for (const _ of s) n++
  return n
}

/** The search columns of a run: its lowercased title, prompt and skill spec. */
export const searchColumns = (title: string, prompt: string, skillSpec: string | undefined) => {
  const parts = [title, prompt, skillSpec ?? ""].map((s) => s.toLowerCase())
  return {
    search_text: parts.join(SEARCH_SEPARATOR),
    search_title_length: codePoints(parts[0]!),
    search_prompt_length: codePoints(parts[1]!)
  }
}

/** The column each sort reads, and whether it may be null (nulls come last in both orders). */
const SORTS = {
  updated_at: { column: "updated_at", nullable: false },
  created_at: { column: "created_at", nullable: false },
  title: { column: "title", nullable: false },
  agent: { column: "skill_name", nullable: true }
} as const

const escapeLike = (term: string): string => term.replace(/[\\%_]/g, (c) => `\\${c}`)

/** The condition that one search term matches a run. */
const searchTerm = (sql: SqlClient.SqlClient, term: string): Statement.Fragment => {
  const position = sql.onDialectOrElse({ pg: () => sql.literal("strpos"), orElse: () => sql.literal("instr") })
  if (term.includes(SEARCH_SEPARATOR)) {
    return sql.or([
      sql`${position}(substr(runs.search_text, 1, runs.search_title_length), ${term}) > 0`,
      sql`${position}(substr(runs.search_text, runs.search_title_length + 2, runs.search_prompt_length), ${term}) > 0`,
      sql`${position}(substr(runs.search_text, runs.search_title_length + runs.search_prompt_length + 3), ${term}) > 0`
    ])
  }
  return sql.onDialectOrElse({
    pg: () => sql`runs.search_text LIKE ${`%${escapeLike(term)}%`} ESCAPE '\\'`,
    orElse: () => sql`instr(runs.search_text, ${term}) > 0`
  })
}

/** Every condition of the query's filters and the viewer's visibility, on the table `runs`. */
export const filterConditions = (
  sql: SqlClient.SqlClient,
  query: RunListQuery,
  viewer: Viewer
): Array<Statement.Fragment> => {
  const f = query.filters
  const where: Array<Statement.Fragment> = [visibleTo(sql, viewer, "runs")]
  if (f.states.length > 0) where.push(sql`runs.state IN ${sql.in(f.states)}`)
  if (f.name !== undefined) where.push(sql`runs.agent_name = ${f.name}`)
  if (f.model_id !== undefined) where.push(sql`runs.model_id = ${f.model_id}`)
  if (f.creator !== undefined) where.push(sql`runs.creator_uid = ${f.creator}`)
  if (f.executor !== undefined) where.push(sql`runs.executor_uid = ${f.executor}`)
  if (f.source !== undefined) where.push(sql`runs.source = ${f.source}`)
  if (f.execution_location !== undefined) where.push(sql`runs.execution_location = ${f.execution_location}`)
  if (f.created_after !== undefined) where.push(sql`runs.created_at > ${f.created_after}`)
  if (f.created_before !== undefined) where.push(sql`runs.created_at < ${f.created_before}`)
  if (f.updated_after !== undefined) where.push(sql`runs.updated_at > ${f.updated_after}`)
  if (f.environment !== undefined) {
    where.push(
      f.environment._tag === "NoEnvironment"
        ? sql`runs.environment_id IS NULL`
        : sql`runs.environment_id = ${f.environment.uid}`
    )
  }
  if (f.skill_spec !== undefined) where.push(sql`runs.skill_spec = ${f.skill_spec}`)
  if (f.schedule_id !== undefined) where.push(sql`runs.schedule_id = ${f.schedule_id}`)
  if (f.ancestor_run_id !== undefined) {
    where.push(sql`EXISTS (SELECT 1 FROM run_ancestors a
      WHERE a.run_id = runs.run_id AND a.ancestor_run_id = ${f.ancestor_run_id})`)
  }
  for (const [key, value] of f.metadata) {
    where.push(sql`EXISTS (SELECT 1 FROM run_metadata m
      WHERE m.run_id = runs.run_id AND m.key = ${key} AND m.value = ${value})`)
  }
  if (f.artifact_type !== undefined) {
    where.push(sql`EXISTS (SELECT 1 FROM run_artifacts x
      WHERE x.run_id = runs.run_id AND x.artifact_type = ${f.artifact_type})`)
  }
  for (const term of f.q) where.push(searchTerm(sql, term))
  return where
}

/**
 * Up to `limit + 1` rows of the page `query` asks for, in the query's order: the extra row tells
 * whether a next page exists. `columns` is the select list.
 */
export const selectPage = <Row extends object>(
  sql: SqlClient.SqlClient,
  columns: Statement.Fragment,
  query: RunListQuery,
  viewer: Viewer
): Effect.Effect<ReadonlyArray<Row>, SqlError> => {
  const sort = SORTS[query.sort_by]
  const key = sql(`runs.${sort.column}`)
  const asc = query.sort_order === "asc"
  const direction = sql.literal(asc ? "ASC" : "DESC")
  const after = sql.literal(asc ? ">" : "<")
  const filters = filterConditions(sql, query, viewer)
  const wanted = query.limit + 1
  const cursor = query.cursor

  /** The rows with a key, from the cursor's position on. */
  const keyed = (limit: number) => {
    const where = [...filters]
    if (sort.nullable) where.push(sql`${key} IS NOT NULL`)
    if (cursor !== undefined && cursor.key !== null) {
      where.push(sql`(${key}, runs.run_id) ${after} (${cursor.key}, ${cursor.run_id})`)
    }
    return sql<Row>`SELECT ${columns} FROM runs WHERE ${sql.and(where)}
      ORDER BY ${key} ${direction}, runs.run_id ${direction} LIMIT ${limit}`
  }

  /** The rows without a key (they come after every keyed row), from the cursor's position on. */
  const unkeyed = (limit: number) => {
    const where = [...filters, sql`${key} IS NULL`]
    if (cursor !== undefined && cursor.key === null) where.push(sql`runs.run_id ${after} ${cursor.run_id}`)
    return sql<Row>`SELECT ${columns} FROM runs WHERE ${sql.and(where)}
      ORDER BY runs.run_id ${direction} LIMIT ${limit}`
  }

  if (cursor !== undefined && cursor.key === null) {
    // A cursor past the last keyed row: only unkeyed rows follow (none when the key cannot be null).
    return sort.nullable ? unkeyed(wanted) : Effect.succeed([])
  }
  return Effect.flatMap(keyed(wanted), (rows) =>
    !sort.nullable || rows.length >= wanted
      ? Effect.succeed(rows)
      : Effect.map(unkeyed(wanted - rows.length), (rest) => [...rows, ...rest])
  )
}
