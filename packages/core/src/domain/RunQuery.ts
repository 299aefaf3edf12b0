/**
 * The query of `GET /agent/runs`: parsing and validating the query string into one typed
 * `RunListQuery`, its opaque pagination cursor, and a reference (brute-force, in-memory)
 * evaluator. The evaluator (`matchesRunListQuery`, `compareRunsForQuery`, `pageOf`, and
 * `stateCountsOf` for `GET /agent/run-counts`) is the oracle every storage adapter's list query is
 * compared against.
 *
 * Decisions (docs/decisions.md, "Run list"):
 * - An empty value is a 400 for every parameter except `q` (empty = no search), `cursor`
 *   (empty = first page) and a metadata value (matches an empty value).
 * - `created_after`, `created_before`, `updated_after` are strict RFC 3339 date-times (a date
 *   alone, or no offset, is a 400) and exclusive bounds; finer than a millisecond they round
 *   outwards (after: down, before: up) to the millisecond times runs carry. A leap second `:60`
 *   counts as the next second. A range that selects nothing (after ≥ before) is not an error.
 * - `skill` and `skill_spec` may both be given only with the same value.
 * - `q` is lowercased (JavaScript `toLowerCase`) and split on whitespace into terms. A run's
 *   relevance is 1 when every term is a substring of its title, its prompt or its skill spec (the
 *   exact match), else the greatest trigram similarity (`Trigram.similarity`, pg_trgm's) of the
 *   terms joined by spaces to its title, its prompt or its skill spec. A run matches when its
 *   relevance is at least `Trigram.SIMILARITY_THRESHOLD` (0.3).
 * - `q` without `sort_by` sorts by relevance (`sort_by` "relevance", internal: the API's
 *   `sort_by` has no such value), most relevant first unless `sort_order=asc`; ties by `run_id` in
 *   the same direction. With `sort_by`, `q` only filters and the runs come in that sort.
 * - Text sorts (`title`, `agent`) compare Unicode code points (UTF-8 byte order: SQLite BINARY,
 *   PostgreSQL `COLLATE "C"`), case-sensitively. `agent` sorts by the skill's name. Runs without
 *   a title, or without a skill, come last in both orders.
 * - Ties of the sort key are broken by `run_id` in the same direction as the sort.
 * - Times of a `RunListRow` are epoch milliseconds.
 * - `GET /agent/run-counts` takes the list's filters (validated alike) and ignores its paging and
 *   sort parameters (`limit`, `cursor`, `sort_by`, `sort_order`), as it ignores unknown ones.
 */
import { Either, Schema } from "effect"
import { decodeKeysetCursor, encodeKeysetCursor, fingerprint, type CursorKey } from "./Cursor.js"
import { FeatureNotAvailable, InvalidRequest } from "./Errors.js"
import { EMPTY_ENVIRONMENT, EnvironmentUid, RunId, ScheduleId } from "./Ids.js"
import { ArtifactType, RunExecutionLocation, RunSourceType, RunState } from "./RunState.js"
import { SIMILARITY_THRESHOLD, similarityOfSets, trigrams } from "./Trigram.js"

/** What a list can be sorted by. */
export const RunSortBy = Schema.Literal("updated_at", "created_at", "title", "agent")
export type RunSortBy = typeof RunSortBy.Type

/** How a list is ordered: a `sort_by` of the API, or by relevance (`q` without `sort_by`). */
export type RunListSort = RunSortBy | "relevance"

/** The direction of a sort. */
export const SortOrder = Schema.Literal("asc", "desc")
export type SortOrder = typeof SortOrder.Type

/** Page size bounds of the run list. */
export const RUN_LIST_LIMIT = { min: 1, max: 500, default: 20 } as const

/** At most this many `metadata[<key>]` filters per request. */
export const MAX_METADATA_FILTERS = 5

/** The environment filter: runs with no environment, or runs in one environment. */
export type EnvironmentFilter =
  | { readonly _tag: "NoEnvironment" }
  | { readonly _tag: "Environment"; readonly uid: EnvironmentUid }

/** Every filter of the run list; an absent property (or empty array) filters nothing. */
export interface RunListFilters {
  /** Any of these states; sorted and without duplicates. */
  readonly states: ReadonlyArray<RunState>
  readonly name?: string
  readonly model_id?: string
  readonly creator?: string
  readonly executor?: string
  readonly source?: RunSourceType
  readonly execution_location?: RunExecutionLocation
  /** Exclusive lower bound of `created_at`, epoch millis. */
  readonly created_after?: number
  /** Exclusive upper bound of `created_at`, epoch millis. */
  readonly created_before?: number
  /** Exclusive lower bound of `updated_at`, epoch millis. */
  readonly updated_after?: number
  readonly environment?: EnvironmentFilter
  readonly skill_spec?: string
  readonly schedule_id?: ScheduleId
  readonly ancestor_run_id?: RunId
  /** Every pair must be present (AND); sorted by key, keys distinct, at most 5. */
  readonly metadata: ReadonlyArray<readonly [key: string, value: string]>
  readonly artifact_type?: ArtifactType
  /** Search terms, lowercased, sorted and without duplicates; empty = no search. */
  readonly q: ReadonlyArray<string>
}

/** Where the previous page ended: the sort key value of its last row and that row's id. */
export interface RunListCursor {
  readonly key: CursorKey
  readonly run_id: RunId
}

/** One validated `GET /agent/runs` query. */
export interface RunListQuery {
  readonly limit: number
  readonly sort_by: RunListSort
  readonly sort_order: SortOrder
  readonly filters: RunListFilters
  /** Absent on the first page. */
  readonly cursor?: RunListCursor
}

/** The raw query string: a key given once is a string, a repeated key an array. */
export type RunListQueryParams = Readonly<Record<string, string | ReadonlyArray<string>>>

/**
 * Builds the raw parameter record from the decoded pairs of a query string (a `URLSearchParams`
 * is such an iterable). Keys keep their text, e.g. `metadata[team]`.
 */
export const queryParamsFromSearchParams = (entries: Iterable<readonly [string, string]>): RunListQueryParams => {
  const out = new Map<string, Array<string>>()
  for (const [k, v] of entries) {
    const seen = out.get(k)
    if (seen === undefined) out.set(k, [v])
    else seen.push(v)
  }
  const record: Record<string, string | ReadonlyArray<string>> = Object.create(null)
  for (const [k, vs] of out) record[k] = vs.length === 1 ? vs[0]! : vs
  return record
}

// ---------------------------------------------------------------------------------------------
// Parsing

const STRING_FILTERS = ["name", "model_id", "creator", "executor"] as const
const TIME_FILTERS = ["created_after", "created_before", "updated_after"] as const
const KNOWN = new Set<string>([
  "limit",
  "cursor",
  "sort_by",
  "sort_order",
  "state",
  ...STRING_FILTERS,
  "source",
  "execution_location",
  ...TIME_FILTERS,
  "environment_id",
  "skill",
  "skill_spec",
  "schedule_id",
  "ancestor_run_id",
  "artifact_type",
  "q"
])
const METADATA_PARAM = /^metadata\[(.*)\]$/s

const shown = (s: string): string => JSON.stringify(s.length > 80 ? `${s.slice(0, 80)}…` : s)

const fail = (field: string, problem: string) => Either.left(InvalidRequest.forField(field, problem))

const valuesOf = (raw: unknown): ReadonlyArray<string> =>
  typeof raw === "string" ? [raw] : Array.isArray(raw) ? raw.map((v) => (typeof v === "string" ? v : String(v))) : []

const oneOf = <const L extends ReadonlyArray<string>>(
  field: string,
  allowed: L,
  value: string
): Either.Either<L[number], InvalidRequest> =>
  allowed.includes(value)
    ? Either.right(value as L[number])
    : fail(field, `must be one of ${allowed.join(", ")}; got ${shown(value)}`)

const decodeId = <A>(
  field: string,
  schema: Schema.Schema<A, string>,
  value: string,
  what: string
): Either.Either<A, InvalidRequest> =>
  Either.mapLeft(Schema.decodeEither(schema)(value), () =>
    InvalidRequest.forField(field, `must be ${what}; got ${shown(value)}`)
  )

const isRunId = Schema.is(RunId)

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/

/** Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
const daysFromCivil = (y: number, m: number, d: number): number => {
  const yy = m <= 2 ? y - 1 : y
  const era = Math.floor(yy / 400)
  const yoe = yy - era * 400
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
}

const daysInMonth = (y: number, m: number): number =>
  m === 2 ? (y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0) ? 29 : 28) : [4, 6, 9, 11].includes(m) ? 30 : 31

/**
 * Parses a strict RFC 3339 date-time (`2026-11-22T03:17:28.123Z`, `2026-11-22T04:17:28+01:00`)
 * to epoch millis, rounding a finer fraction down (`"floor"`) or up (`"ceil"`). Undefined when
 * the text is not one.
 */
export const parseRfc3339Millis = (text: string, rounding: "floor" | "ceil"): number | undefined => {
  const m = RFC3339.exec(text)
  if (m === null) return undefined
  const [, ys, mos, ds, hs, mis, ss, frac, z, sign, ohs, oms] = m
  const [y, mo, d, h, mi, s] = [ys, mos, ds, hs, mis, ss].map(Number) as [number, number, number, number, number, number]
  if (mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo) || h > 23 || mi > 59 || s > 60) return undefined
  let offsetMinutes = 0
  if (z === undefined) {
    const [oh, om] = [Number(ohs), Number(oms)]
    if (oh > 23 || om > 59) return undefined
    offsetMinutes = (sign === "-" ? -1 : 1) * (oh * 60 + om)
  }
  const digits = frac ?? ""
  const millis = Number(digits.slice(0, 3).padEnd(3, "0"))
  const finer = /[1-9]/.test(digits.slice(3)) && rounding === "ceil" ? 1 : 0
  return (
    ((daysFromCivil(y, mo, d) * 24 + h) * 60 + mi - offsetMinutes) * 60_000 + s * 1000 + millis + finer
  )
}

const parseTime = (field: (typeof TIME_FILTERS)[number], value: string): Either.Either<number, InvalidRequest> => {
  const millis = parseRfc3339Millis(value, field === "created_before" ? "ceil" : "floor")
  if (millis !== undefined) return Either.right(millis)
  const hint = /^\d{4}-\d{2}-\d{2}[Tt][\d:.]+ \d{2}:\d{2}$/.test(value)
    ? " (a '+' in a query string must be sent as %2B)"
    : ""
  return fail(field, `must be an RFC 3339 date-time such as 2026-11-22T03:17:28Z; got ${shown(value)}${hint}`)
}

const parseLimit = (value: string | undefined): Either.Either<number, InvalidRequest> => {
  if (value === undefined) return Either.right(RUN_LIST_LIMIT.default)
  const n = /^[0-9]{1,6}$/.test(value) ? Number(value) : NaN
  return n >= RUN_LIST_LIMIT.min && n <= RUN_LIST_LIMIT.max
    ? Either.right(n)
    : fail("limit", `must be an integer from ${RUN_LIST_LIMIT.min} to ${RUN_LIST_LIMIT.max}; got ${shown(value)}`)
}

/**
 * Parses and validates the query of `GET /agent/runs`. Unknown parameters are ignored; every
 * error is an `InvalidRequest` whose `field` names the parameter (`metadata[<key>]` for one
 * metadata pair, `metadata` for the set of them).
 */
export const parseRunListQuery = (params: RunListQueryParams): Either.Either<RunListQuery, InvalidRequest> =>
  Either.gen(function* () {
    const known = new Map<string, ReadonlyArray<string>>()
    const metadataParams: Array<readonly [param: string, key: string, values: ReadonlyArray<string>]> = []
    for (const param of Object.keys(params)) {
      const values = valuesOf(params[param])
      if (values.length === 0) continue
      if (KNOWN.has(param)) known.set(param, values)
      else if (param === "metadata") yield* fail("metadata", "use one metadata[<key>]=<value> per pair")
      else {
        const key = METADATA_PARAM.exec(param)?.[1]
        if (key !== undefined) metadataParams.push([param, key, values])
      }
    }

    /** The one value of a parameter that may not repeat, or undefined when absent. */
    const single = (name: string) =>
      Either.gen(function* () {
        const values = known.get(name) ?? []
        if (values.length > 1) yield* fail(name, "given more than once; only state may repeat")
        const value = values[0]
        if (value === "" && name !== "cursor" && name !== "q") yield* fail(name, "must not be empty")
        return value === "" && name === "cursor" ? undefined : value
      })

    const limit = yield* parseLimit(yield* single("limit"))
    const sortBy = yield* single("sort_by")
    const explicitSort = sortBy === undefined ? undefined : yield* oneOf("sort_by", RunSortBy.literals, sortBy)
    const sortOrder = yield* single("sort_order")
    const sort_order = sortOrder === undefined ? "desc" : yield* oneOf("sort_order", SortOrder.literals, sortOrder)

    const states = new Set<RunState>()
    for (const value of known.get("state") ?? []) states.add(yield* oneOf("state", RunState.literals, value))

    const filters: { -readonly [K in keyof RunListFilters]: RunListFilters[K] } = {
      states: RunState.literals.filter((s) => states.has(s)).sort(),
      metadata: [],
      q: []
    }
    for (const field of STRING_FILTERS) {
      const value = yield* single(field)
      if (value !== undefined) filters[field] = value
    }
    const source = yield* single("source")
    if (source !== undefined) filters.source = yield* oneOf("source", RunSourceType.literals, source)
    const location = yield* single("execution_location")
    if (location !== undefined) {
      filters.execution_location = yield* oneOf("execution_location", RunExecutionLocation.literals, location)
    }
    for (const field of TIME_FILTERS) {
      const value = yield* single(field)
      if (value !== undefined) filters[field] = yield* parseTime(field, value)
    }
    const environment = yield* single("environment_id")
    if (environment !== undefined) {
      filters.environment =
        environment === EMPTY_ENVIRONMENT
          ? { _tag: "NoEnvironment" }
          : {
              _tag: "Environment",
              uid: yield* decodeId(
                "environment_id",
                EnvironmentUid,
                environment,
                `an environment uid (22 characters of [A-Za-z0-9]) or "${EMPTY_ENVIRONMENT}"`
              )
            }
    }
    const skill = yield* single("skill")
    const skillSpec = yield* single("skill_spec")
    if (skill !== undefined && skillSpec !== undefined && skill !== skillSpec) {
      yield* fail("skill", "skill is an alias of skill_spec; give one, or both with the same value")
    }
    const spec = skill ?? skillSpec
    if (spec !== undefined) filters.skill_spec = spec
    const schedule = yield* single("schedule_id")
    if (schedule !== undefined) {
      filters.schedule_id = yield* decodeId("schedule_id", ScheduleId, schedule, "a schedule id (22 characters of [A-Za-z0-9])")
    }
    const ancestor = yield* single("ancestor_run_id")
    if (ancestor !== undefined) {
      filters.ancestor_run_id = yield* decodeId("ancestor_run_id", RunId, ancestor, "a run id (a lowercase UUIDv7)")
    }
    const artifact = yield* single("artifact_type")
    if (artifact !== undefined) filters.artifact_type = yield* oneOf("artifact_type", ArtifactType.literals, artifact)
    const q = yield* single("q")
    if (q !== undefined) filters.q = [...new Set(q.trim().toLowerCase().split(/\s+/).filter((t) => t !== ""))].sort()

    for (const [param, key, values] of metadataParams) {
      if (key === "") yield* fail("metadata", "a metadata key must not be empty: metadata[<key>]=<value>")
      if (values.length > 1) yield* fail(param, "given more than once")
    }
    if (metadataParams.length > MAX_METADATA_FILTERS) {
      yield* fail("metadata", `at most ${MAX_METADATA_FILTERS} metadata[<key>] filters; got ${metadataParams.length}`)
    }
    filters.metadata = metadataParams
      .map(([, key, values]) => [key, values[0]!] as const)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))

    const sort_by: RunListSort = explicitSort ?? (filters.q.length > 0 ? "relevance" : "updated_at")
    const query: RunListQuery = { limit, sort_by, sort_order, filters }
    const cursor = yield* single("cursor")
    if (cursor === undefined) return query
    const position = yield* Either.mapLeft(decodeKeysetCursor(cursor, queryFingerprint(query)), (problem) =>
      InvalidRequest.forField("cursor", problem)
    )
    const numericSort = sort_by === "created_at" || sort_by === "updated_at" || sort_by === "relevance"
    if (!isRunId(position.id) || numericSort !== (typeof position.key === "number")) {
      yield* fail("cursor", "malformed cursor; pass next_cursor from the previous page unchanged")
    }
    return { ...query, cursor: { key: position.key, run_id: position.id as RunId } }
  })

/** The parameters of the run list that page and order it; the run counts ignore them (and do not document them). */
export const PAGING_PARAMS = ["limit", "cursor", "sort_by", "sort_order"] as const

const isPagingParam = (param: string): boolean => (PAGING_PARAMS as ReadonlyArray<string>).includes(param)

/**
 * Parses and validates the query of `GET /agent/run-counts`: the run list's filters, validated
 * as `parseRunListQuery` does; its paging and sort parameters are ignored, as unknown ones are.
 */
export const parseRunCountQuery = (params: RunListQueryParams): Either.Either<RunListQuery, InvalidRequest> =>
  parseRunListQuery(Object.fromEntries(Object.entries(params).filter(([param]) => !isPagingParam(param))))

/**
 * The fingerprint of a query's sort and filters (not its limit or cursor): equal for queries
 * that select and order the same runs, whatever the order of their parameters.
 */
export const queryFingerprint = (query: RunListQuery): string => {
  const f = query.filters
  return fingerprint({
    sort_by: query.sort_by,
    sort_order: query.sort_order,
    ...f,
    environment: f.environment === undefined ? undefined : f.environment._tag === "NoEnvironment" ? null : f.environment.uid,
    states: [...new Set(f.states)].sort(),
    metadata: [...f.metadata].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    q: [...new Set(f.q)].sort()
  })
}

/** Fails with FeatureNotAvailable when the query filters on metadata and the team lacks the feature. */
export const requireRunListFeatures = (
  query: RunListQuery,
  features: { readonly metadata_filtering: boolean }
): Either.Either<RunListQuery, FeatureNotAvailable> =>
  query.filters.metadata.length > 0 && !features.metadata_filtering
    ? Either.left(
        new FeatureNotAvailable({
          feature: "metadata_filtering",
          message: "metadata filtering is not enabled for this team"
        })
      )
    : Either.right(query)

// ---------------------------------------------------------------------------------------------
// The reference evaluator

/**
 * The fields of a run that the list query reads, with the snake_case names of RunItem
 * (docs/reference/api.md). Times are epoch milliseconds.
 */
export interface RunListRow {
  readonly run_id: string
  readonly title: string | null
  readonly prompt: string
  readonly state: RunState
  readonly created_at: number
  readonly updated_at: number
  readonly agent_config: {
    readonly name?: string | undefined
    readonly model_id?: string | undefined
    readonly environment_id?: string | undefined
    readonly skill_spec?: string | undefined
  }
  readonly agent_skill: { readonly name: string } | null
  readonly creator: { readonly uid: string }
  readonly executor: { readonly uid: string }
  readonly source: RunSourceType
  readonly execution_location: RunExecutionLocation
  readonly environment_id: string | null
  readonly schedule: { readonly schedule_id: string } | null
  readonly ancestor_run_ids: ReadonlyArray<string>
  readonly metadata: Readonly<Record<string, string>>
  readonly artifacts: ReadonlyArray<{ readonly artifact_type: ArtifactType }>
}

/** The fields a row needs to be sorted and to make a cursor. */
export type SortableRunRow = Pick<
  RunListRow,
  "run_id" | "title" | "prompt" | "created_at" | "updated_at" | "agent_skill" | "agent_config"
>

/** Whether a run passes every filter of the query (the cursor is not a filter: see `pageOf`). */
export const matchesRunListQuery = (row: RunListRow, query: RunListQuery): boolean => {
  const f = query.filters
  const config = row.agent_config
  if (f.states.length > 0 && !f.states.includes(row.state)) return false
  if (f.name !== undefined && config.name !== f.name) return false
  if (f.model_id !== undefined && config.model_id !== f.model_id) return false
  if (f.creator !== undefined && row.creator.uid !== f.creator) return false
  if (f.executor !== undefined && row.executor.uid !== f.executor) return false
  if (f.source !== undefined && row.source !== f.source) return false
  if (f.execution_location !== undefined && row.execution_location !== f.execution_location) return false
  if (f.created_after !== undefined && !(row.created_at > f.created_after)) return false
  if (f.created_before !== undefined && !(row.created_at < f.created_before)) return false
  if (f.updated_after !== undefined && !(row.updated_at > f.updated_after)) return false
  if (f.environment !== undefined) {
    const wanted = f.environment._tag === "NoEnvironment" ? null : f.environment.uid
    if (row.environment_id !== wanted) return false
  }
  if (f.skill_spec !== undefined && config.skill_spec !== f.skill_spec) return false
  if (f.schedule_id !== undefined && row.schedule?.schedule_id !== f.schedule_id) return false
  if (f.ancestor_run_id !== undefined && !row.ancestor_run_ids.includes(f.ancestor_run_id)) return false
  for (const [key, value] of f.metadata) {
    if (!Object.hasOwn(row.metadata, key) || row.metadata[key] !== value) return false
  }
  if (f.artifact_type !== undefined && !row.artifacts.some((a) => a.artifact_type === f.artifact_type)) return false
  if (f.q.length > 0 && relevanceKey(row, f.q) < RELEVANCE_THRESHOLD_KEY) return false
  return true
}

// ---------------------------------------------------------------------------------------------
// Relevance

/**
 * Relevance as an integer sort key: the relevance times 2^25. Exact for every relevance at or
 * above 0.25 (single precision has 24 bits of mantissa), so it is the same number in every store
 * and in a cursor; below the threshold it only needs to stay below `RELEVANCE_THRESHOLD_KEY`.
 */
export const RELEVANCE_SCALE = 2 ** 25

/** The least relevance key of a match: relevance ≥ 0.3 exactly when key ≥ this. */
export const RELEVANCE_THRESHOLD_KEY = Math.ceil(SIMILARITY_THRESHOLD * RELEVANCE_SCALE)

/** The text a search's similarity is measured with: its terms joined by spaces. */
export const searchQueryText = (q: ReadonlyArray<string>): string => q.join(" ")

/** The fields a run is searched in, lowercased: title, prompt, skill spec (empty when absent). */
export const searchFields = (
  row: Pick<RunListRow, "title" | "prompt"> & { readonly agent_config: { readonly skill_spec?: string | undefined } }
): readonly [string, string, string] => [
  (row.title ?? "").toLowerCase(),
  row.prompt.toLowerCase(),
  (row.agent_config.skill_spec ?? "").toLowerCase()
]

/**
 * The relevance key of lowercased search fields for the search terms `q` (non-empty):
 * `RELEVANCE_SCALE` for an exact match (every term a substring of a field), else the greatest
 * similarity of the query text to a field, scaled.
 */
export const relevanceKeyOfFields = (fields: ReadonlyArray<string>, q: ReadonlyArray<string>): number => {
  if (q.every((term) => fields.some((field) => field.includes(term)))) return RELEVANCE_SCALE
  const wanted = trigrams(searchQueryText(q))
  let best = 0
  for (const field of fields) best = Math.max(best, similarityOfSets(wanted, trigrams(field)))
  return Math.floor(best * RELEVANCE_SCALE)
}

/** The relevance key of a run for the search terms `q` (non-empty). */
export const relevanceKey = (row: Pick<RunListRow, "title" | "prompt" | "agent_config">, q: ReadonlyArray<string>): number =>
  relevanceKeyOfFields(searchFields(row), q)

/** What orders a list: the sort, its direction, and the search terms (for relevance). */
export interface SortOf {
  readonly sort_by: RunListSort
  readonly sort_order: SortOrder
  readonly filters?: Pick<RunListFilters, "q">
}

/**
 * The value a run is sorted by: epoch millis for time sorts, the title or skill name (or null),
 * the relevance key for the query's search terms.
 */
export const sortKeyOf = (row: SortableRunRow, query: SortOf): CursorKey => {
  switch (query.sort_by) {
    case "relevance":
      return relevanceKey(row, query.filters?.q ?? [])
    case "created_at":
      return row.created_at
    case "updated_at":
      return row.updated_at
    case "title":
      return row.title
    case "agent":
      return row.agent_skill?.name ?? null
  }
}

// UTF-16 code units sort like code points except that surrogates (U+D800–U+DFFF) must come after
// U+E000–U+FFFF: shift them up and the rest down (the usual fix-up).
const codePointRank = (unit: number): number =>
  unit >= 0xd800 ? (unit <= 0xdfff ? unit + 0x2000 : unit - 0x800) : unit

/** Compares two strings by Unicode code points (= UTF-8 byte order). */
export const compareCodePoints = (a: string, b: string): number => {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x !== y) return codePointRank(x) < codePointRank(y) ? -1 : 1
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1
}

/** Compares two non-null keys of one sort in ascending order. */
const compareKeysAsc = (a: number | string, b: number | string): number =>
  typeof a === "number" && typeof b === "number"
    ? a === b ? 0 : a < b ? -1 : 1
    : compareCodePoints(String(a), String(b))

/**
 * Compares two positions (key, run id) in the order of the query. A null key (no title, no
 * skill) comes after every other key in both directions.
 */
export const comparePositions = (
  query: Pick<SortOf, "sort_order">,
  a: CursorKey,
  aId: string,
  b: CursorKey,
  bId: string
): number => {
  const direction = query.sort_order === "asc" ? 1 : -1
  if ((a === null) !== (b === null)) return a === null ? 1 : -1
  const byKey = a === null || b === null ? 0 : compareKeysAsc(a, b)
  if (byKey !== 0) return direction * byKey
  return aId === bId ? 0 : direction * (aId < bId ? -1 : 1)
}

/** The total order of a query's results: the sort key in the requested order, then run_id likewise. */
export const compareRunsForQuery =
  (query: SortOf) =>
  (a: SortableRunRow, b: SortableRunRow): number =>
    comparePositions(query, sortKeyOf(a, query), a.run_id, sortKeyOf(b, query), b.run_id)

/** Whether a run comes strictly after the query's cursor (always, on the first page). */
export const isAfterCursor = (row: SortableRunRow, query: RunListQuery): boolean =>
  query.cursor === undefined ||
  comparePositions(query, sortKeyOf(row, query), row.run_id, query.cursor.key, query.cursor.run_id) > 0

/** The cursor of the page that follows `lastRow` (the last row of the current page). */
export const encodeCursor = (query: RunListQuery, lastRow: SortableRunRow): string =>
  encodeKeysetCursor({ key: sortKeyOf(lastRow, query), id: lastRow.run_id }, queryFingerprint(query))

/**
 * The rows after the query's cursor, in the query's order (each row's sort key computed once:
 * relevance is not cheap). The rows must match the query's filters already.
 */
export const orderByQuery = <R extends SortableRunRow>(rows: ReadonlyArray<R>, query: RunListQuery): Array<R> =>
  rows
    .map((row) => ({ row, key: sortKeyOf(row, query) }))
    .filter(({ key, row }) =>
      query.cursor === undefined || comparePositions(query, key, row.run_id, query.cursor.key, query.cursor.run_id) > 0
    )
    .sort((a, b) => comparePositions(query, a.key, a.row.run_id, b.key, b.row.run_id))
    .map(({ row }) => row)

/** `page_info` of a list response. */
export interface PageInfo {
  readonly has_next_page: boolean
  readonly next_cursor?: string
}

/** One page of runs. */
export interface RunListPage<R> {
  readonly rows: ReadonlyArray<R>
  readonly page_info: PageInfo
}

/** How many runs are in each state: every state, zeros included. */
export type RunStateCounts = { readonly [S in RunState]: number }

/** Counts of every state, all zero but those in `counted`. */
export const stateCounts = (counted: Iterable<readonly [RunState, number]> = []): RunStateCounts => {
  const counts = Object.fromEntries(RunState.literals.map((state) => [state, 0])) as Record<RunState, number>
  for (const [state, n] of counted) counts[state] += n
  return counts
}

/**
 * The reference count of `GET /agent/run-counts`: how many rows pass the query's filters, by
 * state (its sort, limit and cursor play no part). The oracle storage adapters are compared against.
 */
export const stateCountsOf = (rows: ReadonlyArray<RunListRow>, query: RunListQuery): RunStateCounts =>
  stateCounts(rows.filter((row) => matchesRunListQuery(row, query)).map((row) => [row.state, 1] as const))

/**
 * The reference list query: filter, order, skip to after the cursor, take `limit`. The oracle
 * storage adapters are compared against.
 */
export const pageOf = <R extends RunListRow>(rows: ReadonlyArray<R>, query: RunListQuery): RunListPage<R> => {
  const selected = orderByQuery(
    rows.filter((row) => matchesRunListQuery(row, query)),
    query
  )
  const page = selected.slice(0, query.limit)
  const last = page[page.length - 1]
  return selected.length > query.limit && last !== undefined
    ? { rows: page, page_info: { has_next_page: true, next_cursor: encodeCursor(query, last) } }
    : { rows: page, page_info: { has_next_page: false } }
}
