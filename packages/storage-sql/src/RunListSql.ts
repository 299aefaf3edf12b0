/**
 * The run list query in SQL: every filter of `RunListQuery` as a condition on the runs table,
 * and keyset pagination that returns the rows `RunQuery.pageOf` would, in its order; the counts
 * by state (`GET /agent/run-counts`) with the same conditions, as `RunQuery.stateCountsOf` would.
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
 *   PostgreSQL uses `LIKE`, SQLite `instr`. That is the exact match (relevance 1); the fuzzy
 *   match is `RunQuery`'s relevance, in one of three ways (`SearchMode`):
 *   - `"pg_trgm"` (PostgreSQL with the extension): pg_trgm's `similarity` of the query text to each
 *     part, in SQL: the relevance is a column of the query (a filter, and the key of the relevance
 *     sort and its cursor).
 *   - `"adapter"` (SQLite, which has no pg_trgm): the other filters and the exact match in SQL,
 *     every candidate's search text read (ids and sort columns only), the relevance computed by
 *     `RunQuery.relevanceKeyOfFields` (the same pg_trgm similarity), then the page's rows read by id.
 *     A search reads every candidate of the team, so it costs in proportion to them.
 *   - `"substring"` (PostgreSQL without pg_trgm): the exact match only, logged once at start.
 */
import type { Viewer } from "@agent-runs/core/domain/Access"
import {
  orderByQuery,
  RELEVANCE_SCALE,
  RELEVANCE_THRESHOLD_KEY,
  relevanceKeyOfFields,
  type RunListQuery,
  type SortableRunRow,
  searchQueryText
} from "@agent-runs/core/domain/RunQuery"
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

/** How a store evaluates the fuzzy part of `q` (see the module's comment). */
export type SearchMode = "pg_trgm" | "adapter" | "substring"

const modes = new WeakMap<SqlClient.SqlClient, SearchMode>()

/**
 * The search mode of a client's database, looked up once per client: SQLite computes relevance
 * in the adapter; PostgreSQL uses pg_trgm when the extension is installed in the database (the
 * migration creates it when it can), else falls back to substring matching.
 */
export const searchMode = (sql: SqlClient.SqlClient): Effect.Effect<SearchMode, SqlError> =>
  Effect.suspend(() => {
    const known = modes.get(sql)
    if (known !== undefined) return Effect.succeed(known)
    const lookup: Effect.Effect<SearchMode, SqlError> = sql.onDialectOrElse({
      pg: () =>
        Effect.map(
          sql`SELECT 1 AS n FROM pg_extension WHERE extname = 'pg_trgm'`,
          (rows): SearchMode => (rows.length > 0 ? "pg_trgm" : "substring")
        ),
      orElse: () => Effect.succeed("adapter" as const)
    })
    return Effect.tap(lookup, (mode) => Effect.sync(() => modes.set(sql, mode)))
  })

/** At start (after the migrations): a warning in the log when `q` can only match substrings. */
export const warnWithoutTrigrams = (sql: SqlClient.SqlClient): Effect.Effect<void, SqlError> =>
  Effect.flatMap(searchMode(sql), (mode) =>
    mode === "substring"
      ? Effect.logWarning(
        "PostgreSQL has no pg_trgm extension in this database: the run list's q matches substrings only " +
          "(no fuzzy matching, no ranking by similarity). Install the extension (Debian: postgresql-contrib) " +
          "and run CREATE EXTENSION pg_trgm as a role allowed to, then restart."
      )
      : Effect.void)

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
  return where
}

/** The condition that every term of `q` is a substring of the title, the prompt or the skill spec. */
const exactMatch = (sql: SqlClient.SqlClient, q: ReadonlyArray<string>): Statement.Fragment =>
  sql.and(q.map((term) => searchTerm(sql, term)))

/** The relevance key of `runs` for `q` in SQL, as `RunQuery.relevanceKey` computes it (pg_trgm only). */
const relevanceSql = (sql: SqlClient.SqlClient, q: ReadonlyArray<string>, mode: SearchMode): Statement.Fragment => {
  // Substring only: every run that passes the filters (the exact match among them) has relevance 1.
  if (mode !== "pg_trgm") return sql`${RELEVANCE_SCALE}::bigint`
  const text = searchQueryText(q)
  const parts = [
    sql`substr(runs.search_text, 1, runs.search_title_length)`,
    sql`substr(runs.search_text, runs.search_title_length + 2, runs.search_prompt_length)`,
    sql`substr(runs.search_text, runs.search_title_length + runs.search_prompt_length + 3)`
  ]
  const similarities = parts.map((part) => sql`similarity(${text}::text, ${part})`)
  return sql`(CASE WHEN ${exactMatch(sql, q)} THEN ${RELEVANCE_SCALE}::bigint
    ELSE floor(greatest(${sql.csv(similarities)})::float8 * ${RELEVANCE_SCALE})::bigint END)`
}

/** The condition that a run matches `q` (non-empty) in SQL, in the modes that match in SQL. */
const searchCondition = (sql: SqlClient.SqlClient, q: ReadonlyArray<string>, mode: SearchMode): Statement.Fragment =>
  // The exact match alone is a plain condition the trigram index can serve.
  mode === "pg_trgm" ? sql`${relevanceSql(sql, q, mode)} >= ${RELEVANCE_THRESHOLD_KEY}` : exactMatch(sql, q)

/**
 * Up to `limit + 1` rows of the page `query` asks for, in the query's order: the extra row tells
 * whether a next page exists. `columns` is the select list.
 */
export const selectPage = <Row extends object>(
  sql: SqlClient.SqlClient,
  columns: Statement.Fragment,
  query: RunListQuery,
  viewer: Viewer
): Effect.Effect<ReadonlyArray<Row>, SqlError> =>
  Effect.flatMap(searchMode(sql), (mode) => selectPageIn<Row>(sql, columns, query, viewer, mode))

const selectPageIn = <Row extends object>(
  sql: SqlClient.SqlClient,
  columns: Statement.Fragment,
  query: RunListQuery,
  viewer: Viewer,
  mode: SearchMode
): Effect.Effect<ReadonlyArray<Row>, SqlError> => {
  const q = query.filters.q
  if (q.length > 0 && mode === "adapter") return selectRankedInAdapter<Row>(sql, columns, query, viewer)
  const relevance = q.length > 0 ? relevanceSql(sql, q, mode) : undefined
  const sort = query.sort_by === "relevance" ? { column: "relevance", nullable: false } : SORTS[query.sort_by]
  const key = query.sort_by === "relevance" ? relevance ?? sql.literal(String(RELEVANCE_SCALE)) : sql(`runs.${sort.column}`)
  const asc = query.sort_order === "asc"
  const direction = sql.literal(asc ? "ASC" : "DESC")
  const after = sql.literal(asc ? ">" : "<")
  const filters = filterConditions(sql, query, viewer)
  if (q.length > 0) filters.push(searchCondition(sql, q, mode))
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

/** The search columns of a run, as stored. */
interface SearchColumns {
  readonly search_text: string
  readonly search_title_length: number
  readonly search_prompt_length: number
}

/** The columns the adapter reads of every candidate of a search (see `"adapter"` above). */
interface Candidate extends SearchColumns {
  readonly run_id: string
  readonly title: string
  readonly skill_name: string | null
  readonly created_at: number | bigint
  readonly updated_at: number | bigint
}

/** The title, prompt and skill spec parts of `search_text`, cut by their lengths in code points. */
const searchParts = (c: SearchColumns): readonly [string, string, string] => {
  const chars = [...c.search_text]
  const t = c.search_title_length
  const p = c.search_prompt_length
  return [chars.slice(0, t).join(""), chars.slice(t + 1, t + 1 + p).join(""), chars.slice(t + p + 2).join("")]
}

/**
 * Whether a candidate's title, prompt and skill spec match `q` in the `"adapter"` mode: its
 * relevance (`RunQuery.relevanceKeyOfFields`) reaches the threshold, for a search page and the
 * counts alike.
 */
const matchesInAdapter = (parts: ReadonlyArray<string>, q: ReadonlyArray<string>): boolean =>
  relevanceKeyOfFields(parts, q) >= RELEVANCE_THRESHOLD_KEY

/**
 * A search page on a store without pg_trgm's similarity in SQL: the candidates' search text read,
 * their relevance computed here, ordered and cut at the cursor by `RunQuery`'s own comparison,
 * then up to `limit + 1` rows read by id, in that order.
 */
const selectRankedInAdapter = <Row extends object>(
  sql: SqlClient.SqlClient,
  columns: Statement.Fragment,
  query: RunListQuery,
  viewer: Viewer
): Effect.Effect<ReadonlyArray<Row>, SqlError> =>
  Effect.gen(function* () {
    const q = query.filters.q
    const candidates = yield* sql<Candidate>`SELECT run_id, title, skill_name, created_at, updated_at,
      search_text, search_title_length, search_prompt_length
      FROM runs WHERE ${sql.and(filterConditions(sql, query, viewer))}`
    const ranked: Array<SortableRunRow> = []
    for (const c of candidates) {
      const parts = searchParts(c)
      if (!matchesInAdapter(parts, q)) continue
      const [, prompt, skillSpec] = parts
      ranked.push({
        run_id: c.run_id,
        title: c.title,
        // Lowercased already: relevance lowercases again, which changes nothing.
        prompt,
        agent_config: { skill_spec: skillSpec },
        created_at: Number(c.created_at),
        updated_at: Number(c.updated_at),
        agent_skill: c.skill_name === null ? null : { name: c.skill_name }
      })
    }
    const page = orderByQuery(ranked, query).slice(0, query.limit + 1)
    if (page.length === 0) return []
    const rows = yield* sql<Row & { readonly run_id: string }>`SELECT ${columns} FROM runs
      WHERE run_id IN ${sql.in(page.map((row) => row.run_id))}`
    const byId = new Map(rows.map((row) => [row.run_id, row]))
    return page.flatMap((row) => {
      const found = byId.get(row.run_id)
      return found === undefined ? [] : [found as Row]
    })
  })

/** How many runs one state has (`n` as the driver gives a count). */
export interface StateCount {
  readonly state: string
  readonly n: number | bigint | string
}

/**
 * How many runs pass the query's filters (and `q`) by state, in one query: `GROUP BY state` over
 * the conditions `selectPage` filters with. Sort, limit and cursor play no part. A search in the
 * `"adapter"` mode reads every candidate's state and search columns and counts those whose
 * relevance reaches the threshold here, as a search page does.
 */
export const countByState = (
  sql: SqlClient.SqlClient,
  query: RunListQuery,
  viewer: Viewer
): Effect.Effect<ReadonlyArray<StateCount>, SqlError> =>
  Effect.flatMap(searchMode(sql), (mode) => {
    const q = query.filters.q
    const filters = filterConditions(sql, query, viewer)
    if (q.length > 0 && mode === "adapter") {
      return Effect.map(
        sql<SearchColumns & { readonly state: string }>`SELECT state, search_text, search_title_length, search_prompt_length
          FROM runs WHERE ${sql.and(filters)}`,
        (candidates) => {
          const counts = new Map<string, number>()
          for (const c of candidates) {
            if (!matchesInAdapter(searchParts(c), q)) continue
            counts.set(c.state, (counts.get(c.state) ?? 0) + 1)
          }
          return [...counts].map(([state, n]) => ({ state, n }))
        }
      )
    }
    if (q.length > 0) filters.push(searchCondition(sql, q, mode))
    return sql<StateCount>`SELECT runs.state AS state, COUNT(*) AS n FROM runs WHERE ${sql.and(filters)} GROUP BY runs.state`
  })
