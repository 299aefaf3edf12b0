/**
 * The RunStore conformance suite: what every adapter must do, checked against one shared
 * database. Tests isolate themselves with fresh teams, principals, run ids and worker hosts, never
 * by truncating. The run list is compared with the reference evaluator `RunQuery.pageOf` over the
 * same rows (a property test), and the lease sweep is played end to end with `RunStateMachine`.
 *
 * Claims are global (every team's QUEUED runs with the same worker host compete), so tests that
 * claim use a worker host of their own; the one test of host-less claims uses runs created before
 * 1970, older than anything else the suite writes (fair share across teams, which host-less claims
 * follow, is FairShareSuite's, on a database of its own).
 */
import { applyTransition, presentRun, runOwnership, runSnapshot } from "../src/domain/RunRecords.js"
import { describe, expect, layer } from "@effect/vitest"
import { Arbitrary, DateTime, Effect, Either, Fiber, Option, Schema, Stream } from "effect"
import type { Layer } from "effect"
import * as fc from "fast-check"
import { canSee, type Shaper, type Viewer } from "../src/domain/Access.js"
import type { Artifact } from "../src/domain/Artifact.js"
import { ConversationStep } from "../src/domain/Conversation.js"
import { type ConversationOp, foldConversation } from "../src/domain/ConversationLog.js"
import { decodeKeysetCursor } from "../src/domain/Cursor.js"
import {
  type EnvironmentUid,
  type ExecutionId,
  formatUid22,
  formatUuidV7,
  type PrincipalUid,
  type RunId,
  type ScheduleId,
  type TeamUid,
  type WebhookUid,
  type DeliveryId
} from "../src/domain/Ids.js"
import type { Role } from "../src/domain/Identity.js"
import { RunItem } from "../src/domain/Run.js"
import type { AgentSkill } from "../src/domain/Run.js"
import {
  encodeCursor,
  pageOf,
  queryFingerprint,
  stateCounts,
  stateCountsOf,
  type RunListFilters,
  type RunListQuery,
  type RunListSort,
  type RunSortBy,
  type SortOrder
} from "../src/domain/RunQuery.js"
import { ArtifactType, type RunExecutionLocation, type RunSourceType, RunState } from "../src/domain/RunState.js"
import { RunEvent, transition } from "../src/domain/RunStateMachine.js"
import type { SkillSpec } from "../src/domain/Agent.js"
import { FollowupTotalSpent, type NewTimelineEvent, runListRow, RunStore, type StoredRun } from "../src/ports/RunStore.js"
import type { ExactlyOnceKey, ScheduleTickKey } from "../src/ports/Storage.js"
import { WebhookStore } from "../src/ports/WebhookStore.js"
import { AuditLog } from "../src/ports/AuditLog.js"
import { entryOf } from "./AuditLogConformance.js"
import { Delivery } from "../src/domain/Webhook.js"
import type { Stores } from "./Stores.js"

// ---------------------------------------------------------------------------------------------
// Fixtures

const randomBytes = (n: number): Uint8Array => globalThis.crypto.getRandomValues(new Uint8Array(n))

/** A fresh 22-character id. */
export const uid = <A extends string>(): A => {
  for (;;) {
    const id = formatUid22(randomBytes(64))
    if (id !== undefined) return id as A
  }
}

/** A fresh UUIDv7 (run or execution id) carrying `millis`. */
export const uuid = <A extends string>(millis = Date.now()): A => formatUuidV7(Math.max(0, millis), randomBytes(10)) as A

/** A time safely after every other time the suite writes (leases of this size never expire in tests). */
const LATER = 4_000_000_000_000
const HOUR = 3_600_000

const at = (millis: number) => DateTime.unsafeMake(millis)

/** What a test run is made of; everything has a plain default. */
export interface RunFacts {
  readonly team: TeamUid
  readonly creator: PrincipalUid
  readonly executor?: PrincipalUid
  readonly teamScope?: boolean
  readonly state?: RunState
  readonly created_at?: number
  readonly updated_at?: number
  readonly title?: string
  readonly prompt?: string
  readonly skill?: string | null
  readonly skill_spec?: string
  readonly name?: string
  readonly model_id?: string
  readonly environment?: EnvironmentUid | null
  readonly schedule?: ScheduleId | null
  readonly source?: RunSourceType
  readonly execution_location?: RunExecutionLocation
  readonly worker_host?: string
  readonly priority?: number
  readonly parent?: StoredRun
  readonly metadata?: Readonly<Record<string, string>>
  readonly artifacts?: ReadonlyArray<ArtifactType>
  readonly run_id?: RunId
}

const artifactOf = (type: ArtifactType, createdAt: number, url = "https://example.com/ref"): Artifact => {
  const created_at = at(createdAt)
  switch (type) {
    case "PULL_REQUEST":
      return { artifact_type: type, created_at, data: { branch: "fix", url: "https://example.com/pr/1" } }
    case "PLAN":
      return { artifact_type: type, created_at, data: { document_uid: "doc1", title: "Plan" } }
    case "SCREENSHOT":
      return { artifact_type: type, created_at, data: { url: "https://example.com/s.png", media_type: "image/png" } }
    case "FILE":
      return { artifact_type: type, created_at, data: { name: "out.txt", url: "https://example.com/f", size_bytes: 3 } }
    case "EXTERNAL_REFERENCE":
      return { artifact_type: type, created_at, data: { url } }
  }
}

/** A stored run made of `facts` (fresh ids; everything not given has a plain default). */
export const makeRun = (facts: RunFacts): StoredRun => {
  const created = facts.created_at ?? Date.now()
  const runId = facts.run_id ?? uuid<RunId>(created)
  const skill: AgentSkill | null =
    facts.skill === undefined || facts.skill === null
      ? null
      : { name: facts.skill, description: `the ${facts.skill} skill`, full_path: "skills/SKILL.md" }
  const environment = facts.environment ?? null
  const parent = facts.parent
  return {
    item: new RunItem({
      run_id: runId,
      task_id: runId,
      title: facts.title ?? "a run",
      prompt: facts.prompt ?? "do the thing",
      state: facts.state ?? "PENDING",
      created_at: at(created),
      updated_at: at(facts.updated_at ?? created),
      started_at: null,
      ended_at: null,
      session_id: null,
      session_link: null,
      conversation_id: null,
      agent_config: {
        ...(facts.name === undefined ? {} : { name: facts.name }),
        ...(facts.model_id === undefined ? {} : { model_id: facts.model_id }),
        ...(environment === null ? {} : { environment_id: environment }),
        ...(facts.skill_spec === undefined ? {} : { skill_spec: facts.skill_spec as SkillSpec }),
        ...(facts.worker_host === undefined ? {} : { worker_host: facts.worker_host }),
        ...(facts.priority === undefined ? {} : { priority: facts.priority })
      },
      agent_skill: skill,
      creator: { type: "user", uid: facts.creator, display_name: "Creator" },
      executor: { type: "user", uid: facts.executor ?? facts.creator, display_name: "Executor" },
      source: facts.source ?? "API",
      execution_location: facts.execution_location ?? "REMOTE",
      environment_id: environment,
      schedule:
        facts.schedule === undefined || facts.schedule === null
          ? null
          : { schedule_id: facts.schedule, schedule_name: "nightly", cron_schedule: "0 3 * * *" },
      parent_run_id: parent?.item.run_id ?? null,
      ancestor_run_ids: parent === undefined ? [] : [...parent.item.ancestor_run_ids, parent.item.run_id],
      metadata: facts.metadata ?? {},
      artifacts: (facts.artifacts ?? []).map((type) => artifactOf(type, created)),
      status_message: null,
      request_usage: { input_tokens: 0, output_tokens: 0, inference_cost: 0, compute_cost: 0 },
      is_sandbox_running: false,
      is_run_type_cancellable: true,
      scope: facts.teamScope === false ? { type: "User", uid: facts.creator } : { type: "Team", uid: facts.team },
      attempt: 1,
      execution_count: 1
    }),
    team_uid: facts.team,
    lease: null,
    at_capacity: false,
    sandbox_retained: false,
    has_conversation: false
  }
}

/** The creation events of a run. */
export const creationEvents = (run: StoredRun): Array<NewTimelineEvent> => [
  { event_type: "run_created", occurred_at: DateTime.toEpochMillis(run.item.created_at), execution_id: uuid() },
  { event_type: "run_pending", occurred_at: DateTime.toEpochMillis(run.item.created_at), execution_id: uuid() }
]

/** Creates runs (one transaction) with their creation events. */
const createRuns = (runs: ReadonlyArray<StoredRun>, key?: ExactlyOnceKey) =>
  Effect.flatMap(RunStore, (store) => store.create(runs.map((run) => ({ run, events: creationEvents(run) })), key))

const encodeItem = Schema.encodeSync(RunItem)

/** A fresh team, creator and worker host of their own (claims are global: see the top comment), and QUEUED runs of them. */
const hostQueue = () => {
  const team = uid<TeamUid>()
  const creator = uid<PrincipalUid>()
  const host = `host-${uid()}`
  const queued = (created_at: number, priority?: number) =>
    makeRun({ team, creator, state: "QUEUED", worker_host: host, created_at, ...(priority === undefined ? {} : { priority }) })
  return { team, creator, host, queued, t: 1_700_000_400_000 }
}

/**
 * A stored run as comparable JSON (DateTime and class instances compared by value), its item
 * presented: the two computed flags are computed when a run is read, whatever the stored item said.
 */
const comparable = (run: StoredRun) => JSON.stringify({ ...run, item: encodeItem(presentRun(run)) })

const viewerOf = (team: TeamUid, principal: PrincipalUid, role: Role = "member"): Viewer => ({
  principal_uid: principal,
  team_uid: team,
  role,
  instance_admin: false
})

const query = (
  options: Partial<Omit<RunListQuery, "filters">> & { readonly filters?: Partial<RunListFilters> } = {}
): RunListQuery => ({
  limit: options.limit ?? 100,
  sort_by: options.sort_by ?? "created_at",
  sort_order: options.sort_order ?? "asc",
  filters: { states: [], metadata: [], q: [], ...options.filters },
  ...(options.cursor === undefined ? {} : { cursor: options.cursor })
})

/** The next page's query, from the `next_cursor` the store returned (as a client would send it back). */
const nextQuery = (q: RunListQuery, nextCursor: string): RunListQuery => {
  const position = decodeKeysetCursor(nextCursor, queryFingerprint(q))
  if (Either.isLeft(position)) throw new Error(`the store returned a cursor that does not decode: ${position.left}`)
  return { ...q, cursor: { key: position.right.key, run_id: position.right.id as RunId } }
}

/** Every run of a query, page by page. */
const listAll = (q: RunListQuery, viewer: Viewer) =>
  Effect.gen(function* () {
    const store = yield* RunStore
    const out: Array<StoredRun> = []
    let current = q
    for (;;) {
      const page = yield* store.list(current, viewer)
      out.push(...page.rows)
      if (page.page_info.next_cursor === undefined) return out
      current = nextQuery(current, page.page_info.next_cursor)
    }
  })

const idsOf = (runs: ReadonlyArray<StoredRun>) => runs.map((r) => r.item.run_id)

/** The ids a list returns, as a set (for filters, whose order is checked by the property). */
const listedIds = (q: RunListQuery, viewer: Viewer) => Effect.map(listAll(q, viewer), (runs) => new Set(idsOf(runs)))


/** Applies an event with the state machine and writes it guarded by the run's state and lease holder. */
const apply = (run: StoredRun, event: RunEvent, now: number, holder?: ExecutionId) =>
  Effect.gen(function* () {
    const t = transition(runSnapshot(run), event, now)
    if (Either.isLeft(t)) return yield* Effect.die(t.left)
    const next = applyTransition(run, t.right, now)
    const execution = holder ?? run.lease?.execution_id ?? uuid<ExecutionId>()
    const store = yield* RunStore
    yield* store.update(
      run.item.run_id,
      { state: run.item.state, ...(holder === undefined ? {} : { execution_id: holder }) },
      next,
      t.right.timeline.map((event_type) => ({ event_type, occurred_at: now, execution_id: execution }))
    )
    return next
  })

const getRun = (runId: RunId) =>
  Effect.flatMap(RunStore, (store) => store.get(runId)).pipe(
    Effect.flatMap(Option.match({ onNone: () => Effect.dieMessage(`run ${runId} not found`), onSome: Effect.succeed }))
  )

// ---------------------------------------------------------------------------------------------
// Generated runs and queries for the list property

const TITLES = [
  "alpha",
  "Alpha",
  "beta",
  "ÄrgerNIS",
  "中文标题",
  "emoji 😀 run",
  "\uFF5Afull-width",
  "",
  "a\u0001b",
  "100% done",
  "snake_case"
]
const PROMPTS = ["fix the bug", "Write TESTS for İstanbul", "ΟΔΟΣ review", "refactor 😀 now", "x\u0001y prompt"]
const SKILLS = ["lint", "Lint", "Deploy", "ärger", "😀skill", "\uFF5Askill"]
const SPECS = ["acme/tools:lint", "acme/tools:path/SKILL.md", "Other/repo:deploy"]
const TERMS = [
  "alpha",
  "al",
  "σ",
  "ς",
  "οδος",
  "i̇stanbul",
  "tests",
  "😀",
  "\u0001",
  "b\u0001x",
  "a\u0001b",
  "lint",
  "skill.md",
  "0%",
  "e_c",
  "%",
  "_",
  "zz",
  // Near misses, found by trigram similarity only.
  "alpah",
  "istanbull",
  "refactr",
  "snake_cas",
  "lintt"
]
const META_KEYS = ["team", "env", "prio"]
const META_VALUES = ["a", "b", ""]
const SOURCES: ReadonlyArray<RunSourceType> = ["API", "WEBHOOK", "SCHEDULED_AGENT", "CLI"]

const runSpec = fc.record({
  creator: fc.nat(2),
  executor: fc.nat(2),
  teamScope: fc.boolean(),
  state: fc.constantFrom(...RunState.literals),
  created: fc.nat(5),
  updatedDelta: fc.nat(3),
  title: fc.constantFrom(...TITLES),
  prompt: fc.constantFrom(...PROMPTS),
  skill: fc.option(fc.constantFrom(...SKILLS), { nil: null }),
  skillSpec: fc.option(fc.constantFrom(...SPECS), { nil: undefined }),
  name: fc.option(fc.constantFrom("builder", "Reviewer"), { nil: undefined }),
  model: fc.option(fc.constantFrom("m1", "m2"), { nil: undefined }),
  environment: fc.option(fc.nat(1), { nil: null }),
  schedule: fc.option(fc.nat(1), { nil: null }),
  source: fc.constantFrom(...SOURCES),
  location: fc.constantFrom<RunExecutionLocation>("REMOTE", "LOCAL"),
  parent: fc.option(fc.nat(40), { nil: null }),
  metadata: fc.dictionary(fc.constantFrom(...META_KEYS), fc.constantFrom(...META_VALUES)),
  artifacts: fc.subarray([...ArtifactType.literals])
})
type RunSpec = typeof runSpec extends fc.Arbitrary<infer A> ? A : never

/** A value for every filter; a query uses a few of them (more would rarely select anything). */
const filterValues = fc.record({
  states: fc.subarray([...RunState.literals], { minLength: 1, maxLength: 3 }),
  name: fc.constantFrom("builder", "Reviewer", "nobody"),
  model_id: fc.constantFrom("m1", "m2"),
  creator: fc.nat(3),
  executor: fc.nat(3),
  source: fc.constantFrom(...SOURCES),
  execution_location: fc.constantFrom<RunExecutionLocation>("REMOTE", "LOCAL"),
  created_after: fc.integer({ min: -1, max: 6 }),
  created_before: fc.integer({ min: -1, max: 6 }),
  updated_after: fc.integer({ min: -1, max: 9 }),
  environment: fc.option(fc.nat(2), { nil: null }),
  skill_spec: fc.constantFrom(...SPECS),
  schedule: fc.nat(2),
  ancestor: fc.nat(40),
  metadata: fc.dictionary(fc.constantFrom(...META_KEYS), fc.constantFrom(...META_VALUES), { minKeys: 1 }),
  artifact_type: fc.constantFrom(...ArtifactType.literals),
  q: fc.array(fc.constantFrom(...TERMS), { minLength: 1, maxLength: 3 })
})
type FilterValues = typeof filterValues extends fc.Arbitrary<infer A> ? A : never
const FILTER_KEYS: ReadonlyArray<keyof FilterValues> = [
  "states",
  "name",
  "model_id",
  "creator",
  "executor",
  "source",
  "execution_location",
  "created_after",
  "created_before",
  "updated_after",
  "environment",
  "skill_spec",
  "schedule",
  "ancestor",
  "metadata",
  "artifact_type",
  "q"
]

/** A query with up to three filters, and who asks. */
const querySpec = fc
  .record({
    sort_by: fc.constantFrom<RunSortBy>("updated_at", "created_at", "title", "agent"),
    sort_order: fc.constantFrom<SortOrder>("asc", "desc"),
    limit: fc.integer({ min: 1, max: 6 }),
    viewer: fc.nat(3),
    role: fc.constantFrom<Role>("admin", "member", "viewer"),
    active: fc.subarray([...FILTER_KEYS], { maxLength: 3 }),
    values: filterValues
  })
  .map(({ active, values, ...query }) => ({
    ...query,
    filters: Object.fromEntries(active.map((k) => [k, values[k]])) as Partial<FilterValues>
  }))

/** A search-only query, so that every search term is tried often (and the relevance sort). */
const searchSpec = fc
  .record({
    sort_by: fc.constantFrom<RunListSort>("relevance", "relevance", "updated_at", "created_at", "title", "agent"),
    sort_order: fc.constantFrom<SortOrder>("asc", "desc"),
    limit: fc.integer({ min: 1, max: 6 }),
    viewer: fc.constant(0),
    role: fc.constant<Role>("admin"),
    q: fc.array(fc.constantFrom(...TERMS), { minLength: 1, maxLength: 2 })
  })
  .map(({ q, ...query }) => ({ ...query, filters: { q } as Partial<FilterValues> }))
type QuerySpec = Omit<typeof querySpec extends fc.Arbitrary<infer A> ? A : never, "sort_by"> & {
  readonly sort_by: RunListSort
}

/** The fresh identities of one property case. */
interface World {
  readonly team: TeamUid
  readonly principals: ReadonlyArray<PrincipalUid>
  readonly environments: ReadonlyArray<EnvironmentUid>
  readonly schedules: ReadonlyArray<ScheduleId>
  readonly base: number
}

const freshWorld = (): World => ({
  team: uid(),
  // The fourth principal never creates anything: a member who sees only Team-scoped runs.
  principals: [uid(), uid(), uid(), uid()],
  environments: [uid(), uid(), uid()],
  schedules: [uid(), uid(), uid()],
  base: 1_700_000_000_000
})

const buildRuns = (world: World, specs: ReadonlyArray<RunSpec>): Array<StoredRun> => {
  const runs: Array<StoredRun> = []
  specs.forEach((s, i) => {
    const created = world.base + s.created
    runs.push(
      makeRun({
        team: world.team,
        creator: world.principals[s.creator]!,
        executor: world.principals[s.executor]!,
        teamScope: s.teamScope,
        state: s.state,
        created_at: created,
        updated_at: created + s.updatedDelta,
        title: s.title,
        prompt: s.prompt,
        skill: s.skill,
        ...(s.skillSpec === undefined ? {} : { skill_spec: s.skillSpec }),
        ...(s.name === undefined ? {} : { name: s.name }),
        ...(s.model === undefined ? {} : { model_id: s.model }),
        environment: s.environment === null ? null : world.environments[s.environment]!,
        schedule: s.schedule === null ? null : world.schedules[s.schedule]!,
        source: s.source,
        execution_location: s.location,
        ...(s.parent === null || i === 0 ? {} : { parent: runs[s.parent % i]! }),
        metadata: s.metadata,
        artifacts: s.artifacts
      })
    )
  })
  return runs
}

const buildQuery = (world: World, runs: ReadonlyArray<StoredRun>, spec: QuerySpec): { query: RunListQuery; viewer: Viewer } => {
  const s = spec.filters
  const filters: { -readonly [K in keyof RunListFilters]: RunListFilters[K] } = {
    states: s.states === undefined ? [] : RunState.literals.filter((state) => s.states!.includes(state)),
    metadata: s.metadata === undefined
      ? []
      : Object.entries(s.metadata).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    q: s.q === undefined
      ? []
      : [...new Set(s.q.join(" ").trim().toLowerCase().split(/\s+/).filter((t) => t !== ""))].sort()
  }
  if (s.name !== undefined) filters.name = s.name
  if (s.model_id !== undefined) filters.model_id = s.model_id
  if (s.creator !== undefined) filters.creator = world.principals[s.creator]!
  if (s.executor !== undefined) filters.executor = world.principals[s.executor]!
  if (s.source !== undefined) filters.source = s.source
  if (s.execution_location !== undefined) filters.execution_location = s.execution_location
  if (s.created_after !== undefined) filters.created_after = world.base + s.created_after
  if (s.created_before !== undefined) filters.created_before = world.base + s.created_before
  if (s.updated_after !== undefined) filters.updated_after = world.base + s.updated_after
  if (s.environment !== undefined) {
    filters.environment = s.environment === null
      ? { _tag: "NoEnvironment" }
      : { _tag: "Environment", uid: world.environments[s.environment]! }
  }
  if (s.skill_spec !== undefined) filters.skill_spec = s.skill_spec
  if (s.schedule !== undefined) filters.schedule_id = world.schedules[s.schedule]!
  if (s.ancestor !== undefined) {
    filters.ancestor_run_id = runs.length === 0 ? uuid<RunId>() : runs[s.ancestor % runs.length]!.item.run_id
  }
  if (s.artifact_type !== undefined) filters.artifact_type = s.artifact_type
  return {
    query: { limit: spec.limit, sort_by: spec.sort_by, sort_order: spec.sort_order, filters },
    viewer: viewerOf(world.team, world.principals[spec.viewer]!, spec.role)
  }
}

/**
 * Inserts the runs into a fresh team and checks every page of every query, and its counts by
 * state, against the oracle.
 */
const checkPages = (specs: ReadonlyArray<RunSpec>, queries: ReadonlyArray<QuerySpec>) =>
  Effect.gen(function* () {
    const store = yield* RunStore
    const world = freshWorld()
    const runs = buildRuns(world, specs)
    yield* createRuns(runs)
    for (const spec of queries) {
      const { query: first, viewer } = buildQuery(world, runs, spec)
      const visible = runs
        .filter((r) => canSee(viewer, { team_uid: r.team_uid, creator_uid: r.item.creator.uid, scope: r.item.scope }))
        .map((r) => ({ ...runListRow(r), stored: r }))
      expect(yield* store.countByState(first, viewer)).toEqual(stateCountsOf(visible, first))
      let current = first
      for (let pageNo = 0; pageNo <= runs.length + 1; pageNo++) {
        const expected = pageOf(visible, current)
        const page = yield* store.list(current, viewer)
        expect(page.rows.map(comparable)).toEqual(expected.rows.map((r) => comparable(r.stored)))
        expect(page.page_info).toEqual(expected.page_info)
        // The same page as JSON: each run the schema's encoding of its presented item.
        const json = yield* store.listJson(current, viewer)
        expect(json.rows.map((r) => JSON.parse(r.json))).toEqual(expected.rows.map((r) => encodeItem(presentRun(r.stored))))
        expect(json.page_info).toEqual(expected.page_info)
        if (page.page_info.next_cursor === undefined) break
        current = nextQuery(current, page.page_info.next_cursor)
      }
    }
  })

// ---------------------------------------------------------------------------------------------
// The suite

/** Registers the RunStore conformance tests against one adapter's layer. */
export const runStoreConformance = <E>(storeLayer: Layer.Layer<Stores, E>): void => {
  layer(storeLayer, { excludeTestServices: true, timeout: "60 seconds" })("RunStore", (it) => {
    describe("create and get", () => {
      const storedRun = fc.tuple(
        Arbitrary.make(RunItem),
        fc.option(fc.record({ expires_at: fc.integer({ min: LATER, max: LATER + HOUR }) }), { nil: null }),
        fc.boolean(),
        fc.boolean(),
        fc.boolean()
      )

      it.effect.prop(
        "a stored run reads back exactly, every RunItem field included",
        [storedRun],
        ([[item, lease, atCapacity, retained, conversation]]) =>
          Effect.gen(function* () {
            const store = yield* RunStore
            const runId = uuid<RunId>()
            // Generated runs must not compete with the host-less claim test's runs (see the top comment).
            const created = Math.max(0, DateTime.toEpochMillis(item.created_at))
            const run: StoredRun = {
              item: new RunItem({ ...item, run_id: runId, task_id: runId, created_at: at(created) }),
              team_uid: uid(),
              lease: lease === null ? null : { execution_id: uuid(), expires_at: lease.expires_at },
              at_capacity: atCapacity,
              sandbox_retained: retained,
              has_conversation: conversation
            }
            yield* store.create([{ run, events: creationEvents(run) }])
            const read = yield* store.get(runId)
            expect(Option.map(read, comparable)).toEqual(Option.some(comparable(run)))
            // A list's JSON of the run is the schema's encoding of the presented run.
            const q = query({ sort_by: "title" })
            const page = yield* store.listJson(q, viewerOf(run.team_uid, uid(), "admin"))
            expect(page.rows.map((r) => JSON.parse(r.json))).toEqual([encodeItem(presentRun(run))])
            const listRow = yield* page.rows[0]!.listRow
            expect(encodeCursor(q, listRow)).toBe(encodeCursor(q, runListRow(run)))
            // And alone, with what access decisions read of it.
            const alone = Option.getOrThrow(yield* store.getJson(runId))
            expect(JSON.parse(alone.json)).toEqual(encodeItem(presentRun(run)))
            expect(alone.owned).toEqual(runOwnership(run))
          }),
        { fastCheck: { numRuns: 200 } }
      )

      it.effect("an unknown run is none", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          expect(Option.isNone(yield* store.get(uuid()))).toBe(true)
        }))

      it.effect("states: the current state of each run asked for that exists, in one call", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const team = uid<TeamUid>()
          const creator = uid<PrincipalUid>()
          const runs = [makeRun({ team, creator, state: "QUEUED" }), makeRun({ team, creator, state: "SUCCEEDED" })]
          yield* createRuns(runs)
          const unknown = uuid<RunId>()
          const states = yield* store.states([runs[0]!.item.run_id, unknown, runs[1]!.item.run_id, runs[0]!.item.run_id])
          expect([...states.entries()].sort()).toEqual(
            [[runs[0]!.item.run_id, "QUEUED"], [runs[1]!.item.run_id, "SUCCEEDED"]].sort()
          )
          expect((yield* store.states([])).size).toBe(0)
        }))

      it.effect("several runs and their events are created together, and a failure writes none of them", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const team = uid<TeamUid>()
          const creator = uid<PrincipalUid>()
          const a = makeRun({ team, creator })
          const b = makeRun({ team, creator })
          yield* createRuns([a, b])
          expect((yield* store.timeline(a.item.run_id, 0)).map((e) => [e.sequence, e.event_type])).toEqual([
            [1, "run_created"],
            [2, "run_pending"]
          ])
          // c is new, a is not: the whole create fails and c is not written either.
          const c = makeRun({ team, creator })
          const failed = yield* Effect.either(createRuns([c, a]))
          expect(Either.isLeft(failed) && failed.left._tag).toBe("StorageError")
          expect(Option.isNone(yield* store.get(c.item.run_id))).toBe(true)
          expect(idsOf(yield* listAll(query(), viewerOf(team, creator))).sort()).toEqual(
            [a.item.run_id, b.item.run_id].sort()
          )
        }))

      it.effect("a run's audit entry is written with it, and a failed create writes neither", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const log = yield* AuditLog
          const team = uid<TeamUid>()
          const creator = uid<PrincipalUid>()
          const entryFor = (run: StoredRun) =>
            entryOf({ team, principal: creator, action: "run.create", resourceType: "run", resourceId: run.item.run_id, outcome: "succeeded", at: Date.now() })
          const entries = Effect.map(log.list({ team_uid: team, order: "oldest_first", limit: 10 }), (es) => es.map((e) => e.resource.id))
          const a = makeRun({ team, creator, state: "QUEUED" })
          yield* store.create([{ run: a, events: creationEvents(a), audit: yield* entryFor(a) }])
          expect(Option.isSome(yield* store.get(a.item.run_id))).toBe(true)
          expect(yield* entries).toEqual([a.item.run_id])
          // b's entry goes with b: a exists, the create fails, neither b nor its entry is written.
          const b = makeRun({ team, creator, state: "QUEUED" })
          const failed = yield* Effect.either(store.create([
            { run: b, events: creationEvents(b), audit: yield* entryFor(b) },
            { run: a, events: creationEvents(a) }
          ]))
          expect(Either.isLeft(failed)).toBe(true)
          expect(Option.isNone(yield* store.get(b.item.run_id))).toBe(true)
          expect(yield* entries).toEqual([a.item.run_id])
        }))
    })

    describe("list", () => {
      // Each case inserts up to 25 runs into a fresh team and pages through a few random queries
      // to the end, comparing every page with the oracle.
      it.effect.prop(
        "every page equals RunQuery.pageOf over the same runs (filters, sorts, visibility, cursors)",
        [fc.array(runSpec, { minLength: 3, maxLength: 25, size: "medium" }), fc.array(querySpec, { minLength: 1, maxLength: 3 })],
        ([specs, queries]) => checkPages(specs, queries),
        { fastCheck: { numRuns: 200 }, timeout: 60_000 }
      )

      it.effect.prop(
        "search: exact terms or trigram similarity to the title, prompt or skill spec, ranked, as RunQuery.pageOf says",
        [fc.array(runSpec, { minLength: 3, maxLength: 25, size: "medium" }), fc.array(searchSpec, { minLength: 1, maxLength: 3 })],
        ([specs, queries]) => checkPages(specs, queries),
        { fastCheck: { numRuns: 200 }, timeout: 60_000 }
      )

      it.effect("every filter, by example", () =>
        Effect.gen(function* () {
          const team = uid<TeamUid>()
          const [alice, bob] = [uid<PrincipalUid>(), uid<PrincipalUid>()]
          const env = uid<EnvironmentUid>()
          const schedule = uid<ScheduleId>()
          const t = 1_700_000_100_000
          const root = makeRun({ team, creator: alice, created_at: t, title: "Root task", state: "SUCCEEDED" })
          const child = makeRun({ team, creator: alice, created_at: t + 1, parent: root, environment: env })
          const grandchild = makeRun({
            team,
            creator: bob,
            created_at: t + 2,
            parent: child,
            prompt: "Deploy the SERVICE to staging",
            skill: "deploy",
            skill_spec: "acme/ops:deploy",
            artifacts: ["PULL_REQUEST"],
            metadata: { env: "staging", owner: "ops" },
            state: "QUEUED"
          })
          const other = makeRun({
            team,
            creator: bob,
            executor: alice,
            created_at: t + 3,
            updated_at: t + 10,
            title: "Service review",
            name: "reviewer",
            model_id: "m-large",
            schedule,
            source: "SCHEDULED_AGENT",
            execution_location: "LOCAL",
            metadata: { env: "prod", owner: "ops" },
            artifacts: ["PLAN", "FILE"]
          })
          yield* createRuns([root, child, grandchild, other])
          const viewer = viewerOf(team, alice, "admin")
          const ids = (filters: Partial<RunListFilters>) => listedIds(query({ filters }), viewer)
          const set = (...runs: ReadonlyArray<StoredRun>) => new Set(idsOf(runs))

          expect(yield* ids({})).toEqual(set(root, child, grandchild, other))
          expect(yield* ids({ states: ["QUEUED", "SUCCEEDED"] })).toEqual(set(root, grandchild))
          expect(yield* ids({ name: "reviewer" })).toEqual(set(other))
          expect(yield* ids({ model_id: "m-large" })).toEqual(set(other))
          expect(yield* ids({ creator: bob })).toEqual(set(grandchild, other))
          expect(yield* ids({ executor: alice })).toEqual(set(root, child, other))
          expect(yield* ids({ source: "SCHEDULED_AGENT" })).toEqual(set(other))
          expect(yield* ids({ execution_location: "LOCAL" })).toEqual(set(other))
          expect(yield* ids({ created_after: t + 1 })).toEqual(set(grandchild, other))
          expect(yield* ids({ created_before: t + 1 })).toEqual(set(root))
          expect(yield* ids({ created_after: t, created_before: t + 3 })).toEqual(set(child, grandchild))
          expect(yield* ids({ updated_after: t + 3 })).toEqual(set(other))
          expect(yield* ids({ environment: { _tag: "Environment", uid: env } })).toEqual(set(child))
          expect(yield* ids({ environment: { _tag: "NoEnvironment" } })).toEqual(set(root, grandchild, other))
          expect(yield* ids({ skill_spec: "acme/ops:deploy" })).toEqual(set(grandchild))
          expect(yield* ids({ schedule_id: schedule })).toEqual(set(other))
          // Descendants at any depth: the grandchild is two levels below the root.
          expect(yield* ids({ ancestor_run_id: root.item.run_id })).toEqual(set(child, grandchild))
          expect(yield* ids({ ancestor_run_id: child.item.run_id })).toEqual(set(grandchild))
          expect(yield* ids({ ancestor_run_id: grandchild.item.run_id })).toEqual(set())
          // Metadata pairs combine with AND.
          expect(yield* ids({ metadata: [["owner", "ops"]] })).toEqual(set(grandchild, other))
          expect(yield* ids({ metadata: [["env", "prod"], ["owner", "ops"]] })).toEqual(set(other))
          expect(yield* ids({ metadata: [["env", "staging"], ["owner", "nobody"]] })).toEqual(set())
          expect(yield* ids({ artifact_type: "PLAN" })).toEqual(set(other))
          expect(yield* ids({ artifact_type: "EXTERNAL_REFERENCE" })).toEqual(set())
          // q: every term, case-insensitively, in the title, the prompt or the skill spec...
          expect(yield* ids({ q: ["service"] })).toEqual(set(grandchild, other))
          expect(yield* ids({ q: ["acme/ops", "deploy"] })).toEqual(set(grandchild))
          expect(yield* ids({ q: ["%"] })).toEqual(set())
          // ...or similar enough (trigram similarity at least 0.3): "service staging" is 0.35 similar
          // to "Service review", "root service" 0.47 (and 0.28 to "Root task", too little).
          expect(yield* ids({ q: ["service", "staging"] })).toEqual(set(grandchild, other))
          expect(yield* ids({ q: ["root", "service"] })).toEqual(set(other))
        }))

      it.effect("fuzzy q: a typo finds the run, runs rank by trigram similarity, none below 0.3; cursors page the ranking", () =>
        Effect.gen(function* () {
          const team = uid<TeamUid>()
          const alice = uid<PrincipalUid>()
          const viewer = viewerOf(team, alice, "admin")
          const t = 1_700_000_200_000
          const run = (created: number, title: string, prompt = "do the thing") =>
            makeRun({ team, creator: alice, created_at: t + created, title, prompt })
          // Similarity to "flakey login" (pg_trgm's): 1 for the exact match in a prompt, then
          // 0.67, 0.38, 0.33; 0.27 and 0.03 are below the threshold.
          const page = run(0, "login page")
          const exact = run(1, "Known issue", "see the flakey login report")
          const test = run(2, "Fix the flaky login test")
          const login = run(3, "Flaky login")
          const logout = run(4, "Flaky logout button")
          const changelog = run(5, "Update the changelog")
          const deploy = run(6, "Deploy the service")
          const deployWeb = run(7, "Deploy the web service to production")
          yield* createRuns([page, exact, test, login, logout, changelog, deploy, deployWeb])
          const ids = (q: RunListQuery) => Effect.map(listAll(q, viewer), idsOf)
          const flakey = { q: ["flakey", "login"] }

          // A typo'd query finds the run (0.375 similar), not one only 0.22 similar.
          expect(yield* ids(query({ sort_by: "relevance", sort_order: "desc", filters: { q: ["deplyo", "servce"] } })))
            .toEqual(idsOf([deploy]))
          // Most relevant first, one run a page: every cursor carries the relevance.
          expect(yield* ids(query({ sort_by: "relevance", sort_order: "desc", limit: 1, filters: flakey })))
            .toEqual(idsOf([exact, login, test, page]))
          expect(yield* ids(query({ sort_by: "relevance", sort_order: "asc", limit: 2, filters: flakey })))
            .toEqual(idsOf([page, test, login, exact]))
          // With another sort, q only filters.
          expect(yield* ids(query({ sort_by: "created_at", sort_order: "asc", limit: 3, filters: flakey })))
            .toEqual(idsOf([page, exact, test, login]))
          // Equal relevance (every prompt holds "the"): ties by run id in the sort's direction.
          expect(yield* ids(query({ sort_by: "relevance", sort_order: "desc", limit: 3, filters: { q: ["the"] } })))
            .toEqual(idsOf([deployWeb, deploy, changelog, logout, login, test, exact, page]))
        }))

      it.effect("sort by agent: by skill name in code-point order, skill-less runs last in both orders", () =>
        Effect.gen(function* () {
          const team = uid<TeamUid>()
          const creator = uid<PrincipalUid>()
          const t = 1_700_000_200_000
          const runs = [null, "b", "B", "ä", "z", null, "😀", "\uFF5A"].map((skill, i) =>
            makeRun({ team, creator, skill, created_at: t + i })
          )
          yield* createRuns(runs)
          const viewer = viewerOf(team, creator)
          const names = (sort_order: SortOrder) =>
            Effect.map(listAll(query({ sort_by: "agent", sort_order, limit: 2 }), viewer), (rs) =>
              rs.map((r) => r.item.agent_skill?.name ?? null)
            )
          expect((yield* names("asc")).slice(0, 6)).toEqual(["B", "b", "z", "ä", "\uFF5A", "😀"])
          expect((yield* names("desc")).slice(0, 6)).toEqual(["😀", "\uFF5A", "ä", "z", "b", "B"])
          expect((yield* names("asc")).slice(6)).toEqual([null, null])
          expect((yield* names("desc")).slice(6)).toEqual([null, null])
        }))

      it.effect("countByState: every state (zeros included) of the runs the list selects, whatever its sort and page", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const [team, otherTeam] = [uid<TeamUid>(), uid<TeamUid>()]
          const [alice, bob] = [uid<PrincipalUid>(), uid<PrincipalUid>()]
          yield* createRuns([
            makeRun({ team, creator: alice, state: "QUEUED", title: "Deploy web" }),
            makeRun({ team, creator: alice, state: "QUEUED", title: "Deploy api", metadata: { env: "prod" } }),
            makeRun({ team, creator: alice, state: "FAILED", title: "Review docs", metadata: { env: "prod" } }),
            makeRun({ team, creator: bob, teamScope: false, state: "SUCCEEDED", title: "Deploy worker" }),
            makeRun({ team: otherTeam, creator: alice, teamScope: true, state: "QUEUED" })
          ])
          const admin = viewerOf(team, alice, "admin")
          expect(yield* store.countByState(query(), admin)).toEqual(stateCounts([["QUEUED", 2], ["FAILED", 1], ["SUCCEEDED", 1]]))
          // A member does not count another member's User-scoped run; the list does not show it either.
          expect(yield* store.countByState(query(), viewerOf(team, alice, "member"))).toEqual(
            stateCounts([["QUEUED", 2], ["FAILED", 1]])
          )
          // Filters, the search and the state filter narrow the counts; sort, limit and cursor do not.
          const filtered = query({ limit: 1, sort_by: "title", sort_order: "desc", filters: { metadata: [["env", "prod"]] } })
          expect(yield* store.countByState(filtered, admin)).toEqual(stateCounts([["QUEUED", 1], ["FAILED", 1]]))
          expect(yield* store.countByState(query({ filters: { q: ["deploy"] } }), admin)).toEqual(
            stateCounts([["QUEUED", 2], ["SUCCEEDED", 1]])
          )
          expect(yield* store.countByState(query({ filters: { states: ["FAILED", "SUCCEEDED"] } }), admin)).toEqual(
            stateCounts([["FAILED", 1], ["SUCCEEDED", 1]])
          )
          const none = yield* store.countByState(query(), viewerOf(uid<TeamUid>(), alice, "admin"))
          expect(none).toEqual(stateCounts())
          expect(Object.keys(none).sort()).toEqual([...RunState.literals].sort())
        }))

      it.effect("visibility: others' User-scoped runs are hidden from members, shown to admins; other teams never", () =>
        Effect.gen(function* () {
          const [team, otherTeam] = [uid<TeamUid>(), uid<TeamUid>()]
          const [alice, bob] = [uid<PrincipalUid>(), uid<PrincipalUid>()]
          const alicePrivate = makeRun({ team, creator: alice, teamScope: false })
          const aliceShared = makeRun({ team, creator: alice, teamScope: true })
          const bobPrivate = makeRun({ team, creator: bob, teamScope: false })
          const elsewhere = makeRun({ team: otherTeam, creator: alice, teamScope: true })
          yield* createRuns([alicePrivate, aliceShared, bobPrivate, elsewhere])
          const set = (...runs: ReadonlyArray<StoredRun>) => new Set(idsOf(runs))
          expect(yield* listedIds(query(), viewerOf(team, alice, "member"))).toEqual(set(alicePrivate, aliceShared))
          expect(yield* listedIds(query(), viewerOf(team, bob, "viewer"))).toEqual(set(aliceShared, bobPrivate))
          expect(yield* listedIds(query(), viewerOf(team, bob, "admin"))).toEqual(
            set(alicePrivate, aliceShared, bobPrivate)
          )
          expect(yield* listedIds(query(), { ...viewerOf(otherTeam, bob, "admin"), instance_admin: true })).toEqual(
            set(elsewhere)
          )
        }))

      it.effect("paging never skips or repeats a run that exists throughout, while runs are inserted", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          for (const sort_by of ["updated_at", "created_at", "title", "agent"] as const) {
            for (const sort_order of ["asc", "desc"] as const) {
              const team = uid<TeamUid>()
              const creator = uid<PrincipalUid>()
              const t = 1_700_000_300_000
              const fact = (i: number) => ({
                team,
                creator,
                created_at: t + (i % 7),
                updated_at: t + (i % 5),
                title: ["m", "a", "z", "mm"][i % 4]!,
                skill: i % 3 === 0 ? null : ["k", "c", "x"][i % 3]!
              })
              const initial = Array.from({ length: 30 }, (_, i) => makeRun(fact(i)))
              yield* createRuns(initial)
              const inserter = yield* Effect.fork(
                Effect.forEach(
                  Array.from({ length: 30 }, (_, i) => i),
                  (i) => Effect.zipRight(createRuns([makeRun(fact(i * 7 + 3))]), Effect.yieldNow()),
                  { discard: true }
                )
              )
              const seen: Array<RunId> = []
              let current = query({ sort_by, sort_order, limit: 4 })
              for (;;) {
                const page = yield* store.list(current, viewerOf(team, creator))
                seen.push(...idsOf(page.rows))
                yield* Effect.yieldNow()
                if (page.page_info.next_cursor === undefined) break
                current = nextQuery(current, page.page_info.next_cursor)
              }
              yield* Fiber.join(inserter)
              expect(new Set(seen).size).toBe(seen.length)
              for (const run of initial) expect(seen).toContain(run.item.run_id)
            }
          }
        }))
    })

    describe("overview", () => {
      it.effect("overviewRuns: the team's runs created at or after a time, newest first, with their state and when each was created, started and ended", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const team = uid<TeamUid>()
          const creator = uid<PrincipalUid>()
          const t = 1_700_000_000_000
          const timed = (state: RunState, created: number, updated: number, started: number | null, ended: number | null): StoredRun => {
            const run = makeRun({ team, creator, state, created_at: created, updated_at: updated })
            return {
              ...run,
              item: new RunItem({
                ...run.item,
                started_at: started === null ? null : at(started),
                ended_at: ended === null ? null : at(ended)
              })
            }
          }
          // Created before the window, though changed in it: left out.
          const old = timed("FAILED", t - 5_000, t + 3_000, t - 4_000, t + 3_000)
          const ended = timed("SUCCEEDED", t, t + 9_000, t + 1_000, t + 9_000)
          const running = timed("INPROGRESS", t + 1_000, t + 2_000, t + 1_500, null)
          const queued = timed("QUEUED", t + 4_000, t + 4_000, null, null)
          yield* createRuns([old, ended, running, queued, makeRun({ team: uid(), creator, state: "QUEUED", created_at: t + 5_000 })])
          const admin: Viewer = { principal_uid: uid(), team_uid: team, role: "admin", instance_admin: false }
          expect(yield* store.overviewRuns(admin, t, 10)).toEqual([
            { state: "QUEUED", created_at: t + 4_000, started_at: null, ended_at: null },
            { state: "INPROGRESS", created_at: t + 1_000, started_at: t + 1_500, ended_at: null },
            { state: "SUCCEEDED", created_at: t, started_at: t + 1_000, ended_at: t + 9_000 }
          ])
          expect((yield* store.overviewRuns(admin, t, 2)).map((r) => r.state)).toEqual(["QUEUED", "INPROGRESS"])
          // A member sees the team's runs and its own personal ones, as in the list.
          const mine = makeRun({ team, creator, state: "QUEUED", created_at: t + 6_000, teamScope: false })
          const theirs = makeRun({ team, creator: uid(), state: "QUEUED", created_at: t + 7_000, teamScope: false })
          yield* createRuns([mine, theirs])
          const member: Viewer = { principal_uid: creator, team_uid: team, role: "member", instance_admin: false }
          expect((yield* store.overviewRuns(member, t + 4_000, 10)).map((r) => r.created_at)).toEqual([t + 6_000, t + 4_000])
        }))
    })

    describe("update", () => {
      it.effect("replaces the run when the guard holds; metadata, ancestors and artifacts are kept", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const team = uid<TeamUid>()
          const creator = uid<PrincipalUid>()
          const parent = makeRun({ team, creator })
          const run = makeRun({ team, creator, parent, metadata: { k: "v" }, artifacts: ["PLAN"], state: "QUEUED" })
          yield* createRuns([parent, run])
          const later = DateTime.toEpochMillis(run.item.created_at) + 5_000
          const next: StoredRun = {
            ...run,
            item: new RunItem({
              ...run.item,
              state: "SUCCEEDED",
              title: "renamed",
              updated_at: at(later),
              ended_at: at(later),
              status_message: { message: "done" },
              metadata: { other: "x" },
              ancestor_run_ids: [],
              artifacts: [],
              request_usage: { input_tokens: 10, output_tokens: 20, inference_cost: 0.25, compute_cost: 1.5 }
            }),
            sandbox_retained: true,
            has_conversation: true
          }
          yield* store.update(run.item.run_id, { state: "QUEUED" }, next, [
            { event_type: "run_succeeded", occurred_at: later, execution_id: uuid(), message: "ok", data: { n: 1 } }
          ])
          const read = yield* getRun(run.item.run_id)
          const expected: StoredRun = {
            ...next,
            item: new RunItem({
              ...next.item,
              metadata: run.item.metadata,
              ancestor_run_ids: run.item.ancestor_run_ids,
              artifacts: run.item.artifacts
            })
          }
          expect(comparable(read)).toEqual(comparable(expected))
          const events = yield* store.timeline(run.item.run_id, 2)
          expect(events.map((e) => [e.sequence, e.event_type, e.message, e.data])).toEqual([
            [3, "run_succeeded", "ok", { n: 1 }]
          ])
          // The filter tables follow what is kept, and the title and search follow the update.
          const viewer = viewerOf(team, creator)
          expect(yield* listedIds(query({ filters: { metadata: [["k", "v"]] } }), viewer)).toEqual(
            new Set([run.item.run_id])
          )
          expect(yield* listedIds(query({ filters: { q: ["renamed"] } }), viewer)).toEqual(new Set([run.item.run_id]))
          expect(yield* listedIds(query({ filters: { states: ["SUCCEEDED"] } }), viewer)).toEqual(
            new Set([run.item.run_id])
          )
        }))

      it.effect("a guard that no longer holds is a StaleWrite and changes nothing", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const run = makeRun({ team: uid(), creator: uid(), state: "QUEUED" })
          yield* createRuns([run])
          const next = { ...run, item: new RunItem({ ...run.item, state: "CANCELLED" }) }
          const stale = yield* Effect.flip(
            store.update(run.item.run_id, { state: "PENDING" }, next, [
              { event_type: "run_cancelled", occurred_at: 1, execution_id: uuid() }
            ])
          )
          expect(stale._tag).toBe("StaleWrite")
          const missing = yield* Effect.flip(store.update(uuid(), { state: "QUEUED" }, next, []))
          expect(missing._tag).toBe("StaleWrite")
          expect((yield* getRun(run.item.run_id)).item.state).toBe("QUEUED")
          expect((yield* store.timeline(run.item.run_id, 0)).length).toBe(2)
        }))

      it.effect("a write from the holder's copy applies while the run is as the copy; any other write of it since makes it stale", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const host = `copy-${uid()}`
          const run = makeRun({ team: uid(), creator: uid(), state: "QUEUED", worker_host: host, created_at: 1000 })
          yield* createRuns([run])
          const runId = run.item.run_id
          const claimed = Option.getOrThrow(yield* store.claim({ worker_host: host, execution_id: uuid(), now: 2_000, lease_ms: 60_000 }))
          const holder = claimed.lease!.execution_id
          const guard = (copy: StoredRun) => ({ state: copy.item.state, execution_id: holder, expected: copy })
          const moved = (copy: StoredRun, state: RunState, title: string, at: number) => ({
            ...copy,
            item: new RunItem({ ...copy.item, state, title, updated_at: DateTime.unsafeMake(at) })
          })
          // The claimed run as the store answered it: the copy holds.
          const started = moved(claimed, "INPROGRESS", "started", 3_000)
          yield* store.update(runId, guard(claimed), started, [])
          // The copy is what was written: it holds again.
          const reported = moved(started, "INPROGRESS", "reported", 4_000)
          yield* store.update(runId, guard(started), reported, [])
          const stale = (copy: StoredRun) =>
            Effect.map(Effect.flip(store.update(runId, guard(copy), moved(copy, "SUCCEEDED", "ended", 9_000), [])), (e) => e._tag)
          // A copy from before the last write: stale, and nothing written.
          expect(yield* stale(started)).toBe("StaleWrite")
          expect((yield* getRun(runId)).item.title).toBe("reported")
          // A lease renewal since: stale.
          yield* store.renewLease(runId, holder, 70_000)
          expect(yield* stale(reported)).toBe("StaleWrite")
          const renewed = { ...reported, lease: { execution_id: holder, expires_at: 70_000 } }
          // Another writer's update (same state, same holder) since: stale.
          yield* store.update(runId, { state: "INPROGRESS", execution_id: holder }, moved(renewed, "INPROGRESS", "by another", 5_000), [])
          expect(yield* stale(renewed)).toBe("StaleWrite")
          expect((yield* getRun(runId)).item.title).toBe("by another")
          // Its metadata and artifacts are not part of the copy: an artifact added since changes nothing.
          const current = yield* getRun(runId)
          yield* store.addArtifact(runId, { artifact_type: "PLAN", created_at: DateTime.unsafeMake(6_000), data: { document_uid: "d", notebook_uid: "n", title: "t" } } as Artifact)
          yield* store.update(runId, guard(current), moved(current, "SUCCEEDED", "ended", 9_000), [])
          const ended = yield* getRun(runId)
          expect([ended.item.state, ended.item.title, ended.item.artifacts.length]).toEqual(["SUCCEEDED", "ended", 1])
        }))

      it.effect("concurrent guarded writers: one wins, the others are StaleWrite", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const run = makeRun({ team: uid(), creator: uid(), state: "PENDING" })
          yield* createRuns([run])
          const results = yield* Effect.forEach(
            Array.from({ length: 8 }, (_, i) => i),
            (i) =>
              Effect.either(
                store.update(
                  run.item.run_id,
                  { state: "PENDING" },
                  { ...run, item: new RunItem({ ...run.item, state: "QUEUED", title: `winner ${i}` }) },
                  [{ event_type: "run_queued", occurred_at: 1, execution_id: uuid() }]
                )
              ),
            { concurrency: "unbounded" }
          )
          const winners = results.flatMap((r, i) => (Either.isRight(r) ? [i] : []))
          expect(winners.length).toBe(1)
          expect(results.filter((r) => Either.isLeft(r) && r.left._tag === "StaleWrite").length).toBe(7)
          expect((yield* getRun(run.item.run_id)).item.title).toBe(`winner ${winners[0]}`)
          expect((yield* store.timeline(run.item.run_id, 0)).map((e) => e.sequence)).toEqual([1, 2, 3])
        }))

      it.effect("timeline sequences stay strictly increasing and gapless under concurrent appends", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const host = `host-${uid()}`
          const run = makeRun({ team: uid(), creator: uid(), state: "QUEUED", worker_host: host })
          yield* createRuns([run])
          const execution = uuid<ExecutionId>()
          const claimed = yield* store.claim({ worker_host: host, execution_id: execution, now: LATER, lease_ms: HOUR })
          const current = Option.getOrThrow(claimed)
          yield* Effect.forEach(
            Array.from({ length: 12 }, (_, i) => i),
            (i) =>
              store.update(run.item.run_id, { state: "CLAIMED", execution_id: execution }, current, [
                { event_type: "environment_setup_started", occurred_at: LATER + i, execution_id: execution },
                { event_type: "environment_setup_succeeded", occurred_at: LATER + i, execution_id: execution }
              ]),
            { concurrency: "unbounded", discard: true }
          )
          const events = yield* store.timeline(run.item.run_id, 0)
          expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: 27 }, (_, i) => i + 1))
          // Each writer's two events are adjacent: appends do not interleave.
          for (let i = 3; i < events.length; i += 2) {
            expect([events[i]!.event_type, events[i + 1]!.event_type]).toEqual([
              "environment_setup_started",
              "environment_setup_succeeded"
            ])
            expect(events[i]!.occurred_at).toEqual(events[i + 1]!.occurred_at)
          }
          expect((yield* store.timeline(run.item.run_id, 25)).map((e) => e.sequence)).toEqual([26, 27])
        }))
    })

    describe("claim and leases", () => {
      it.effect("claims the oldest QUEUED run of its worker host, with a lease and a run_claimed event", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const { creator, host, queued, t, team } = hostQueue()
          const newer = queued(t + 5)
          const older = queued(t)
          const tieA = queued(t + 2)
          const tieB = queued(t + 2)
          const pending = makeRun({ team, creator, state: "PENDING", worker_host: host, created_at: t - 10 })
          const elsewhere = makeRun({ team, creator, state: "QUEUED", worker_host: `${host}-2`, created_at: t - 10 })
          yield* createRuns([newer, older, tieA, tieB, pending, elsewhere])
          const ties = [tieA, tieB].sort((a, b) => (a.item.run_id < b.item.run_id ? -1 : 1))
          const now = LATER
          const claims: Array<StoredRun> = []
          for (let i = 0; i < 5; i++) {
            const execution_id = uuid<ExecutionId>()
            const claimed = yield* store.claim({ worker_host: host, execution_id, now: now + i, lease_ms: HOUR })
            if (Option.isSome(claimed)) {
              expect(claimed.value.lease).toEqual({ execution_id, expires_at: now + i + HOUR })
              expect(claimed.value.item.state).toBe("CLAIMED")
              expect(DateTime.toEpochMillis(claimed.value.item.updated_at)).toBe(now + i)
              expect(comparable(yield* getRun(claimed.value.item.run_id))).toEqual(comparable(claimed.value))
              const events = yield* store.timeline(claimed.value.item.run_id, 2)
              expect(events.map((e) => [e.sequence, e.event_type, e.execution_id])).toEqual([
                [3, "run_claimed", execution_id]
              ])
              claims.push(claimed.value)
            }
          }
          expect(idsOf(claims)).toEqual(idsOf([older, ...ties, newer]))
          expect((yield* getRun(pending.item.run_id)).item.state).toBe("PENDING")
          expect((yield* getRun(elsewhere.item.run_id)).item.state).toBe("QUEUED")
        }))

      it.effect("a claim without worker host takes only runs without one (an empty host counts as none)", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const team = uid<TeamUid>()
          const creator = uid<PrincipalUid>()
          // Before 1970: older than every other QUEUED run the suite writes (see the top comment).
          const hosted = makeRun({ team, creator, state: "QUEUED", worker_host: "somewhere", created_at: -4000 })
          const first = makeRun({ team, creator, state: "QUEUED", created_at: -3000 })
          // Of another team: after a claim, a team's next claim waits for the teams not yet served
          // (fair share across teams: FairShareSuite.ts).
          const second = makeRun({ team: uid(), creator, state: "QUEUED", worker_host: "", created_at: -2000 })
          yield* createRuns([hosted, first, second])
          const claim = () => store.claim({ worker_host: null, execution_id: uuid(), now: LATER, lease_ms: HOUR })
          const a = yield* claim()
          const b = yield* claim()
          expect([a, b].map((c) => Option.map(c, (r) => r.item.run_id))).toEqual([
            Option.some(first.item.run_id),
            Option.some(second.item.run_id)
          ])
          expect((yield* getRun(hosted.item.run_id)).item.state).toBe("QUEUED")
        }))

      it.effect("within what a claim may take, a higher priority goes first, then age", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const { host, queued, t, team } = hostQueue()
          const old = queued(t)
          const urgent = queued(t + 3, 10)
          const urgentOlder = queued(t + 2, 10)
          const low = queued(t - 5, -10)
          const newer = queued(t + 1)
          yield* createRuns([old, urgent, urgentOlder, low, newer])
          const claims: Array<StoredRun> = []
          for (let i = 0; i < 5; i++) {
            const claimed = yield* store.claim({ worker_host: host, team_uid: team, execution_id: uuid(), now: LATER, lease_ms: HOUR })
            claims.push(Option.getOrThrow(claimed))
          }
          expect(idsOf(claims)).toEqual(idsOf([urgentOlder, urgent, old, newer, low]))
        }))

      it.effect("claims are exclusive and do not stall each other: 8 fibers × 5 claims take 40 runs, each once", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const team = uid<TeamUid>()
          const creator = uid<PrincipalUid>()
          const host = `host-${uid()}`
          const runs = Array.from({ length: 40 }, (_, i) =>
            makeRun({ team, creator, state: "QUEUED", worker_host: host, created_at: 1_700_000_500_000 + (i % 4) })
          )
          yield* createRuns(runs)
          const claimOne = Effect.gen(function* () {
            const execution_id = uuid<ExecutionId>()
            const claimed = yield* store.claim({ worker_host: host, execution_id, now: LATER, lease_ms: HOUR })
            return Option.map(claimed, (run) => ({ run, execution_id }))
          })
          // As many claims as runs: while one is under way, another claimer must find a run that
          // is not being claimed (on PostgreSQL: SKIP LOCKED), so every claim gets one.
          const perFiber = yield* Effect.all(
            Array.from({ length: 8 }, () => Effect.all(Array.from({ length: 5 }, () => claimOne))),
            { concurrency: "unbounded" }
          )
          const claims = perFiber.flat()
          expect(claims.filter(Option.isNone).length).toBe(0)
          const got = claims.flatMap((c) => (Option.isSome(c) ? [c.value] : []))
          expect(new Set(got.map((c) => c.run.item.run_id))).toEqual(new Set(idsOf(runs)))
          for (const { execution_id, run } of got) {
            expect(run.lease?.execution_id).toBe(execution_id)
            const events = yield* store.timeline(run.item.run_id, 0)
            expect(events.filter((e) => e.event_type === "run_claimed").map((e) => e.execution_id)).toEqual([
              execution_id
            ])
          }
          expect(Option.isNone(yield* claimOne)).toBe(true)
          expect((yield* store.admission(team)).active).toBe(40)
        }))

      it.effect("fencing and the lease sweep: an executor that lost its lease can never overwrite the run", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const host = `host-${uid()}`
          const run = makeRun({ team: uid(), creator: uid(), state: "QUEUED", worker_host: host, created_at: 1000 })
          yield* createRuns([run])
          const runId = run.item.run_id
          const claimAt = (now: number) =>
            Effect.map(
              store.claim({ worker_host: host, execution_id: uuid(), now, lease_ms: 1000 }),
              Option.getOrThrow
            )
          const expiredIds = (now: number) =>
            Effect.map(store.expiredLeases(now, 10_000), (runs) => runs.map((r) => r.item.run_id))

          // Attempt 1: claimed at 10 000, lease until 11 000.
          const first = yield* claimAt(10_000)
          const e1 = first.lease!.execution_id
          yield* store.renewLease(runId, e1, 11_000)
          expect(yield* expiredIds(10_999)).not.toContain(runId)
          expect(yield* expiredIds(11_000)).toContain(runId)

          // The sweep: LeaseExpired through the state machine, written guarded by the old holder.
          const [expired] = (yield* store.expiredLeases(11_000, 10_000)).filter((r) => r.item.run_id === runId)
          const requeued = yield* apply(expired!, RunEvent.LeaseExpired({ executionId: e1 }), 11_000, e1)
          expect(requeued.item.state).toBe("QUEUED")
          expect(requeued.item.attempt).toBe(2)
          expect(requeued.lease).toBeNull()
          expect(yield* expiredIds(20_000)).not.toContain(runId)

          // The old holder wakes up: every write it attempts is refused.
          const stale = { ...first, item: new RunItem({ ...first.item, state: "SUCCEEDED" }) }
          const done = [{ event_type: "run_succeeded" as const, occurred_at: 11_001, execution_id: e1 }]
          expect((yield* Effect.flip(store.update(runId, { state: "CLAIMED", execution_id: e1 }, stale, done)))._tag)
            .toBe("StaleWrite")
          expect((yield* Effect.flip(store.renewLease(runId, e1, 99_000)))._tag).toBe("StaleWrite")

          // Attempt 2 under a new lease: the state is CLAIMED again, yet the old holder is still fenced off.
          const second = yield* claimAt(12_000)
          const e2 = second.lease!.execution_id
          expect(second.item.attempt).toBe(2)
          expect((yield* Effect.flip(store.update(runId, { state: "CLAIMED", execution_id: e1 }, stale, done)))._tag)
            .toBe("StaleWrite")
          expect((yield* Effect.flip(store.renewLease(runId, e1, 99_000)))._tag).toBe("StaleWrite")
          expect((yield* getRun(runId)).lease?.execution_id).toBe(e2)

          // Attempts 2 and 3 are lost as well: the third expiry ends the run ERROR.
          const third = yield* apply(second, RunEvent.LeaseExpired({ executionId: e2 }), 13_000, e2).pipe(
            Effect.zipRight(claimAt(14_000))
          )
          expect(third.item.attempt).toBe(3)
          const ended = yield* apply(
            third,
            RunEvent.LeaseExpired({ executionId: third.lease!.execution_id }),
            15_000,
            third.lease!.execution_id
          )
          expect(ended.item.state).toBe("ERROR")
          const read = yield* getRun(runId)
          expect(read.item.state).toBe("ERROR")
          expect(read.item.status_message?.error_code).toBe("resource_unavailable")
          expect(read.lease).toBeNull()
          expect((yield* store.timeline(runId, 0)).map((e) => e.event_type)).toEqual([
            "run_created",
            "run_pending",
            "run_claimed",
            "lease_expired",
            "requeued",
            "run_claimed",
            "lease_expired",
            "requeued",
            "run_claimed",
            "lease_expired",
            "run_errored"
          ])
        }))

      it.effect("expired leases come oldest expiry first, up to the limit", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const host = `host-${uid()}`
          const runs = [0, 1, 2].map((i) =>
            makeRun({ team: uid(), creator: uid(), state: "QUEUED", worker_host: host, created_at: 2000 + i })
          )
          yield* createRuns(runs)
          // Claimed in order, with leases ending 30 000, 20 000, 25 000.
          for (const [now, lease_ms] of [[5_000, 25_000], [5_001, 14_999], [5_002, 19_998]] as const) {
            yield* store.claim({ worker_host: host, execution_id: uuid(), now, lease_ms })
          }
          const mine = new Set(idsOf(runs))
          const expired = (yield* store.expiredLeases(30_000, 10_000)).filter((r) => mine.has(r.item.run_id))
          expect(expired.map((r) => r.lease?.expires_at)).toEqual([20_000, 25_000, 30_000])
          expect(idsOf(expired)).toEqual(idsOf([runs[1]!, runs[2]!, runs[0]!]))
        }))

      it.effect("admission counts QUEUED, CLAIMED and INPROGRESS and says whether a run is PENDING; pending lists PENDING runs oldest first", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const team = uid<TeamUid>()
          const creator = uid<PrincipalUid>()
          const t = 1_700_000_600_000
          const runs = RunState.literals.map((state, i) => makeRun({ team, creator, state, created_at: t + 10 - i }))
          const olderPending = makeRun({ team, creator, state: "PENDING", created_at: t - 100 })
          const otherTeam = makeRun({ team: uid(), creator, state: "QUEUED" })
          yield* createRuns([...runs, olderPending, otherTeam])
          const pendingRun = runs.find((r) => r.item.state === "PENDING")!
          expect(idsOf(yield* store.pending(team, 10))).toEqual(idsOf([olderPending, pendingRun]))
          expect(idsOf(yield* store.pending(team, 1))).toEqual(idsOf([olderPending]))
          const waiting = yield* store.waitingTeams(100_000)
          expect(waiting.filter((t) => t === team)).toEqual([team])
          expect(waiting).not.toContain(otherTeam.team_uid)
          expect(yield* store.admission(team)).toEqual({ active: 3, waiting: true })
          expect(yield* store.admission(otherTeam.team_uid)).toEqual({ active: 1, waiting: false })
          expect(yield* store.admission(uid())).toEqual({ active: 0, waiting: false })
        }))

      it.effect("a new QUEUED run, or a run requeued by update, signals a wake-up", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const waitForSignal = <E>(trigger: Effect.Effect<void, E, RunStore>) =>
            Effect.gen(function* () {
              const listener = yield* Effect.fork(Stream.runHead(store.wakeups))
              // Give the listener time to subscribe (on PostgreSQL: to LISTEN on its connection).
              yield* Effect.sleep("200 millis")
              yield* trigger
              return yield* Fiber.join(listener).pipe(Effect.timeoutOption("5 seconds"), Effect.map(Option.flatten))
            })
          const run = makeRun({ team: uid(), creator: uid(), state: "QUEUED", worker_host: `host-${uid()}` })
          expect(Option.isSome(yield* waitForSignal(createRuns([run])))).toBe(true)
          const pendingRun = makeRun({ team: uid(), creator: uid(), state: "PENDING", worker_host: `host-${uid()}` })
          yield* createRuns([pendingRun])
          const requeue = store.update(
            pendingRun.item.run_id,
            { state: "PENDING" },
            { ...pendingRun, item: new RunItem({ ...pendingRun.item, state: "QUEUED" }) },
            []
          )
          expect(Option.isSome(yield* waitForSignal(requeue))).toBe(true)
        }))
    })

    describe("exactly-once keys", () => {
      it.effect("the same schedule tick twice creates one run; the second create writes nothing", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const team = uid<TeamUid>()
          const creator = uid<PrincipalUid>()
          const key: ExactlyOnceKey = { _tag: "ScheduleTick", schedule_id: uid(), scheduled_for: 1_700_000_700_000 }
          const first = makeRun({ team, creator, state: "QUEUED" })
          const second = makeRun({ team, creator, state: "QUEUED" })
          yield* createRuns([first], key)
          const duplicate = yield* Effect.flip(createRuns([second], key))
          expect(duplicate).toMatchObject({ _tag: "DuplicateKey", key })
          expect(Option.isNone(yield* store.get(second.item.run_id))).toBe(true)
          expect(yield* store.timeline(second.item.run_id, 0)).toEqual([])
          // Another time of the same schedule is another key.
          const third = makeRun({ team, creator })
          yield* createRuns([third], { ...key, scheduled_for: key.scheduled_for + 60_000 })
          expect(yield* listedIds(query(), viewerOf(team, creator))).toEqual(
            new Set([first.item.run_id, third.item.run_id])
          )
        }))

      it.effect("concurrent creates with the same tick: exactly one succeeds", () =>
        Effect.gen(function* () {
          const team = uid<TeamUid>()
          const creator = uid<PrincipalUid>()
          const key: ExactlyOnceKey = { _tag: "ScheduleTick", schedule_id: uid(), scheduled_for: 1_700_000_800_000 }
          const results = yield* Effect.all(
            Array.from({ length: 6 }, () => Effect.either(createRuns([makeRun({ team, creator })], key))),
            { concurrency: "unbounded" }
          )
          expect(results.filter(Either.isRight).length).toBe(1)
          expect(results.filter((r) => Either.isLeft(r) && r.left._tag === "DuplicateKey").length).toBe(5)
          expect((yield* listedIds(query(), viewerOf(team, creator))).size).toBe(1)
        }))

      it.effect("createTicks writes the runs of the ticks whose key is free, each key once, and nothing of the others", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const team = uid<TeamUid>()
          const creator = uid<PrincipalUid>()
          const schedule = uid<ScheduleId>()
          const tick = (n: number): ScheduleTickKey => ({ _tag: "ScheduleTick", schedule_id: schedule, scheduled_for: 1_700_001_000_000 + n * 60_000 })
          const taken = makeRun({ team, creator, state: "QUEUED" })
          yield* createRuns([taken], tick(0))
          const runs = Array.from({ length: 5 }, () => makeRun({ team, creator, state: "QUEUED", metadata: { k: "v" } }))
          const ticks = [
            { key: tick(0), runs: [runs[0]!] },
            { key: tick(1), runs: [runs[1]!, runs[2]!] },
            { key: tick(1), runs: [runs[3]!] },
            { key: { ...tick(2), schedule_id: uid<ScheduleId>() }, runs: [runs[4]!] }
          ].map(({ key, runs }) => ({ key, runs: runs.map((run) => ({ run, events: creationEvents(run) })) }))
          expect(yield* store.createTicks(ticks)).toEqual([
            // Taken before: the run that took it is named, with its state now.
            { written: false, holder: { run_id: taken.item.run_id, state: "QUEUED" } },
            { written: true },
            // The same tick again in the same call: its first occurrence was written.
            { written: false, holder: undefined },
            { written: true }
          ])
          // The runs of the written ticks, with their events; nothing of the others.
          for (const run of [runs[1]!, runs[2]!, runs[4]!]) {
            expect(Option.map(yield* store.get(run.item.run_id), comparable)).toEqual(Option.some(comparable(run)))
            expect((yield* store.timeline(run.item.run_id, 0)).map((e) => [e.sequence, e.event_type])).toEqual([
              [1, "run_created"],
              [2, "run_pending"]
            ])
          }
          for (const run of [runs[0]!, runs[3]!]) {
            expect(Option.isNone(yield* store.get(run.item.run_id))).toBe(true)
            expect(yield* store.timeline(run.item.run_id, 0)).toEqual([])
          }
          // The keys are taken as create takes them.
          expect((yield* Effect.flip(createRuns([makeRun({ team, creator })], tick(1))))._tag).toBe("DuplicateKey")
          expect(yield* store.createTicks([])).toEqual([])
          expect(yield* listedIds(query(), viewerOf(team, creator))).toEqual(
            new Set([taken.item.run_id, runs[1]!.item.run_id, runs[2]!.item.run_id, runs[4]!.item.run_id])
          )
        }))

      it.effect("concurrent createTicks over overlapping ticks in different orders: each tick's run written exactly once", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const team = uid<TeamUid>()
          const creator = uid<PrincipalUid>()
          const keys: Array<ScheduleTickKey> = Array.from({ length: 40 }, (_, i) => ({
            _tag: "ScheduleTick",
            schedule_id: uid<ScheduleId>(),
            scheduled_for: 1_700_002_000_000 + i
          }))
          // Four replicas, each with the keys in an order of its own, writing at once.
          const orders = [keys, [...keys].reverse(), keys.filter((_, i) => i % 2 === 0), [...keys.slice(20), ...keys.slice(0, 20)]]
          const results = yield* Effect.all(
            orders.map((order) => {
              const made = order.map(() => makeRun({ team, creator, state: "QUEUED" }))
              return Effect.map(
                store.createTicks(order.map((key, i) => ({ key, runs: [{ run: made[i]!, events: creationEvents(made[i]!) }] }))),
                (written) => order.map((key, i) => ({ key, run_id: made[i]!.item.run_id, write: written[i]! }))
              )
            }),
            { concurrency: "unbounded" }
          )
          const winners = results.flat().filter((r) => r.write.written)
          expect(winners.length).toBe(keys.length)
          expect(new Set(winners.map((w) => w.key.schedule_id)).size).toBe(keys.length)
          expect((yield* listedIds(query(), viewerOf(team, creator))).size).toBe(keys.length)
          // Each loser names the winner's run of its tick.
          const winnerOf = new Map(winners.map((w) => [w.key.schedule_id, w.run_id]))
          for (const r of results.flat()) {
            if (!r.write.written) expect(r.write.holder?.run_id).toBe(winnerOf.get(r.key.schedule_id))
          }
        }))

      it.effect("the same delivery identity twice: one delivery logged with its run, then DuplicateKey", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const webhooks = yield* WebhookStore
          const team = uid<TeamUid>()
          const creator = uid<PrincipalUid>()
          const webhook = uid<WebhookUid>()
          const delivery = (id: DeliveryId, runId: RunId) =>
            new Delivery({
              delivery_id: id,
              received_at: at(1_700_000_900_000),
              size_bytes: 12,
              identity: "evt-1",
              outcome: "ACCEPTED",
              run_ids: [runId],
              payload: { action: "opened" }
            })
          const first = makeRun({ team, creator, state: "QUEUED", source: "WEBHOOK" })
          const firstDelivery = delivery(uid(), first.item.run_id)
          yield* createRuns([first], {
            _tag: "Delivery",
            webhook_uid: webhook,
            identity: "evt-1",
            delivery: firstDelivery
          })
          const second = makeRun({ team, creator, state: "QUEUED", source: "WEBHOOK" })
          const secondDelivery = delivery(uid(), second.item.run_id)
          const duplicate = yield* Effect.flip(
            createRuns([second], { _tag: "Delivery", webhook_uid: webhook, identity: "evt-1", delivery: secondDelivery })
          )
          expect(duplicate._tag).toBe("DuplicateKey")
          const logged = yield* webhooks.delivery(webhook, firstDelivery.delivery_id)
          expect(Option.map(logged, (d) => [d.outcome, d.run_ids, d.payload])).toEqual(
            Option.some(["ACCEPTED", [first.item.run_id], { action: "opened" }])
          )
          expect(Option.isNone(yield* webhooks.delivery(webhook, secondDelivery.delivery_id))).toBe(true)
          expect(Option.isNone(yield* store.get(second.item.run_id))).toBe(true)
          expect((yield* webhooks.deliveries(webhook, 10, null)).deliveries.map((d) => d.delivery_id)).toEqual([
            firstDelivery.delivery_id
          ])
          // The same identity on another webhook is another key.
          const third = makeRun({ team, creator })
          yield* createRuns([third], {
            _tag: "Delivery",
            webhook_uid: uid(),
            identity: "evt-1",
            delivery: delivery(uid(), third.item.run_id)
          })
          expect(Option.isSome(yield* store.get(third.item.run_id))).toBe(true)
        }))

      it.effect("a taken content key is a DuplicateKey under any identity; the failed attempt takes nothing", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const webhooks = yield* WebhookStore
          const team = uid<TeamUid>()
          const creator = uid<PrincipalUid>()
          const webhook = uid<WebhookUid>()
          const key = (identity: string, content_key: string | undefined, runId: RunId) => ({
            _tag: "Delivery" as const,
            webhook_uid: webhook,
            identity,
            content_key,
            delivery: new Delivery({
              delivery_id: uid(),
              received_at: at(1_700_000_950_000),
              size_bytes: 12,
              identity,
              outcome: "ACCEPTED",
              run_ids: [runId],
              payload: {}
            })
          })
          const first = makeRun({ team, creator, state: "QUEUED", source: "WEBHOOK" })
          yield* createRuns([first], key("provider:a", "signed:x", first.item.run_id))
          // The same signed content under a new id: a duplicate, and "provider:b" stays free.
          const replay = makeRun({ team, creator, state: "QUEUED", source: "WEBHOOK" })
          expect((yield* Effect.flip(createRuns([replay], key("provider:b", "signed:x", replay.item.run_id))))._tag)
            .toBe("DuplicateKey")
          expect(Option.isNone(yield* store.get(replay.item.run_id))).toBe(true)
          const fresh = makeRun({ team, creator, state: "QUEUED", source: "WEBHOOK" })
          yield* createRuns([fresh], key("provider:b", "signed:y", fresh.item.run_id))
          // Without a content key only the identity counts.
          const unsigned = makeRun({ team, creator, state: "QUEUED", source: "WEBHOOK" })
          yield* createRuns([unsigned], key("sender:c", undefined, unsigned.item.run_id))
          expect((yield* webhooks.deliveries(webhook, 10, null)).deliveries.length).toBe(3)
          expect((yield* webhooks.deliveryCounts(webhook)).ACCEPTED).toBe(3)
        }))
    })

    describe("follow-ups, conversations, artifacts", () => {
      it.effect("the follow-up inbox hands messages over oldest first, once", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const run = makeRun({ team: uid(), creator: uid() })
          const other = makeRun({ team: uid(), creator: uid() })
          yield* createRuns([run, other])
          const runId = run.item.run_id
          const enqueue = (target: StoredRun, message: string, received_at: number) =>
            store.recordFollowup(target.item.run_id, { state: target.item.state }, { at: received_at, events: [], followup: { message, received_at } })
          for (const [message, received_at] of [["c", 30], ["a1", 10], ["b", 20], ["a2", 10]] as const) {
            yield* enqueue(run, message, received_at)
          }
          yield* enqueue(other, "elsewhere", 1)
          expect(yield* store.takeFollowups(runId)).toEqual([
            { message: "a1", received_at: 10 },
            { message: "a2", received_at: 10 },
            { message: "b", received_at: 20 },
            { message: "c", received_at: 30 }
          ])
          expect(yield* store.takeFollowups(runId)).toEqual([])
          // Concurrent takers never both get a message.
          for (let i = 0; i < 20; i++) yield* enqueue(run, `m${i}`, 100 + i)
          const taken = yield* Effect.all(Array.from({ length: 4 }, () => store.takeFollowups(runId)), {
            concurrency: "unbounded"
          })
          expect(taken.flat().map((f) => f.message).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `m${i}`).sort())
          expect(yield* store.takeFollowups(other.item.run_id)).toEqual([{ message: "elsewhere", received_at: 1 }])
        }))

      it.effect("the follow-ups are taken by the execution holding the run only", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const host = `host-${uid()}`
          const run = makeRun({ team: uid(), creator: uid(), state: "QUEUED", worker_host: host })
          const runId = run.item.run_id
          yield* createRuns([run])
          const holder = uuid<ExecutionId>()
          const claimed = Option.getOrThrow(yield* store.claim({ worker_host: host, execution_id: holder, now: LATER, lease_ms: HOUR }))
          for (const [message, received_at] of [["b", 20], ["a", 10]] as const) {
            yield* store.recordFollowup(runId, { state: claimed.item.state }, { at: received_at, events: [], followup: { message, received_at } })
          }
          const other = yield* Effect.either(store.takeHeldFollowups(runId, uuid<ExecutionId>()))
          expect(Either.isLeft(other) && other.left._tag, "another execution takes nothing").toBe("StaleWrite")
          expect(yield* store.takeHeldFollowups(runId, holder)).toEqual([
            { message: "a", received_at: 10 },
            { message: "b", received_at: 20 }
          ])
          expect(yield* store.takeHeldFollowups(runId, holder)).toEqual([])
          // Once the run has ended, its holder no longer holds it.
          yield* store.recordFollowup(runId, { state: claimed.item.state }, { at: 30, events: [], followup: { message: "c", received_at: 30 } })
          const ended = { ...claimed, item: new RunItem({ ...claimed.item, state: "SUCCEEDED" }, true), lease: null }
          yield* store.update(runId, { state: claimed.item.state, execution_id: holder }, ended, [])
          const late = yield* Effect.either(store.takeHeldFollowups(runId, holder))
          expect(Either.isLeft(late) && late.left._tag).toBe("StaleWrite")
          expect((yield* store.takeFollowups(runId)).map((f) => f.message)).toEqual(["c"])
        }))

      it.effect("shapers: recorded with the run, by a follow-up and later, each (principal, role) once, read for any runs", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const team = uid<TeamUid>()
          const [a, b, c] = [uid<PrincipalUid>(), uid<PrincipalUid>(), uid<PrincipalUid>()]
          const run = makeRun({ team, creator: a })
          const other = makeRun({ team, creator: b })
          const sorted = (shapers: ReadonlyArray<Shaper>) =>
            [...shapers].sort((x, y) => `${x.uid} ${x.role}` < `${y.uid} ${y.role}` ? -1 : 1)
          yield* store.create([
            { run, events: creationEvents(run), shapers: [{ uid: b, role: "member" }, { uid: b, role: "member" }] },
            { run: other, events: creationEvents(other) }
          ])
          expect(yield* store.shapers([run.item.run_id])).toEqual([{ uid: b, role: "member" }])
          expect(yield* store.shapers([other.item.run_id])).toEqual([])
          // A follow-up records its sender in the same write; a refused one records nothing.
          const followup = (shaper: Shaper, maxPending?: number) =>
            store.recordFollowup(run.item.run_id, { state: run.item.state }, {
              at: 5,
              events: [],
              followup: { message: "hi", received_at: 5 },
              shaper,
              ...(maxPending === undefined ? {} : { maxPending })
            })
          yield* followup({ uid: c, role: "viewer" })
          expect(Either.isLeft(yield* Effect.either(followup({ uid: c, role: "admin" }, 1))), "a full inbox refuses").toBe(true)
          yield* store.addShapers(run.item.run_id, [{ uid: a, role: "member" }, { uid: b, role: "member" }])
          yield* store.addShapers(other.item.run_id, [{ uid: c, role: "admin" }])
          yield* store.addShapers(uuid<RunId>(Date.now()), [{ uid: c, role: "admin" }])
          expect(sorted(yield* store.shapers([run.item.run_id]))).toEqual(
            sorted([{ uid: b, role: "member" }, { uid: c, role: "viewer" }, { uid: a, role: "member" }])
          )
          expect(sorted(yield* store.shapers([run.item.run_id, other.item.run_id, run.item.run_id]))).toEqual(
            sorted([{ uid: b, role: "member" }, { uid: c, role: "viewer" }, { uid: a, role: "member" }, { uid: c, role: "admin" }])
          )
          expect(yield* store.shapers([])).toEqual([])
        }))

      it.effect("follow-up totals: a run's life total of follow-ups and their bytes is never exceeded, even by concurrent senders", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const run = makeRun({ team: uid(), creator: uid() })
          yield* createRuns([run])
          const send = (message: string) =>
            Effect.either(store.recordFollowup(run.item.run_id, { state: run.item.state }, {
              at: 7,
              events: [],
              followup: { message, received_at: 7 },
              maxTotal: { count: 5, bytes: 20 }
            }))
          // Bytes are UTF-8: "é" is two.
          expect(Either.isRight(yield* send("éé"))).toBe(true)
          expect(Either.isRight(yield* send("x".repeat(15)))).toBe(true)
          const tooBig = yield* send("xx")
          expect(tooBig).toEqual(Either.left(new FollowupTotalSpent({ count: 2, bytes: 19 })))
          expect(Either.isRight(yield* send("y"))).toBe(true)
          // 20 bytes taken; no more, whatever the size.
          const outcomes = yield* Effect.all(Array.from({ length: 6 }, () => send("")), { concurrency: "unbounded" })
          expect(outcomes.filter(Either.isRight)).toHaveLength(2)
          expect((yield* store.takeFollowups(run.item.run_id)).map((f) => f.message)).toEqual(["éé", "x".repeat(15), "y", "", ""])
          expect(yield* send("")).toEqual(Either.left(new FollowupTotalSpent({ count: 5, bytes: 20 })))
          // An empty continuation (no message) counts as a follow-up of no bytes.
          const other = makeRun({ team: uid(), creator: uid() })
          yield* createRuns([other])
          const blank = Effect.either(store.recordFollowup(other.item.run_id, { state: other.item.state }, { at: 8, events: [], maxTotal: { count: 1, bytes: 20 } }))
          expect(Either.isRight(yield* blank)).toBe(true)
          expect(yield* blank).toEqual(Either.left(new FollowupTotalSpent({ count: 1, bytes: 0 })))
        }))

      it.effect("conversations: parts per execution, appended once each (a repeated part is a no-op), read in execution order", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const run = makeRun({ team: uid(), creator: uid() })
          yield* createRuns([run])
          const runId = run.item.run_id
          const T = 1_700_000_000_123
          const [e1, e2] = [uuid<ExecutionId>(2000), uuid<ExecutionId>(1000)]
          expect(yield* store.conversation(runId)).toEqual([])
          const part1: ReadonlyArray<ConversationOp> = [
            { op: "step", key: 1, parent: null, id: "s1", at: T },
            { op: "message", key: 1, role: "assistant", at: T, block: { type: "event", name: "output", data: { text: "one" } } }
          ]
          const part2: ReadonlyArray<ConversationOp> = [
            { op: "text", key: 1, text: "two" },
            { op: "step", key: 2, parent: 1, id: "s1.1", description: "inner", at: T + 1 },
            { op: "block", key: 1, block: { type: "action", id: "a", category: "command", name: "run", input: { deep: [1, { x: null }] } } },
            { op: "end", key: 2, summary: "done", at: T + 2 }
          ]
          yield* store.appendConversation(runId, e1, { seq: 1, ops: part1 })
          yield* store.appendConversation(runId, e2, { seq: 1, ops: [{ op: "step", key: 1, parent: null, id: "s3", at: T }] })
          yield* store.appendConversation(runId, e1, { seq: 2, ops: part2 })
          // A retried part changes nothing, even with other operations.
          yield* store.appendConversation(runId, e1, { seq: 2, ops: [{ op: "text", key: 1, text: "again" }] })
          const encode = Schema.encodeSync(Schema.Array(ConversationStep))
          expect(encode(yield* store.conversation(runId))).toEqual(
            encode([...foldConversation([...part1, ...part2]), ...foldConversation([{ op: "step", key: 1, parent: null, id: "s3", at: T }])])
          )
          expect(encode(yield* store.conversation(runId))[0]).toMatchObject({
            id: "s1",
            messages: [{ content: [{ type: "event", data: { text: "one\ntwo" } }, { type: "action" }] }],
            steps: [{ id: "s1.1", description: "inner", summary: "done" }]
          })
        }))

      it.effect("an execution's kept rendering is served while it is of every part, and a stale one is never kept", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const run = makeRun({ team: uid(), creator: uid() })
          yield* createRuns([run])
          const runId = run.item.run_id
          const T = 1_700_000_000_000
          const [e1, e2] = [uuid<ExecutionId>(1000), uuid<ExecutionId>(2000)]
          const stepOp = (id: string): ConversationOp => ({ op: "step", key: 1, parent: null, id, at: T })
          yield* store.appendConversation(runId, e1, { seq: 1, ops: [stepOp("a")] })
          yield* store.appendConversation(runId, e2, { seq: 1, ops: [stepOp("b")] })
          yield* store.appendConversation(runId, e1, { seq: 2, ops: [stepOp("c")] })
          const folded = (e: ExecutionId, parts: number, ops: ReadonlyArray<ConversationOp>) => ({
            _tag: "Folded",
            execution_id: e,
            parts,
            steps: foldConversation(ops)
          })
          const encode = Schema.encodeSync(Schema.Array(ConversationStep))
          const read = Effect.map(store.executionConversations(runId), (executions) =>
            executions.map((e) => (e._tag === "Folded" ? { ...e, steps: encode(e.steps) } : e)))
          const expectFolded = (e: ExecutionId, parts: number, ops: ReadonlyArray<ConversationOp>) => {
            const f = folded(e, parts, ops)
            return { ...f, steps: encode(f.steps) }
          }
          expect(yield* read).toEqual([expectFolded(e1, 2, [stepOp("a"), stepOp("c")]), expectFolded(e2, 1, [stepOp("b")])])

          // Kept of every part: served as kept, in execution order; the steps read as before.
          yield* store.keepRendered(runId, { execution_id: e1, json: "<e1 of 2 parts>", parts: 2 })
          // Of fewer parts than the log has: not kept.
          yield* store.keepRendered(runId, { execution_id: e2, json: "<e2 of 0 parts>", parts: 0 })
          expect(yield* read).toEqual([{ _tag: "Rendered", json: "<e1 of 2 parts>" }, expectFolded(e2, 1, [stepOp("b")])])
          expect(encode(yield* store.conversation(runId))).toEqual(encode(foldConversation([stepOp("a"), stepOp("c"), stepOp("b")])))

          // A part arriving later: folded again, and a rendering of the old parts is not kept.
          yield* store.appendConversation(runId, e1, { seq: 3, ops: [stepOp("d")] })
          yield* store.keepRendered(runId, { execution_id: e1, json: "<e1 of 2 parts, again>", parts: 2 })
          expect((yield* read)[0]).toEqual(expectFolded(e1, 3, [stepOp("a"), stepOp("c"), stepOp("d")]))
          yield* store.keepRendered(runId, { execution_id: e1, json: "<e1 of 3 parts>", parts: 3 })
          expect((yield* read)[0]).toEqual({ _tag: "Rendered", json: "<e1 of 3 parts>" })
          // Kept already of these parts: not written again.
          yield* store.keepRendered(runId, { execution_id: e1, json: "<e1 of 3 parts, again>", parts: 3 })
          expect((yield* read)[0]).toEqual({ _tag: "Rendered", json: "<e1 of 3 parts>" })
          // A retried part changes nothing: the rendering stays served.
          yield* store.appendConversation(runId, e1, { seq: 3, ops: [stepOp("again")] })
          expect((yield* read)[0]).toEqual({ _tag: "Rendered", json: "<e1 of 3 parts>" })
          expect(yield* store.executionConversations(uid<RunId>())).toEqual([])
        }))

      it.effect("a part holding megabytes (one long line of an agent) reads back whole", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const run = makeRun({ team: uid(), creator: uid() })
          yield* createRuns([run])
          const text = "x".repeat(2_000_000)
          yield* store.appendConversation(run.item.run_id, uuid<ExecutionId>(), {
            seq: 1,
            ops: [
              { op: "step", key: 1, parent: null, id: "s1", at: 1_700_000_000_000 },
              { op: "message", key: 1, role: "assistant", at: 1_700_000_000_000, block: { type: "text", text } }
            ]
          })
          const block = (yield* store.conversation(run.item.run_id))[0]?.messages[0]?.content[0]
          expect(block?.type).toBe("text")
          // Compared as a whole, not shown as a diff of megabytes.
          expect(block?.type === "text" && block.text === text).toBe(true)
        }))

      it.effect("artifacts are appended in order, survive stale updates, and external references are found", () =>
        Effect.gen(function* () {
          const store = yield* RunStore
          const team = uid<TeamUid>()
          const creator = uid<PrincipalUid>()
          const url = `https://tracker.example/${uid()}`
          const run = makeRun({ team, creator, artifacts: ["PLAN"], state: "QUEUED" })
          const later = makeRun({ team, creator })
          yield* createRuns([run, later])
          const runId = run.item.run_id
          const pr = artifactOf("PULL_REQUEST", 1_700_000_000_500)
          const ref = artifactOf("EXTERNAL_REFERENCE", 1_700_000_000_600, url)
          yield* store.addArtifact(runId, pr)
          yield* store.addArtifact(runId, ref)
          // An update based on the run as it was read before the artifacts were added keeps them.
          yield* store.update(runId, { state: "QUEUED" }, { ...run, item: new RunItem({ ...run.item, title: "t" }) }, [])
          const read = yield* getRun(runId)
          expect(read.item.artifacts.map((a) => a.artifact_type)).toEqual(["PLAN", "PULL_REQUEST", "EXTERNAL_REFERENCE"])
          expect(comparable({ ...read, item: new RunItem({ ...read.item, artifacts: [] }) })).toEqual(
            comparable({ ...run, item: new RunItem({ ...run.item, title: "t", artifacts: [] }) })
          )
          expect(yield* listedIds(query({ filters: { artifact_type: "EXTERNAL_REFERENCE" } }), viewerOf(team, creator)))
            .toEqual(new Set([runId]))
          expect(Option.map(yield* store.findByExternalReference(url), (r) => r.item.run_id)).toEqual(Option.some(runId))
          expect(Option.isNone(yield* store.findByExternalReference(`${url}/other`))).toBe(true)
          // When a later run reports the same reference, it is the one found.
          yield* store.addArtifact(later.item.run_id, artifactOf("EXTERNAL_REFERENCE", 1_700_000_000_700, url))
          expect(Option.map(yield* store.findByExternalReference(url), (r) => r.item.run_id)).toEqual(
            Option.some(later.item.run_id)
          )
          expect(Either.isLeft(yield* Effect.either(store.addArtifact(uuid(), pr)))).toBe(true)
        }))
    })
  })
}
