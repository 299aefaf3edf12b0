import { describe, expect, it } from "@effect/vitest"
import { Either, Encoding } from "effect"
import * as fc from "fast-check"
import { canonicalJson, decodeKeysetCursor, encodeKeysetCursor, fingerprint, fnv1a64 } from "../src/domain/Cursor.js"
import { FeatureNotAvailable, InvalidRequest } from "../src/domain/Errors.js"
import { formatUuidV7 } from "../src/domain/Ids.js"
import {
  compareCodePoints,
  compareRunsForQuery,
  encodeCursor,
  matchesRunListQuery,
  pageOf,
  parseRfc3339Millis,
  parseRunListQuery,
  queryFingerprint,
  queryParamsFromSearchParams,
  requireRunListFeatures,
  type RunListQuery,
  type RunListQueryParams,
  type RunListRow,
  type RunSortBy,
  type SortOrder
} from "../src/domain/RunQuery.js"
import { ArtifactType, RunExecutionLocation, RunState, type RunSourceType } from "../src/domain/RunState.js"

// ---------------------------------------------------------------------------------------------
// Helpers

const ENV = "EnvAAAAAAAAAAAAAAAAAAA"
const ENV2 = "EnvBBBBBBBBBBBBBBBBBBB"
const SCHEDULE = "SchedAAAAAAAAAAAAAAAAA"
const runId = (n: number) => formatUuidV7(1_700_000_000_000 + n, new Uint8Array(10))
const ANCESTOR = runId(999_999)

const parse = (params: RunListQueryParams) => parseRunListQuery(params)

const ok = (params: RunListQueryParams): RunListQuery => {
  const result = parse(params)
  if (Either.isLeft(result)) throw new Error(`expected a valid query, got ${result.left.message}`)
  return result.right
}

/** Asserts a 400 naming `field`, in `field` and in the message. */
const rejects = (params: RunListQueryParams, field: string, messagePart?: string) => {
  const result = parse(params)
  expect(Either.isLeft(result), `expected ${JSON.stringify(params)} to be rejected`).toBe(true)
  if (Either.isRight(result)) return
  expect(result.left).toBeInstanceOf(InvalidRequest)
  expect(result.left.field).toBe(field)
  expect(result.left.message.startsWith(`${field}: `)).toBe(true)
  expect(result.left.errorCode).toBe("invalid_request")
  if (messagePart !== undefined) expect(result.left.message).toContain(messagePart)
}

const baseRow: RunListRow = {
  run_id: runId(1),
  title: "Fix the flaky test",
  prompt: "Please fix the FLAKY login test",
  state: "QUEUED",
  created_at: 1_000,
  updated_at: 2_000,
  agent_config: { name: "fixer", model_id: "model-a", environment_id: ENV, skill_spec: "acme/tools:skills/fix/SKILL.md" },
  agent_skill: { name: "fix" },
  creator: { uid: "UserAAAAAAAAAAAAAAAAAA" },
  executor: { uid: "UserBBBBBBBBBBBBBBBBBB" },
  source: "API",
  execution_location: "REMOTE",
  environment_id: ENV,
  schedule: { schedule_id: SCHEDULE },
  ancestor_run_ids: [ANCESTOR],
  metadata: { team: "core", prio: "high" },
  artifacts: [{ artifact_type: "PULL_REQUEST" }]
}
const row = (overrides: Partial<RunListRow>): RunListRow => ({ ...baseRow, ...overrides })
const matches = (r: RunListRow, params: RunListQueryParams) => matchesRunListQuery(r, ok(params))

const SORTS: ReadonlyArray<RunSortBy> = ["updated_at", "created_at", "title", "agent"]
const ORDERS: ReadonlyArray<SortOrder> = ["asc", "desc"]

// An independent statement of the order, to check pageOf against: (null last, key, run_id).
const codePoints = (s: string) => Array.from(s, (c) => c.codePointAt(0)!)
const lexicographic = (a: ReadonlyArray<number>, b: ReadonlyArray<number>): number => {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!
  return a.length - b.length
}
const expectedOrder = (sortBy: RunSortBy, order: SortOrder) => (a: RunListRow, b: RunListRow): number => {
  const key = (r: RunListRow) =>
    sortBy === "created_at" ? r.created_at : sortBy === "updated_at" ? r.updated_at : sortBy === "title" ? r.title : (r.agent_skill?.name ?? null)
  const [ka, kb] = [key(a), key(b)]
  if (ka === null && kb !== null) return 1
  if (kb === null && ka !== null) return -1
  const sign = order === "asc" ? 1 : -1
  let c = 0
  if (typeof ka === "number" && typeof kb === "number") c = ka - kb
  else if (typeof ka === "string" && typeof kb === "string") c = lexicographic(codePoints(ka), codePoints(kb))
  if (c !== 0) return sign * c
  return sign * (a.run_id < b.run_id ? -1 : a.run_id > b.run_id ? 1 : 0)
}

// Small value domains so that filters match often and sort keys tie a lot.
const rowArb: fc.Arbitrary<RunListRow> = fc.record({
  run_id: fc.integer({ min: 0, max: 1_000_000 }).map(runId),
  title: fc.option(fc.constantFrom("alpha", "Alpha", "beta", "", "ünï", "😀x", "\uE000", "Zeta"), { nil: null }),
  prompt: fc.constantFrom("fix the bug", "Write DOCS", "refactor"),
  state: fc.constantFrom(...RunState.literals),
  created_at: fc.integer({ min: 0, max: 5 }),
  updated_at: fc.integer({ min: 0, max: 5 }),
  agent_config: fc.record(
    { name: fc.constantFrom("a", "b"), model_id: fc.constantFrom("m1", "m2"), skill_spec: fc.constantFrom("o/r:x", "o/r:y") },
    { requiredKeys: [] }
  ),
  agent_skill: fc.option(fc.record({ name: fc.constantFrom("deploy", "Deploy", "review", "é") }), { nil: null }),
  creator: fc.record({ uid: fc.constantFrom("u1", "u2") }),
  executor: fc.record({ uid: fc.constantFrom("u1", "u2") }),
  source: fc.constantFrom<RunSourceType>("API", "WEBHOOK"),
  execution_location: fc.constantFrom(...RunExecutionLocation.literals),
  environment_id: fc.option(fc.constant(ENV), { nil: null }),
  schedule: fc.option(fc.constant({ schedule_id: SCHEDULE }), { nil: null }),
  ancestor_run_ids: fc.constantFrom([], [ANCESTOR]),
  metadata: fc.dictionary(fc.constantFrom("team", "prio"), fc.constantFrom("core", "web")),
  artifacts: fc.array(fc.record({ artifact_type: fc.constantFrom(...ArtifactType.literals) }), { maxLength: 2 })
})
const rowsArb = (maxLength: number) => fc.uniqueArray(rowArb, { selector: (r) => r.run_id, maxLength, size: "max" })

/** Up to two filter parameters drawn from the same small domains, so that many rows still match. */
const filterParamsArb: fc.Arbitrary<Record<string, string | ReadonlyArray<string>>> = fc
  .tuple(
    fc.record({
      state: fc.subarray([...RunState.literals], { minLength: 3 }),
      name: fc.constantFrom("a", "b"),
      source: fc.constantFrom("API", "WEBHOOK"),
      environment_id: fc.constantFrom(ENV, "empty-environment"),
      "metadata[team]": fc.constantFrom("core", "web"),
      artifact_type: fc.constantFrom(...ArtifactType.literals),
      q: fc.constantFrom("fix", "DOCS", "alpha", "o/r:x")
    }),
    fc.subarray(["state", "name", "source", "environment_id", "metadata[team]", "artifact_type", "q"] as const, { maxLength: 2 })
  )
  .map(([all, chosen]) => Object.fromEntries(chosen.map((k) => [k, all[k]])))

/** Follows next_cursor through the parser until the last page, as a client would. */
const pageThrough = (
  params: RunListQueryParams,
  rowsAt: (pageIndex: number) => ReadonlyArray<RunListRow>
): Array<RunListRow> => {
  const seen: Array<RunListRow> = []
  let query = ok(params)
  for (let i = 0; ; i++) {
    if (i > 1_000) throw new Error("paging does not end")
    const page = pageOf(rowsAt(i), query)
    expect(page.rows.length).toBeLessThanOrEqual(query.limit)
    seen.push(...page.rows)
    if (!page.page_info.has_next_page) {
      expect(page.page_info.next_cursor).toBeUndefined()
      return seen
    }
    expect(page.rows.length).toBe(query.limit)
    query = ok({ ...params, cursor: page.page_info.next_cursor! })
  }
}

// ---------------------------------------------------------------------------------------------

describe("RunQuery: parsing", () => {
  it("has the documented defaults", () => {
    const q = ok({})
    expect(q).toEqual({
      limit: 20,
      sort_by: "updated_at",
      sort_order: "desc",
      filters: { states: [], metadata: [], q: [] }
    })
    expect(q.cursor).toBeUndefined()
  })

  it("q without sort_by sorts by relevance, most relevant first; with sort_by, q only filters", () => {
    expect(ok({ q: "flaky" })).toMatchObject({ sort_by: "relevance", sort_order: "desc" })
    expect(ok({ q: "flaky", sort_order: "asc" })).toMatchObject({ sort_by: "relevance", sort_order: "asc" })
    expect(ok({ q: "flaky", sort_by: "created_at" }).sort_by).toBe("created_at")
    expect(ok({ q: " " }).sort_by).toBe("updated_at")
    rejects({ q: "flaky", sort_by: "relevance" }, "sort_by")
  })

  it("limit: integers 1 to 500, anything else names limit", () => {
    expect(ok({ limit: "1" }).limit).toBe(1)
    expect(ok({ limit: "500" }).limit).toBe(500)
    expect(ok({ limit: "020" }).limit).toBe(20)
    for (const bad of ["0", "501", "1.5", "-1", "abc", "1e2", " 5", "", "99999999"]) rejects({ limit: bad }, "limit")
    rejects({ limit: ["5", "6"] }, "limit", "more than once")
  })

  it("sort_by and sort_order take their literals only", () => {
    for (const s of SORTS) expect(ok({ sort_by: s }).sort_by).toBe(s)
    expect(ok({ sort_order: "asc" }).sort_order).toBe("asc")
    expect(ok({ sort_order: "desc" }).sort_order).toBe("desc")
    rejects({ sort_by: "name" }, "sort_by", "updated_at, created_at, title, agent")
    rejects({ sort_by: "UPDATED_AT" }, "sort_by")
    rejects({ sort_order: "ascending" }, "sort_order")
    rejects({ sort_order: ["asc", "asc"] }, "sort_order")
  })

  it("state repeats, is validated each time, sorted and deduplicated", () => {
    expect(ok({ state: "FAILED" }).filters.states).toEqual(["FAILED"])
    expect(ok({ state: ["QUEUED", "FAILED", "QUEUED"] }).filters.states).toEqual(["FAILED", "QUEUED"])
    rejects({ state: ["QUEUED", "queued"] }, "state", '"queued"')
    rejects({ state: "QUEUED,FAILED" }, "state")
    rejects({ state: "" }, "state")
  })

  it("string filters: name, model_id, creator, executor", () => {
    const f = ok({ name: "fixer", model_id: "m", creator: "c", executor: "e" }).filters
    expect([f.name, f.model_id, f.creator, f.executor]).toEqual(["fixer", "m", "c", "e"])
    for (const field of ["name", "model_id", "creator", "executor"]) {
      rejects({ [field]: ["a", "b"] }, field, "more than once")
      rejects({ [field]: "" }, field, "empty")
    }
  })

  it("enum filters: source, execution_location, artifact_type", () => {
    const f = ok({ source: "SCHEDULED_AGENT", execution_location: "LOCAL", artifact_type: "PLAN" }).filters
    expect([f.source, f.execution_location, f.artifact_type]).toEqual(["SCHEDULED_AGENT", "LOCAL", "PLAN"])
    rejects({ source: "EMAIL" }, "source")
    rejects({ execution_location: "remote" }, "execution_location")
    rejects({ artifact_type: "VIDEO" }, "artifact_type")
  })

  it("date-times: strict RFC 3339 with an offset, as epoch millis", () => {
    const at = Date.parse("2026-11-22T03:17:28.123Z")
    expect(ok({ created_after: "2026-11-22T03:17:28.123Z" }).filters.created_after).toBe(at)
    expect(ok({ created_before: "2026-11-22T04:17:28.123+01:00" }).filters.created_before).toBe(at)
    expect(ok({ updated_after: "2026-11-21t21:47:28.123-05:30" }).filters.updated_after).toBe(at)
    expect(ok({ created_after: "2024-02-29T00:00:00z" }).filters.created_after).toBe(Date.parse("2024-02-29T00:00:00Z"))
    for (const field of ["created_after", "created_before", "updated_after"]) {
      for (const bad of [
        "2026-13-01T00:00:00Z",
        "2023-02-29T00:00:00Z",
        "2026-04-31T00:00:00Z",
        "yesterday",
        "2026-11-22",
        "2026-11-22T03:17:28",
        "2026-11-22 03:17:28Z",
        "2026-11-22T24:00:00Z",
        "2026-11-22T03:17:28+24:00",
        "1700000000000",
        ""
      ]) rejects({ [field]: bad }, field)
    }
    // a '+' sent unencoded arrives as a space: the message says what to do
    rejects({ created_after: "2026-11-22T03:17:28 01:00" }, "created_after", "%2B")
  })

  it.prop(
    "date-times: every instant in years 0000 to 9999 parses back to itself, in any offset",
    [
      fc.integer({ min: Date.parse("0000-01-01T00:00:00Z") + 86_400_000, max: Date.parse("9999-12-31T00:00:00Z") }),
      fc.integer({ min: -23 * 60 - 59, max: 23 * 60 + 59 })
    ],
    ([millis, offset]) => {
      expect(parseRfc3339Millis(new Date(millis).toISOString(), "floor")).toBe(millis)
      const local = new Date(millis + offset * 60_000).toISOString().slice(0, -1)
      const abs = Math.abs(offset)
      const suffix = `${offset < 0 ? "-" : "+"}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`
      expect(parseRfc3339Millis(local + suffix, "ceil")).toBe(millis)
    },
    { fastCheck: { numRuns: 200 } }
  )

  it("date-times finer than a millisecond round outwards, so the bounds stay exact", () => {
    const t = Date.parse("2026-01-01T00:00:00Z")
    const fine = "2026-01-01T00:00:00.0005Z"
    expect(ok({ created_after: fine }).filters.created_after).toBe(t)
    expect(ok({ created_before: fine }).filters.created_before).toBe(t + 1)
    expect(ok({ created_before: "2026-01-01T00:00:00.1230000Z" }).filters.created_before).toBe(t + 123)
    expect(matches(row({ created_at: t }), { created_before: fine })).toBe(true)
    expect(matches(row({ created_at: t }), { created_after: fine })).toBe(false)
    expect(matches(row({ created_at: t + 1 }), { created_after: fine })).toBe(true)
    expect(ok({ created_after: "2016-12-31T23:59:60Z" }).filters.created_after).toBe(Date.parse("2017-01-01T00:00:00Z"))
  })

  it("environment_id: an environment uid, or empty-environment for runs without one", () => {
    expect(ok({ environment_id: ENV }).filters.environment).toEqual({ _tag: "Environment", uid: ENV })
    expect(ok({ environment_id: "empty-environment" }).filters.environment).toEqual({ _tag: "NoEnvironment" })
    rejects({ environment_id: "short" }, "environment_id", "empty-environment")
    rejects({ environment_id: [ENV, ENV2] }, "environment_id")
  })

  it("skill is an alias of skill_spec; both only when equal", () => {
    expect(ok({ skill: "o/r:a" }).filters.skill_spec).toBe("o/r:a")
    expect(ok({ skill_spec: "o/r:a" }).filters.skill_spec).toBe("o/r:a")
    expect(ok({ skill: "o/r:a", skill_spec: "o/r:a" }).filters.skill_spec).toBe("o/r:a")
    rejects({ skill: "o/r:a", skill_spec: "o/r:b" }, "skill", "alias")
    rejects({ skill_spec: ["o/r:a", "o/r:b"] }, "skill_spec")
  })

  it("schedule_id and ancestor_run_id are validated ids", () => {
    expect(ok({ schedule_id: SCHEDULE }).filters.schedule_id).toBe(SCHEDULE)
    expect(ok({ ancestor_run_id: ANCESTOR }).filters.ancestor_run_id).toBe(ANCESTOR)
    rejects({ schedule_id: "empty-environment" }, "schedule_id")
    rejects({ schedule_id: "x" }, "schedule_id")
    rejects({ ancestor_run_id: "not-a-run" }, "ancestor_run_id", "UUIDv7")
    rejects({ ancestor_run_id: ANCESTOR.toUpperCase() }, "ancestor_run_id")
  })

  it("metadata: up to 5 distinct keys, AND-combined, sorted by key", () => {
    expect(ok({ "metadata[team]": "core", "metadata[env]": "prod" }).filters.metadata).toEqual([
      ["env", "prod"],
      ["team", "core"]
    ])
    expect(ok({ "metadata[a b]": "" }).filters.metadata).toEqual([["a b", ""]])
    const five = Object.fromEntries([1, 2, 3, 4, 5].map((i) => [`metadata[k${i}]`, "v"]))
    expect(ok(five).filters.metadata).toHaveLength(5)
    rejects({ ...five, "metadata[k6]": "v" }, "metadata", "at most 5")
    rejects({ "metadata[]": "v" }, "metadata", "empty")
    rejects({ "metadata[team]": ["a", "b"] }, "metadata[team]", "more than once")
    rejects({ metadata: "team=core" }, "metadata")
  })

  it("q: trimmed, split into lowercased terms; blank means no search", () => {
    expect(ok({ q: "  Flaky   LOGIN flaky " }).filters.q).toEqual(["flaky", "login"])
    expect(ok({ q: "" }).filters.q).toEqual([])
    expect(ok({ q: "   " }).filters.q).toEqual([])
    rejects({ q: ["a", "b"] }, "q")
  })

  it("ignores unknown parameters and an empty cursor", () => {
    expect(ok({ foo: "bar", "metadata": [], page: ["1", "2"], cursor: "" })).toEqual(ok({}))
  })

  it("builds the parameter record from a URLSearchParams", () => {
    const params = queryParamsFromSearchParams(
      new URLSearchParams("state=QUEUED&state=FAILED&metadata%5Bteam%5D=core&limit=5&q=a+b&__proto__=x")
    )
    expect(params["state"]).toEqual(["QUEUED", "FAILED"])
    expect(params["metadata[team]"]).toBe("core")
    expect(params["__proto__"]).toBe("x")
    const q = ok(params)
    expect(q.limit).toBe(5)
    expect(q.filters.states).toEqual(["FAILED", "QUEUED"])
    expect(q.filters.metadata).toEqual([["team", "core"]])
    expect(q.filters.q).toEqual(["a", "b"])
  })

  it.prop(
    "never throws, and every rejection names a parameter",
    [
      fc.dictionary(
        fc.oneof(
          fc.constantFrom("limit", "cursor", "sort_by", "state", "q", "created_after", "environment_id", "metadata", "metadata[]", "metadata[x]", "skill", "skill_spec"),
          fc.string()
        ),
        fc.oneof(
          fc.string(),
          fc.constantFrom("5", "QUEUED", "asc", "title", "2026-01-01T00:00:00Z", "empty-environment"),
          fc.array(fc.string(), { maxLength: 3 })
        )
      )
    ],
    ([params]) => {
      const result = parse(params)
      if (Either.isLeft(result)) {
        expect(result.left.field).toBeTruthy()
        expect(result.left.message.startsWith(`${result.left.field}: `)).toBe(true)
      }
    },
    { fastCheck: { numRuns: 300 } }
  )

  it("requires the metadata_filtering feature only when metadata is filtered", () => {
    const withMetadata = ok({ "metadata[team]": "core" })
    const denied = requireRunListFeatures(withMetadata, { metadata_filtering: false })
    expect(Either.isLeft(denied) && denied.left).toBeInstanceOf(FeatureNotAvailable)
    expect(Either.isLeft(denied) && denied.left.errorCode).toBe("feature_not_available")
    expect(Either.isRight(requireRunListFeatures(withMetadata, { metadata_filtering: true }))).toBe(true)
    expect(Either.isRight(requireRunListFeatures(ok({ state: "QUEUED" }), { metadata_filtering: false }))).toBe(true)
  })
})

describe("RunQuery: cursor", () => {
  it("round-trips the last row's sort key and run id, for every sort", () => {
    const r = row({ run_id: runId(42), title: "héllo 😀", agent_skill: null })
    for (const sort_by of SORTS) {
      const params = { sort_by, state: "QUEUED", "metadata[team]": "core" }
      const cursor = encodeCursor(ok(params), r)
      expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/)
      const expected = { updated_at: 2_000, created_at: 1_000, title: "héllo 😀", agent: null }[sort_by]
      expect(ok({ ...params, cursor }).cursor).toEqual({ key: expected, run_id: runId(42) })
      // a different limit is the same query
      expect(ok({ ...params, limit: "7", cursor }).cursor?.run_id).toBe(runId(42))
    }
  })

  it("rejects a cursor reused with another sort or other filters", () => {
    const params = { sort_by: "created_at", state: ["QUEUED", "FAILED"], "metadata[team]": "core" }
    const cursor = encodeCursor(ok(params), baseRow)
    for (const changed of [
      { sort_by: "updated_at" },
      { sort_order: "asc" },
      { state: "QUEUED" },
      { "metadata[team]": "web" },
      { "metadata[prio]": "high" },
      { q: "x" },
      { environment_id: "empty-environment" },
      { created_after: "2026-01-01T00:00:00Z" }
    ]) rejects({ ...params, ...changed, cursor }, "cursor", "different query")
    expect(ok({ ...params, cursor }).cursor).toBeDefined()
  })

  it("rejects malformed and tampered cursors", () => {
    const params = { sort_by: "title" }
    const cursor = encodeCursor(ok(params), baseRow)
    const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === "A" ? "B" : "A") + s.slice(i + 1)
    for (const bad of [
      "x",
      "not a cursor!",
      cursor.slice(0, -4),
      flip(cursor, 10),
      Encoding.encodeBase64Url("{}"),
      Encoding.encodeBase64Url("[1,null,\"x\",\"y\",\"z\"]"),
      Encoding.encodeBase64Url("[1,1.5,\"x\",\"y\",\"z\"]")
    ]) rejects({ ...params, cursor: bad }, "cursor", "malformed")
    rejects({ ...params, cursor: [cursor, cursor] }, "cursor", "more than once")
    // well-formed and correctly checksummed, but not a run id, or a key of the wrong type
    const fp = queryFingerprint(ok(params))
    rejects({ ...params, cursor: encodeKeysetCursor({ key: "t", id: "nope" }, fp) }, "cursor", "malformed")
    rejects({ ...params, cursor: encodeKeysetCursor({ key: 5, id: runId(1) }, fp) }, "cursor", "malformed")
  })

  it.prop(
    "any change to a cursor's bytes is detected",
    [fc.nat(), fc.constantFrom(..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"), rowArb, fc.constantFrom(...SORTS)],
    ([position, replacement, r, sort_by]) => {
      const query = ok({ sort_by })
      const cursor = encodeCursor(query, r)
      const i = position % cursor.length
      const tampered = cursor.slice(0, i) + replacement + cursor.slice(i + 1)
      const same = Either.getOrThrow(Encoding.decodeBase64Url(cursor))
      const other = Encoding.decodeBase64Url(tampered)
      const unchanged = Either.isRight(other) && other.right.length === same.length && other.right.every((b, j) => b === same[j])
      if (unchanged) expect(ok({ sort_by, cursor: tampered }).cursor?.run_id).toBe(r.run_id)
      else rejects({ sort_by, cursor: tampered }, "cursor", "malformed")
    },
    { fastCheck: { numRuns: 300 } }
  )

  it.prop(
    "the fingerprint ignores the order of repeated states and of metadata keys",
    [
      fc.array(fc.constantFrom(...RunState.literals), { minLength: 1, maxLength: 12 }),
      fc.uniqueArray(fc.string({ minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 5 }),
      fc.integer({ min: 0, max: 2 ** 31 - 1 })
    ],
    ([states, keys, seed]) => {
      const entries: Array<[string, string]> = [
        ...states.map((s): [string, string] => ["state", s]),
        ...keys.map((k, i): [string, string] => [`metadata[${k}]`, `v${i}`]),
        ["q", "Two words"]
      ]
      const shuffled = fc.sample(fc.shuffledSubarray(entries, { minLength: entries.length }), { seed, numRuns: 1 })[0]!
      const a = ok(queryParamsFromSearchParams(entries))
      const b = ok(queryParamsFromSearchParams(shuffled))
      expect(queryFingerprint(a)).toBe(queryFingerprint(b))
      const cursor = encodeCursor(a, baseRow)
      expect(ok({ ...queryParamsFromSearchParams(shuffled), cursor }).cursor).toBeDefined()
      // and it does see a change in the set of states
      const missing = RunState.literals.find((s) => !states.includes(s))
      if (missing !== undefined) {
        const c = ok(queryParamsFromSearchParams([...entries, ["state", missing]]))
        expect(queryFingerprint(c)).not.toBe(queryFingerprint(a))
      }
    },
    { fastCheck: { numRuns: 200 } }
  )

  it("fingerprints are deterministic FNV-1a 64 of canonical JSON", () => {
    expect(fnv1a64("")).toBe("cbf29ce484222325")
    expect(canonicalJson({ b: 1, a: [true, null, undefined], c: undefined })).toBe('{"a":[true,null,null],"b":1}')
    expect(fingerprint({ a: 1, b: 2 })).toBe(fingerprint({ b: 2, a: 1 }))
    expect(fingerprint({ a: 1 })).not.toBe(fingerprint({ a: 2 }))
    expect(queryFingerprint(ok({ created_after: "2026-01-01T01:00:00+01:00" }))).toBe(
      queryFingerprint(ok({ created_after: "2026-01-01T00:00:00Z", limit: "3" }))
    )
    expect(Either.isRight(decodeKeysetCursor(encodeKeysetCursor({ key: null, id: "i" }, "f"), "f"))).toBe(true)
    // a query built by hand, with states unsorted and repeated, fingerprints like the parsed one
    const parsed = ok({ state: ["FAILED", "QUEUED"], "metadata[b]": "2", "metadata[a]": "1", q: "y x" })
    const byHand: RunListQuery = {
      ...parsed,
      filters: { states: ["QUEUED", "FAILED", "QUEUED"], metadata: [["b", "2"], ["a", "1"]], q: ["y", "x", "y"] }
    }
    expect(queryFingerprint(byHand)).toBe(queryFingerprint(parsed))
  })
})

describe("RunQuery: the reference evaluator", () => {
  it("matches every filter", () => {
    const r = baseRow
    const cases: ReadonlyArray<readonly [RunListQueryParams, boolean]> = [
      [{}, true],
      [{ state: ["FAILED", "QUEUED"] }, true],
      [{ state: "FAILED" }, false],
      [{ name: "fixer" }, true],
      [{ name: "Fixer" }, false],
      [{ model_id: "model-a" }, true],
      [{ model_id: "model-b" }, false],
      [{ creator: "UserAAAAAAAAAAAAAAAAAA" }, true],
      [{ creator: "UserBBBBBBBBBBBBBBBBBB" }, false],
      [{ executor: "UserBBBBBBBBBBBBBBBBBB" }, true],
      [{ executor: "UserAAAAAAAAAAAAAAAAAA" }, false],
      [{ source: "API" }, true],
      [{ source: "CLI" }, false],
      [{ execution_location: "REMOTE" }, true],
      [{ execution_location: "LOCAL" }, false],
      [{ created_after: "1970-01-01T00:00:00.999Z" }, true],
      [{ created_after: "1970-01-01T00:00:01Z" }, false],
      [{ created_before: "1970-01-01T00:00:01.001Z" }, true],
      [{ created_before: "1970-01-01T00:00:01Z" }, false],
      [{ updated_after: "1970-01-01T00:00:01.999Z" }, true],
      [{ updated_after: "1970-01-01T00:00:02Z" }, false],
      [{ environment_id: ENV }, true],
      [{ environment_id: ENV2 }, false],
      [{ environment_id: "empty-environment" }, false],
      [{ skill: "acme/tools:skills/fix/SKILL.md" }, true],
      [{ skill_spec: "acme/tools:skills/other/SKILL.md" }, false],
      [{ schedule_id: SCHEDULE }, true],
      [{ schedule_id: "SchedBBBBBBBBBBBBBBBBB" }, false],
      [{ ancestor_run_id: ANCESTOR }, true],
      [{ ancestor_run_id: runId(5) }, false],
      [{ "metadata[team]": "core", "metadata[prio]": "high" }, true],
      [{ "metadata[team]": "core", "metadata[prio]": "low" }, false],
      [{ "metadata[owner]": "" }, false],
      [{ "metadata[toString]": "x" }, false],
      [{ artifact_type: "PULL_REQUEST" }, true],
      [{ artifact_type: "PLAN" }, false],
      [{ q: "flaky LOGIN" }, true],
      [{ q: "fix acme/tools" }, true],
      [{ q: "flaky nothing" }, false],
      [{ q: "test login" }, true],
      // Not a substring, but the same words: trigram similarity 1.
      [{ q: "test-login" }, true],
      // A typo: similar enough (0.45 to the title "Fix the flaky test"); 0.13 at best is not.
      [{ q: "flakey test" }, true],
      [{ q: "flask loader" }, false]
    ]
    for (const [params, expected] of cases) expect([params, matches(r, params)]).toEqual([params, expected])
  })

  it("empty-environment matches runs with no environment; q skips absent title and skill", () => {
    const bare = row({ environment_id: null, title: null, agent_config: {}, schedule: null })
    expect(matches(bare, { environment_id: "empty-environment" })).toBe(true)
    expect(matches(bare, { environment_id: ENV })).toBe(false)
    expect(matches(bare, { q: "flaky" })).toBe(true)
    expect(matches(bare, { q: "acme" })).toBe(false)
    expect(matches(bare, { schedule_id: SCHEDULE })).toBe(false)
    expect(matches(bare, { name: "fixer" })).toBe(false)
    // only the run's own metadata counts, never inherited properties
    const inherited = row({ metadata: Object.create({ team: "core" }) })
    expect(matches(inherited, { "metadata[team]": "core" })).toBe(false)
  })

  it("sorts titles and skills by code point, with missing ones last in both orders", () => {
    const titles = ["b", null, "Z", "a", "é", "\uFFFF", "😀", null]
    const rows = titles.map((title, i) => row({ run_id: runId(i), title, agent_skill: title === null ? null : { name: title } }))
    const sorted = (sort_by: RunSortBy, sort_order: SortOrder) =>
      [...rows].sort(compareRunsForQuery({ sort_by, sort_order })).map((r) => (sort_by === "title" ? r.title : r.agent_skill?.name ?? null))
    const asc = ["Z", "a", "b", "é", "\uFFFF", "😀", null, null]
    const desc = ["😀", "\uFFFF", "é", "b", "a", "Z", null, null]
    for (const sort_by of ["title", "agent"] as const) {
      expect(sorted(sort_by, "asc")).toEqual(asc)
      expect(sorted(sort_by, "desc")).toEqual(desc)
    }
    // ties (the two nulls) follow run_id in the requested direction
    const nulls = (sort_order: SortOrder) =>
      [...rows].sort(compareRunsForQuery({ sort_by: "title", sort_order })).slice(-2).map((r) => r.run_id)
    expect(nulls("asc")).toEqual([runId(1), runId(7)])
    expect(nulls("desc")).toEqual([runId(7), runId(1)])
    expect(compareCodePoints("\uE000", "😀")).toBeLessThan(0)
    expect(compareCodePoints("😀", "\uE000")).toBeGreaterThan(0)
    expect(compareCodePoints("ab", "ab")).toBe(0)
    expect(compareCodePoints("ab", "abc")).toBeLessThan(0)
  })

  it("pages by created_at: limit, has_next_page and next_cursor", () => {
    const rows = [3, 1, 2, 2, 5].map((t, i) => row({ run_id: runId(i), created_at: t }))
    const first = pageOf(rows, ok({ sort_by: "created_at", sort_order: "asc", limit: "2" }))
    expect(first.rows.map((r) => r.created_at)).toEqual([1, 2])
    expect(first.page_info.has_next_page).toBe(true)
    const second = pageOf(rows, ok({ sort_by: "created_at", sort_order: "asc", limit: "2", cursor: first.page_info.next_cursor! }))
    expect(second.rows.map((r) => [r.created_at, r.run_id])).toEqual([
      [2, runId(3)],
      [3, runId(0)]
    ])
    const last = pageOf(rows, ok({ sort_by: "created_at", sort_order: "asc", limit: "2", cursor: second.page_info.next_cursor! }))
    expect(last.rows.map((r) => r.created_at)).toEqual([5])
    expect(last.page_info).toEqual({ has_next_page: false })
    expect(pageOf(rows, ok({ limit: "5" })).page_info).toEqual({ has_next_page: false })
  })

  it.prop(
    "paging visits every matching row exactly once, in order, for every sort and direction",
    [rowsArb(40), filterParamsArb, fc.integer({ min: 1, max: 7 })],
    ([rows, filterParams, limit]) => {
      for (const sort_by of SORTS) {
        for (const sort_order of ORDERS) {
          const params = { ...filterParams, sort_by, sort_order, limit: String(limit) }
          const query = ok(params)
          const expected = rows.filter((r) => matchesRunListQuery(r, query)).sort(expectedOrder(sort_by, sort_order))
          const seen = pageThrough(params, () => rows)
          expect(seen.map((r) => r.run_id)).toEqual(expected.map((r) => r.run_id))
        }
      }
    },
    { fastCheck: { numRuns: 200 } }
  )

  it.prop(
    "rows inserted between pages never make a row present throughout skipped or repeated",
    [rowsArb(60), fc.integer({ min: 5, max: 30 }), fc.integer({ min: 1, max: 6 }), fc.constantFrom(...SORTS), fc.constantFrom(...ORDERS), fc.integer({ min: 1, max: 4 })],
    ([all, initialCount, limit, sort_by, sort_order, perPage]) => {
      const initial = all.slice(0, initialCount)
      const later = all.slice(initialCount)
      const params = { sort_by, sort_order, limit: String(limit) }
      const order = expectedOrder(sort_by, sort_order)
      const seen = pageThrough(params, (i) => [...initial, ...later.slice(0, i * perPage)])
      const ids = seen.map((r) => r.run_id)
      expect(new Set(ids).size).toBe(ids.length)
      for (const r of initial) expect(ids.filter((id) => id === r.run_id)).toHaveLength(1)
      for (let i = 1; i < seen.length; i++) expect(order(seen[i - 1]!, seen[i]!)).toBeLessThan(0)
    },
    { fastCheck: { numRuns: 200 } }
  )
})
