/**
 * The follow-up service (`Followups`) over a real storage adapter: routing by state (stored for
 * the start, stored for the live agent, a new execution, the debug window of a failed setup),
 * empty messages, never-started runs, access, and lost races. Runs are created with `Runs` and
 * moved through their states with RunStateMachine transitions written by the store's `update`,
 * as an executor would. Each test makes a fresh team of its own. Call
 * `followupsServiceSuite(name, layer)` inside a vitest file.
 */
import { describe, expect, layer } from "@effect/vitest"
import { DateTime, Effect, Either, Layer, Option, Redacted, TestClock, TestContext } from "effect"
import type { SecretName } from "../src/domain/Secret.js"
import { SecretStore } from "../src/ports/SecretStore.js"
import type { Viewer } from "../src/domain/Access.js"
import type { Conflict, InvalidRequest, RateLimited } from "../src/domain/Errors.js"
import { defaultQuotas, Quotas } from "../src/domain/Quotas.js"
import { Followups } from "../src/services/Followups.js"
import { type ExecutionId, IdsLive, type RunId } from "../src/domain/Ids.js"
import { RunStore } from "../src/ports/RunStore.js"
import { StaleWrite, StorageError } from "../src/ports/Storage.js"
import { RunAgentRequest, RunFollowupRequest } from "../src/domain/Run.js"
import { type RunEvent as RunEventType, RunEvent, transition } from "../src/domain/RunStateMachine.js"
import { applyTransition, eventsAt, runSnapshot } from "../src/domain/RunRecords.js"
import { Runs } from "../src/services/Runs.js"
import { uuid } from "./RunStoreConformance.js"
import type { Stores } from "./Stores.js"
import { failureOf, seedWorld } from "./World.js"

const MINUTE = 60_000
const HOUR = 60 * MINUTE

/** Creates a run as `viewer` (Team scope unless `team: false`). */
export const createRun = (viewer: Viewer, prompt = "do the thing", options: { readonly team?: boolean } = {}) =>
  Effect.flatMap(Runs, (runs) => runs.create(viewer, new RunAgentRequest({ prompt, team: options.team ?? true }))).pipe(
    Effect.map((response) => response.run_id)
  )

/**
 * Applies `event` to the stored run at `at` (default: now) as an executor would: the transition,
 * written with the store's guarded `update`, its events under the event's execution (else the
 * lease holder's). Dies when the machine rejects the event.
 */
export const advance = (runId: RunId, event: RunEventType, at: number = Date.now()) =>
  Effect.gen(function* () {
    const store = yield* RunStore
    const run = Option.getOrThrow(yield* store.get(runId))
    const moved = transition(runSnapshot(run), event, at)
    if (Either.isLeft(moved)) return yield* Effect.dieMessage(moved.left.message)
    const named = "executionId" in event ? event.executionId : undefined
    const execution = (named ?? run.lease?.execution_id ?? uuid()) as ExecutionId
    const next = applyTransition(run, moved.right, at)
    yield* store.update(
      runId,
      { state: run.item.state, ...(run.lease === null ? {} : { execution_id: run.lease.execution_id }) },
      next,
      eventsAt(moved.right.timeline, at, execution)
    )
    return next
  })

/** Claims a queued run for a fresh execution at `at`; answers the execution id. */
export const claim = (runId: RunId, at: number = Date.now()) =>
  Effect.gen(function* () {
    const execution = uuid<ExecutionId>(at)
    yield* advance(runId, RunEvent.Claim({ executionId: execution, leaseExpiresAt: at + HOUR }), at)
    return execution
  })

/** Claims and starts a queued run (INPROGRESS, with a conversation); answers the execution id. */
export const start = (runId: RunId, at: number = Date.now()) =>
  Effect.gen(function* () {
    const execution = yield* claim(runId, at)
    yield* advance(runId, RunEvent.Start({ executionId: execution }), at)
    return execution
  })

/** A run that failed its environment setup at `at`, keeping its sandbox for `retention` ms. */
const setupFailed = (viewer: Viewer, retention: number, at: number = Date.now()) =>
  Effect.gen(function* () {
    const runId = yield* createRun(viewer)
    const execution = yield* claim(runId, at)
    yield* advance(runId, RunEvent.EnvironmentSetupFailed({ executionId: execution, message: "npm ci failed", retentionMillis: retention }), at)
    return runId
  })

const send = (viewer: Viewer, runId: string, message: string) =>
  Effect.flatMap(Followups, (f) => f.send(viewer, runId, new RunFollowupRequest({ message })))

const stored = (runId: RunId) => Effect.flatMap(RunStore, (store) => store.get(runId)).pipe(Effect.map(Option.getOrThrow))

/** The inbox's messages (taken: the inbox is empty afterwards). */
const inbox = (runId: RunId) =>
  Effect.flatMap(RunStore, (store) => store.takeFollowups(runId)).pipe(Effect.map((list) => list.map((f) => f.message)))

const timeline = (runId: RunId) => Effect.flatMap(RunStore, (store) => store.timeline(runId, 0))

const eventTypes = (runId: RunId) => Effect.map(timeline(runId), (events) => events.map((e) => e.event_type))

/** A Followups service over the suite's store as `wrap` changes it. */
const followupsOver = (wrap: (store: RunStore["Type"]) => RunStore["Type"]) =>
  Effect.flatMap(RunStore, (store) =>
    Effect.provide(Followups, Followups.Default.pipe(Layer.provide(Layer.succeed(RunStore, wrap(store))), Layer.provide(IdsLive))))

/** Registers the follow-up service suite against one storage adapter's layer. */
export const followupsServiceSuite = <E>(name: string, storage: Layer.Layer<Stores, E>): void => {
  const services = Layer.mergeAll(Followups.Default, Runs.Default).pipe(Layer.provideMerge(Layer.merge(storage, IdsLive)))

  describe(`followups service (${name})`, () => {
    layer(services, { excludeTestServices: true, timeout: "60 seconds" })("Followups", (it) => {
      it.effect("a QUEUED run keeps the message for its start, in order, and stays QUEUED", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const runId = yield* createRun(world.alice)
          const before = yield* stored(runId)
          const first = yield* send(world.bob, runId, "also update the docs")
          expect(first).toMatchObject({ run_id: runId, state: "QUEUED", execution_count: 1, route: "store_for_start" })
          yield* send(world.alice, runId, "  and the changelog  ")
          const after = yield* stored(runId)
          expect(after.item.state).toBe("QUEUED")
          expect(after.item.execution_count).toBe(1)
          expect(DateTime.greaterThanOrEqualTo(after.item.updated_at, before.item.updated_at)).toBe(true)
          expect(yield* eventTypes(runId)).toEqual([
            "run_created",
            "run_pending",
            "run_queued",
            "followup_received",
            "followup_received"
          ])
          const events = yield* timeline(runId)
          expect(new Set(events.map((e) => e.execution_id)).size).toBe(1)
          expect(yield* inbox(runId)).toEqual(["also update the docs", "  and the changelog  "])
        }))

      it.effect("a PENDING run (team at capacity) keeps the message for its start and stays PENDING", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld({ maxConcurrentRuns: 1 })
          yield* createRun(world.alice, "first")
          const pending = yield* createRun(world.alice, "second")
          expect((yield* stored(pending)).item.state).toBe("PENDING")
          const answer = yield* send(world.alice, pending, "when you start, read the README")
          expect(answer).toMatchObject({ state: "PENDING", route: "store_for_start" })
          const after = yield* stored(pending)
          expect([after.item.state, after.at_capacity]).toEqual(["PENDING", true])
          expect(yield* inbox(pending)).toEqual(["when you start, read the README"])
        }))

      it.effect("a CLAIMED run keeps the message for its start, under the lease holder's execution, lease untouched", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const runId = yield* createRun(world.alice)
          const execution = yield* claim(runId)
          const before = yield* stored(runId)
          const answer = yield* send(world.alice, runId, "use the staging database")
          expect(answer).toMatchObject({ state: "CLAIMED", execution_count: 1, route: "store_for_start" })
          const after = yield* stored(runId)
          expect(after.lease).toEqual(before.lease)
          expect(after.item.state).toBe("CLAIMED")
          const last = (yield* timeline(runId)).at(-1)
          expect([last?.event_type, last?.execution_id]).toEqual(["followup_received", execution])
          expect(yield* inbox(runId)).toEqual(["use the staging database"])
        }))

      it.effect("an INPROGRESS run gets the message stored for the live agent; a renewal made meanwhile is kept", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const runId = yield* createRun(world.alice)
          const execution = yield* start(runId)
          const renewedTo = Date.now() + 2 * HOUR
          // The executor renews its lease while the follow-up is being decided (after the read).
          const followups = yield* followupsOver((store) => ({
            ...store,
            recordFollowup: (id, guard, write) =>
              Effect.zipRight(store.renewLease(id, execution, renewedTo), store.recordFollowup(id, guard, write))
          }))
          const answer = yield* followups.send(world.alice, runId, new RunFollowupRequest({ message: "stop after the tests pass" }))
          expect(answer).toMatchObject({ run_id: runId, state: "INPROGRESS", execution_count: 1, route: "deliver_live" })
          const after = yield* stored(runId)
          expect(after.item.state).toBe("INPROGRESS")
          expect(after.lease).toEqual({ execution_id: execution, expires_at: renewedTo })
          expect(after.has_conversation).toBe(true)
          const last = (yield* timeline(runId)).at(-1)
          expect([last?.event_type, last?.execution_id]).toEqual(["followup_received", execution])
          expect(yield* inbox(runId)).toEqual(["stop after the tests pass"])
        }))

      it.effect("an ended run that started gets a new execution: same run and conversation, QUEUED, count + 1", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const endings: ReadonlyArray<readonly [string, (execution: ExecutionId) => RunEventType]> = [
            ["SUCCEEDED", (executionId) => RunEvent.Succeed({ executionId, message: "done" })],
            ["FAILED", (executionId) => RunEvent.Fail({ executionId, errorCode: "agent_failed", message: "exit 1" })],
            ["BLOCKED", (executionId) => RunEvent.Block({ executionId, message: "which branch?" })],
            ["ERROR", (executionId) => RunEvent.Error({ executionId, errorCode: "internal_error", message: "boom" })],
            ["CANCELLED", () => RunEvent.Cancel()]
          ]
          for (const [state, end] of endings) {
            const runId = yield* createRun(world.alice, `ends ${state}`)
            const execution = yield* start(runId)
            yield* advance(runId, end(execution))
            const ended = yield* stored(runId)
            expect(ended.item.state).toBe(state)
            expect(ended.item.ended_at).not.toBeNull()
            const answer = yield* send(world.bob, runId, "please continue with part two")
            expect(answer).toMatchObject({ run_id: runId, state: "QUEUED", execution_count: 2, route: "new_execution" })
            const next = yield* stored(runId)
            expect(next.item.run_id).toBe(runId)
            expect(next.item.conversation_id).toBe(ended.item.conversation_id)
            expect([next.item.state, next.item.execution_count, next.item.attempt]).toEqual(["QUEUED", 2, 1])
            expect(next.item.status_message).toBeNull()
            expect(next.item.ended_at).toBeNull()
            expect(next.lease).toBeNull()
            expect(next.item.is_sandbox_running).toBe(false)
            expect(next.item.created_at).toEqual(ended.item.created_at)
            const events = yield* timeline(runId)
            const added = events.slice(-2)
            expect(added.map((e) => e.event_type)).toEqual(["followup_received", "run_queued"])
            // the new execution's events carry a fresh execution id of their own
            expect(added[0]?.execution_id).toBe(added[1]?.execution_id)
            expect(events.slice(0, -2).some((e) => e.execution_id === added[0]?.execution_id)).toBe(false)
            expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1))
            expect(yield* inbox(runId)).toEqual(["please continue with part two"])
          }
        }))

      it.effect("the continued run is claimable again and can itself be continued (execution 3)", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const runId = yield* createRun(world.alice)
          const first = yield* start(runId)
          yield* advance(runId, RunEvent.Succeed({ executionId: first }))
          yield* send(world.alice, runId, "part two")
          // queued again: another follow-up waits with the first one
          expect(yield* send(world.alice, runId, "and part three")).toMatchObject({ route: "store_for_start", execution_count: 2 })
          expect(yield* inbox(runId)).toEqual(["part two", "and part three"])
          const second = yield* start(runId)
          yield* advance(runId, RunEvent.Fail({ executionId: second, errorCode: "agent_failed", message: "exit 2" }))
          const third = yield* send(world.alice, runId, "try again")
          expect(third).toMatchObject({ state: "QUEUED", execution_count: 3, route: "new_execution" })
        }))

      it.effect("empty messages: refused unless continuing an ended run from its saved conversation", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const isEmptyRefusal = (error: unknown) => {
            expect((error as InvalidRequest)._tag).toBe("InvalidRequest")
            expect((error as InvalidRequest).field).toBe("message")
          }
          // not ended: refused, whatever the state
          const queued = yield* createRun(world.alice)
          for (const blank of ["", "   ", "\n\t "]) isEmptyRefusal(yield* failureOf(send(world.alice, queued, blank)))
          const running = yield* createRun(world.alice)
          yield* start(running)
          isEmptyRefusal(yield* failureOf(send(world.alice, running, " ")))
          expect(yield* inbox(queued)).toEqual([])
          expect(yield* inbox(running)).toEqual([])

          // ended with a saved conversation: continues, with nothing stored
          const ended = yield* createRun(world.alice)
          const execution = yield* start(ended)
          yield* advance(ended, RunEvent.Succeed({ executionId: execution }))
          const continued = yield* send(world.alice, ended, "  ")
          expect(continued).toMatchObject({ state: "QUEUED", execution_count: 2, route: "new_execution" })
          expect(yield* inbox(ended)).toEqual([])
          expect((yield* eventTypes(ended)).slice(-2)).toEqual(["followup_received", "run_queued"])

          // the debug window of a failed setup: refused
          const debuggable = yield* setupFailed(world.alice, 30 * MINUTE)
          isEmptyRefusal(yield* failureOf(send(world.alice, debuggable, "")))
          // after the window, with a retained sandbox but no conversation: refused
          const expired = yield* setupFailed(world.alice, MINUTE, Date.now() - 10 * MINUTE)
          isEmptyRefusal(yield* failureOf(send(world.alice, expired, "")))
          expect((yield* stored(expired)).item.state).toBe("FAILED")
        }))

      it.effect("a run that never started (no conversation, no sandbox) is a 400, and stays as it was", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const cancelled = yield* createRun(world.alice)
          yield* Effect.flatMap(Runs, (runs) => runs.cancel(world.alice, cancelled))
          const claimedThenCancelled = yield* createRun(world.alice)
          yield* claim(claimedThenCancelled)
          yield* advance(claimedThenCancelled, RunEvent.Cancel())
          const noRetention = yield* setupFailed(world.alice, 0)
          for (const runId of [cancelled, claimedThenCancelled, noRetention]) {
            const before = yield* eventTypes(runId)
            const error = yield* failureOf(send(world.alice, runId, "please continue"))
            expect(error._tag).toBe("InvalidRequest")
            expect(error.message).toContain("never started")
            expect(yield* eventTypes(runId)).toEqual(before)
            expect(yield* inbox(runId)).toEqual([])
            expect((yield* stored(runId)).item.execution_count).toBe(1)
          }
        }))

      it.effect("inside the debug window of a failed setup: stored for the debug agent, the run stays FAILED unchanged", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const runId = yield* setupFailed(world.alice, 30 * MINUTE)
          const failed = yield* stored(runId)
          expect(failed.item.status_message?.error_code).toBe("environment_setup_failed")
          expect(failed.item.status_message?.session_debug_until).toBeDefined()
          expect(failed.item.is_sandbox_running).toBe(true)
          const first = yield* send(world.alice, runId, "why did npm ci fail?")
          expect(first).toMatchObject({ run_id: runId, state: "FAILED", execution_count: 1, route: "debug_session" })
          const second = yield* send(world.bob, runId, "try with --legacy-peer-deps")
          expect(second.route).toBe("debug_session")
          const after = yield* stored(runId)
          expect(after.item.state).toBe("FAILED")
          expect(after.item.status_message).toEqual(failed.item.status_message)
          expect(after.item.ended_at).toEqual(failed.item.ended_at)
          expect([after.item.execution_count, after.item.attempt]).toEqual([1, 1])
          expect(after.sandbox_retained).toBe(true)
          // the first message starts the debug session; later ones only arrive
          expect(yield* eventTypes(runId)).toEqual([
            "run_created",
            "run_pending",
            "run_queued",
            "run_claimed",
            "environment_setup_failed",
            "run_failed",
            "followup_received",
            "debug_session_started",
            "followup_received"
          ])
          expect(yield* inbox(runId)).toEqual(["why did npm ci fail?", "try with --legacy-peer-deps"])
        }))

      it.effect("after the debug window: a message starts a new execution (the retained sandbox counts as started)", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const runId = yield* setupFailed(world.alice, MINUTE, Date.now() - 10 * MINUTE)
          const answer = yield* send(world.alice, runId, "try again with node 20")
          expect(answer).toMatchObject({ state: "QUEUED", execution_count: 2, route: "new_execution" })
          const after = yield* stored(runId)
          expect(after.item.status_message).toBeNull()
          expect(after.sandbox_retained).toBe(false)
          expect((yield* eventTypes(runId)).slice(-2)).toEqual(["followup_received", "run_queued"])
          expect(yield* inbox(runId)).toEqual(["try again with node 20"])
        }))

      it.effect("an agent failure (not a setup failure) is continued as a new execution", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const runId = yield* createRun(world.alice)
          const execution = yield* start(runId)
          yield* advance(runId, RunEvent.Fail({ executionId: execution, errorCode: "agent_failed", message: "exit 1" }))
          expect((yield* send(world.alice, runId, "again")).route).toBe("new_execution")
        }))

      it.effect("access: hidden and unknown runs 404, viewers 403, a malformed id 400 naming runId; nothing stored", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const other = yield* seedWorld()
          const privateRun = yield* createRun(world.alice, "mine", { team: false })
          const teamRun = yield* createRun(world.alice, "ours")
          for (const viewer of [world.bob, world.viewer, other.admin, other.alice]) {
            const error = yield* failureOf(send(viewer, privateRun, "hello"))
            expect(error._tag).toBe("ResourceNotFound")
          }
          expect((yield* failureOf(send(other.alice, teamRun, "hello")))._tag).toBe("ResourceNotFound")
          expect((yield* failureOf(send(world.alice, uuid(), "hello")))._tag).toBe("ResourceNotFound")
          const forbidden = yield* failureOf(send(world.viewer, teamRun, "hello"))
          expect(forbidden._tag).toBe("NotAuthorized")
          const malformed = yield* failureOf(send(world.alice, "not-a-run-id", "hello"))
          expect(malformed._tag).toBe("InvalidRequest")
          expect((malformed as InvalidRequest).field).toBe("runId")
          expect(yield* inbox(privateRun)).toEqual([])
          expect(yield* inbox(teamRun)).toEqual([])
          // the creator and the team's admins may send to a User-scoped run
          expect((yield* send(world.admin, privateRun, "from the admin")).route).toBe("store_for_start")
          expect((yield* send(world.alice, privateRun, "from alice")).route).toBe("store_for_start")
          expect(yield* inbox(privateRun)).toEqual(["from the admin", "from alice"])
        }))

      it.effect("the sender shapes the run: a member's follow-up lowers an admin's run token to a member's for the rest of the run", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const runs = yield* Runs
          const runId = yield* createRun(world.admin, "administer things")
          const execution = yield* start(runId)
          const token = { run_id: runId, execution_id: execution }
          expect((yield* runs.actingViewer(token)).role).toBe("admin")
          yield* send(world.admin, runId, "@say another admin's word changes nothing")
          expect((yield* runs.actingViewer(token)).role).toBe("admin")
          expect((yield* send(world.alice, runId, "now create a team secret")).route).toBe("deliver_live")
          expect((yield* runs.actingViewer(token)).role).toBe("member")
          // For the rest of the run: its next execution too.
          yield* advance(runId, RunEvent.Succeed({ executionId: execution }))
          yield* send(world.admin, runId, "continue")
          expect((yield* runs.actingViewer({ run_id: runId, execution_id: yield* claim(runId) })).role).toBe("member")
        }))

      it.effect("a run whose agent holds a secret only admins hand out takes follow-ups from team admins only (403)", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          yield* (yield* SecretStore).put(world.team, "DEPLOY_KEY" as SecretName, Redacted.make("v"), 0)
          const runs = yield* Runs
          const created = yield* runs.create(world.admin, new RunAgentRequest({
            prompt: "deploy",
            team: true,
            config: { mcp_servers: { s: { command: "deploy", env: { K: "${{ secrets.DEPLOY_KEY }}" } } } }
          }))
          const refused = yield* failureOf(send(world.alice, created.run_id, "print $K"))
          expect(refused._tag).toBe("NotAuthorized")
          expect(refused.message).toBe("only team admins may follow up this run: its agent uses the team secret DEPLOY_KEY (MCP server s)")
          expect((yield* send(world.admin, created.run_id, "go on")).route).toBe("store_for_start")
          expect(yield* inbox(created.run_id)).toEqual(["go on"])
        }))

      it.effect("bounds a run's follow-ups: a minute's count and bytes, then its life total (429s); refusals store nothing", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const quotas = { ...defaultQuotas, followupsPerMinute: 3, followupBytesPerMinute: 10, followupsPerRun: 5, followupBytesPerRun: 1000 }
          const followups = yield* Effect.provide(Followups, Followups.Default.pipe(Layer.provide(Layer.succeed(Quotas, quotas))))
          yield* TestClock.setTime(Date.now())
          const runId = yield* createRun(world.alice)
          const sendAs = (message: string) => followups.send(world.alice, runId, new RunFollowupRequest({ message }))
          yield* sendAs("a")
          yield* sendAs("bb")
          // Three more bytes than the minute allows: room once "a" is a minute old.
          const heavy = (yield* failureOf(sendAs("12345678"))) as RateLimited
          expect(heavy).toMatchObject({ _tag: "RateLimited", retryAfterSeconds: 60 })
          expect(heavy.message).toMatch(/^message: run \S+ takes at most 3 follow-ups \(10 bytes\) a minute/)
          yield* sendAs("c")
          expect(yield* failureOf(sendAs("d"))).toMatchObject({ _tag: "RateLimited", retryAfterSeconds: 60 })
          yield* TestClock.adjust("61 seconds")
          yield* sendAs("e")
          yield* sendAs("f")
          const spent = (yield* failureOf(sendAs("g"))) as RateLimited
          expect(spent).toMatchObject({ _tag: "RateLimited", retryable: false })
          expect(spent.message).toMatch(/has received 5 follow-ups \(6 bytes\); a run takes at most 5/)
          expect(yield* inbox(runId)).toEqual(["a", "bb", "c", "e", "f"])
          expect((yield* eventTypes(runId)).filter((t) => t === "followup_received")).toHaveLength(5)
        }).pipe(Effect.provide(TestContext.TestContext)))

      it.effect("the store records a follow-up all or nothing, under its guard (RunStore.recordFollowup)", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const store = yield* RunStore
          const runId = yield* createRun(world.alice)
          const execution = yield* claim(runId)
          const before = yield* stored(runId)
          const at = Date.now() + 1000
          const write = {
            at,
            events: [{ event_type: "followup_received" as const, occurred_at: at, execution_id: execution }],
            followup: { message: "hello", received_at: at }
          }
          for (const guard of [{ state: "QUEUED" as const }, { state: "CLAIMED" as const, execution_id: uuid<ExecutionId>() }]) {
            expect((yield* failureOf(store.recordFollowup(runId, guard, write)))._tag).toBe("StaleWrite")
          }
          expect(yield* inbox(runId)).toEqual([])
          expect((yield* eventTypes(runId)).at(-1)).toBe("run_claimed")
          expect((yield* stored(runId)).item.updated_at).toEqual(before.item.updated_at)
          yield* store.recordFollowup(runId, { state: "CLAIMED", execution_id: execution }, write)
          const after = yield* stored(runId)
          expect(DateTime.toEpochMillis(after.item.updated_at)).toBe(at)
          expect({ ...after, item: { ...after.item, updated_at: null } }).toEqual({
            ...before,
            item: { ...before.item, updated_at: null }
          })
          expect((yield* eventTypes(runId)).at(-1)).toBe("followup_received")
          expect(yield* inbox(runId)).toEqual(["hello"])
        }))

      it.effect("a lost race re-reads and routes by the new state", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const runId = yield* createRun(world.alice)
          let calls = 0
          let reads = 0
          // An executor claims the run between the follow-up's read and its write (outside the
          // write's transaction, as another process would).
          const followups = yield* followupsOver((store) => ({
            ...store,
            get: (id) =>
              Effect.tap(store.get(id), () =>
                ++reads === 1 ? Effect.orDie(claim(id).pipe(Effect.provideService(RunStore, store))) : Effect.void),
            recordFollowup: (id, guard, write) =>
              Effect.suspend(() => {
                calls++
                return store.recordFollowup(id, guard, write)
              })
          }))
          const answer = yield* followups.send(world.alice, runId, new RunFollowupRequest({ message: "hi" }))
          expect(calls).toBe(2)
          expect(answer).toMatchObject({ state: "CLAIMED", route: "store_for_start" })
          expect((yield* eventTypes(runId)).filter((t) => t === "followup_received")).toHaveLength(1)
          expect(yield* inbox(runId)).toEqual(["hi"])
        }))

      it.effect("a race lost twice is a 409 retryable; a storage failure a 503; nothing is stored", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const runId = yield* createRun(world.alice)
          let calls = 0
          const stale = yield* followupsOver((store) => ({
            ...store,
            recordFollowup: () => Effect.suspend(() => (calls++, Effect.fail(new StaleWrite({ what: "run" }))))
          }))
          const conflict = yield* failureOf(stale.send(world.alice, runId, new RunFollowupRequest({ message: "hi" })))
          expect(conflict._tag).toBe("Conflict")
          expect((conflict as Conflict).retryable).toBe(true)
          expect(calls).toBe(2)
          const broken = yield* followupsOver((store) => ({
            ...store,
            get: () => Effect.fail(new StorageError({ operation: "RunStore.get", cause: new Error("down") }))
          }))
          const unavailable = yield* failureOf(broken.send(world.alice, runId, new RunFollowupRequest({ message: "hi" })))
          expect(unavailable._tag).toBe("ResourceUnavailable")
          expect(yield* inbox(runId)).toEqual([])
          expect(yield* eventTypes(runId)).toEqual(["run_created", "run_pending", "run_queued"])
        }))
    })
  })
}
