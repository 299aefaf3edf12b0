/**
 * The server's side of self-hosted workers (`Workers`, docs/workers.md) over a real storage
 * adapter and an in-memory BlobStore: what a worker's claim brings, the transcript appends made
 * idempotent by their offset (a retry after a lost answer appends nothing), and the scope of a
 * worker (its team, its id, the execution holding the run). Each test makes a team and worker ids
 * of its own. Then the dispatcher's sweep on the TestClock (a database of its own per test): runs
 * waiting for a worker that stays away fail after the wait. Call `workersServiceSuite(name, layer)`
 * inside a vitest file; `layer` must make a fresh database each time it is built.
 */
import { describe, expect, it as plainIt, layer } from "@effect/vitest"
import { DateTime, Effect, Layer, Option, Redacted, TestClock } from "effect"
import * as Dispatcher from "../src/engine/Dispatcher.js"
import * as LeaseSweep from "../src/engine/LeaseSweep.js"
import { DEFAULT_MAX_OUTPUT_BYTES } from "../src/engine/Settings.js"
import { RunExecutions } from "../src/engine/RunExecutions.js"
import * as Health from "../src/engine/Health.js"
import { LiveExecutions } from "../src/engine/LiveExecutions.js"
import { Executor, ExecutorError } from "../src/ports/Executor.js"
import type { Viewer } from "../src/domain/Access.js"
import { MAX_ARTIFACTS_PER_RUN } from "../src/domain/Artifact.js"
import { transcriptKey } from "../src/domain/BlobKeys.js"
import { type ExecutionId, IdsLive, type PrincipalUid, type RunId } from "../src/domain/Ids.js"
import { Principal } from "../src/domain/Identity.js"
import { BlobStore } from "../src/ports/BlobStore.js"
import { IdentityStore } from "../src/ports/IdentityStore.js"
import { RunStore } from "../src/ports/RunStore.js"
import { AuditLog } from "../src/ports/AuditLog.js"
import { SecretStore } from "../src/ports/SecretStore.js"
import type { SecretName } from "../src/domain/Secret.js"
import { RunTokens } from "../src/ports/RunTokens.js"
import { Followups } from "../src/services/Followups.js"
import { RunAgentRequest, RunFollowupRequest, RunItem } from "../src/domain/Run.js"
import { RunEvent } from "../src/domain/RunStateMachine.js"
import { Runs } from "../src/services/Runs.js"
import { AGENT_STATE_PART_BYTES, HeartbeatRequest, WORKER_PROTOCOL } from "../src/domain/Worker.js"
import { OLDEST_WORKER_PROTOCOL } from "../src/domain/WorkerProtocol.js"
import { VERSION } from "../src/domain/Release.js"
import { defaultWorkerSettings, Workers, WorkerSettingsTag } from "../src/services/Workers.js"
import { WorkerStore } from "../src/ports/WorkerStore.js"
import { memoryBlobStore, transcriptText } from "./ConversationsServiceSuite.js"
import { opsOf } from "./ConversationOps.js"
import { decodeRequest } from "../src/domain/Common.js"
import { advance } from "./FollowupsServiceSuite.js"
import { uid, uuid } from "./RunStoreConformance.js"
import type { Stores } from "./Stores.js"
import { failureOf, seedWorld, T0, viewerOf } from "./World.js"

const runTokens = Layer.succeed(RunTokens, {
  issue: ({ execution_id }) => Effect.succeed(`rt_${execution_id}`),
  verify: () => Effect.succeed(Option.none())
})

const text = (s: string) => new TextEncoder().encode(s)

/** A team of its own, a member user and a service account acting as its workers. */
const seedTeamWorkers = (options: { readonly maxConcurrentRuns?: number } = {}) => Effect.gen(function*() {
  const world = yield* seedWorld(options)
  const principal = uid<PrincipalUid>()
  yield* (yield* IdentityStore).createPrincipal(
    new Principal({
      uid: principal,
      type: "service_account",
      display_name: "worker",
      instance_admin: false,
      memberships: [{ team_uid: world.team, role: "member" }],
      created_at: T0
    })
  )
  return { ...world, worker: viewerOf(world.team, principal, "member") }
})
const seedWorkers = seedTeamWorkers()

/** An executor the sweep never uses (nothing is claimed there). */
const idleExecutor = Layer.succeed(Executor, {
  prepare: () => Effect.fail(new ExecutorError({ message: "no executions in this test" })),
  leftovers: Effect.succeed([])
})

/** A run for `workerHost`, created by `viewer` (QUEUED). */
const createFor = (viewer: Viewer, workerHost: string, prompt = "work") =>
  Effect.flatMap(Runs, (runs) => runs.create(viewer, new RunAgentRequest({ prompt, config: { worker_host: workerHost } }))).pipe(
    Effect.map((r) => r.run_id as RunId)
  )

/** Claims (no wait) for `workerId` after a heartbeat: the answer and the execution the server named (none without a run). */
const claimAs = (worker: Viewer, workerId: string) =>
  Effect.gen(function*() {
    const workers = yield* Workers
    yield* workers.heartbeat(worker, workerId, new HeartbeatRequest({ capacity: 1 }))
    const answer = yield* workers.claim(worker, workerId, 0, WORKER_PROTOCOL, true)
    return { execution: (answer.claim?.execution_id ?? uuid<ExecutionId>()) as ExecutionId, answer }
  })

/** A run of a new team's worker, claimed: the world, the service, the worker id, the run and its execution. */
const heldByWorker = (prompt = "work") =>
  Effect.gen(function*() {
    const world = yield* seedWorkers
    const workers = yield* Workers
    const workerId = `w-${uid()}`
    const runId = yield* createFor(world.alice, workerId, prompt)
    const { execution } = yield* claimAs(world.worker, workerId)
    return { world, workers, workerId, runId, execution }
  })

export const workersServiceSuite = <E>(name: string, storage: Layer.Layer<Stores, E>): void => {
  const services = Layer.mergeAll(Workers.Default, Runs.Default).pipe(
    Layer.provideMerge(RunExecutions.Default),
    Layer.provideMerge(
      Layer.mergeAll(storage, IdsLive, memoryBlobStore, runTokens, Layer.succeed(WorkerSettingsTag, defaultWorkerSettings))
    )
  )

  /** The dispatcher's sweep over a fresh database, on the TestClock; the default wait (10 minutes). */
  const sweepServices = Layer.mergeAll(Workers.Default, Runs.Default, Followups.Default).pipe(
    Layer.provideMerge(RunExecutions.Default),
    Layer.provideMerge(
      Layer.mergeAll(
        storage,
        IdsLive,
        memoryBlobStore,
        runTokens,
        idleExecutor,
        Health.layer,
        LiveExecutions.Default,
        Layer.succeed(WorkerSettingsTag, defaultWorkerSettings),
        Layer.succeed(Dispatcher.DispatcherConfig, { ...Dispatcher.defaultSettings("true", "http://localhost/api/v1"), concurrency: 0 })
      )
    )
  )

  describe(`runs waiting for an absent self-hosted worker (${name})`, () => {
    plainIt.scoped("fail resource_unavailable once they and their worker's absence reach the wait (10 min), freeing the slot; follow-ups do not restart it", () =>
      Effect.gen(function*() {
        const MINUTE = 60_000
        const start = Date.UTC(2026, 10, 2)
        yield* TestClock.setTime(start)
        const world = yield* seedTeamWorkers({ maxConcurrentRuns: 2 })
        const runs = yield* Runs
        const workers = yield* Workers
        const followups = yield* Followups
        const sweep = yield* LeaseSweep.make
        const state = (id: RunId) => Effect.map(runs.get(world.alice, id), (r) => r.state)
        const sweepAt = (ms: number) => Effect.zipRight(TestClock.setTime(start + ms), sweep)

        const ghost = yield* createFor(world.alice, "ghost")
        const box = yield* createFor(world.alice, "box")
        const later = yield* createFor(world.alice, "later")
        expect([yield* state(ghost), yield* state(box), yield* state(later)]).toEqual(["QUEUED", "QUEUED", "PENDING"])
        // "box" connects once, five minutes in, then stays away.
        yield* TestClock.setTime(start + 5 * MINUTE)
        yield* workers.heartbeat(world.worker, "box", new HeartbeatRequest({ capacity: 1 }))

        // Follow-ups to the ghost run do not make it wait longer.
        yield* TestClock.setTime(start + 9 * MINUTE)
        yield* followups.send(world.alice, ghost, new RunFollowupRequest({ message: "still there?" }))
        yield* sweepAt(10 * MINUTE - 1)
        expect([yield* state(ghost), yield* state(box), yield* state(later)]).toEqual(["QUEUED", "QUEUED", "PENDING"])
        // The ghost run has waited 10 minutes for a worker never seen: it fails, and the waiting run gets its slot.
        yield* sweepAt(10 * MINUTE)
        const failed = yield* runs.get(world.alice, ghost)
        expect(failed.state).toBe("FAILED")
        expect(failed.status_message).toMatchObject({ error_code: "resource_unavailable" })
        expect(failed.status_message?.message).toContain("ghost")
        expect(failed.status_message?.message).toContain("600 s")
        expect((yield* runs.timeline(world.alice, ghost)).events.map((e) => e.event_type)).toContain("run_failed")
        expect([yield* state(box), yield* state(later)]).toEqual(["QUEUED", "QUEUED"])
        // "later"'s worker shows up once, 12 minutes in.
        yield* TestClock.setTime(start + 12 * MINUTE)
        yield* workers.heartbeat(world.worker, "later", new HeartbeatRequest({ capacity: 1 }))
        // "box" was seen 5 minutes in: its run waits until 10 minutes after that.
        yield* sweepAt(15 * MINUTE - 1)
        expect(yield* state(box)).toBe("QUEUED")
        yield* sweepAt(15 * MINUTE)
        expect([yield* state(box), yield* state(later)]).toEqual(["FAILED", "QUEUED"])
        // A worker seen within the wait keeps its runs waiting; 10 minutes after its last heartbeat, no longer.
        yield* sweepAt(22 * MINUTE - 1)
        expect(yield* state(later)).toBe("QUEUED")
        yield* sweepAt(22 * MINUTE)
        expect(yield* state(later)).toBe("FAILED")
      }).pipe(Effect.provide(sweepServices)), 60_000)
  })

  /** The service with a ceiling of runs' maximum runtime (one hour), over a fresh database, on the TestClock. */
  const overtimeServices = Layer.mergeAll(Workers.Default, Runs.Default).pipe(
    Layer.provideMerge(RunExecutions.Default),
    Layer.provideMerge(
      Layer.mergeAll(storage, IdsLive, memoryBlobStore, runTokens, Layer.succeed(WorkerSettingsTag, { ...defaultWorkerSettings, maxRuntimeSeconds: 3_600 }))
    )
  )

  describe(`a self-hosted worker's run past its maximum runtime (${name})`, () => {
    plainIt.scoped("a worker that lets its agent run past the run's maximum runtime: the server ends the run at its next renewal after a lease's grace", () =>
      Effect.gen(function*() {
          yield* TestClock.setTime(Date.UTC(2026, 10, 2))
          const world = yield* seedWorkers
          const workers = yield* Workers
          const runs = yield* Runs
          const workerId = `w-${uid()}`
          const runId = yield* Effect.map(
            runs.create(world.alice, new RunAgentRequest({ prompt: "forever", config: { worker_host: workerId, max_runtime_seconds: 60 } })),
            (r) => r.run_id as RunId
          )
          const { execution } = yield* claimAs(world.worker, workerId)
          const renew = workers.renew(world.worker, workerId, runId, execution, WORKER_PROTOCOL)
          // Setup does not count: the limit runs from the agent's start.
          yield* TestClock.adjust("20 seconds")
          yield* renew
          yield* workers.recordEvents(world.worker, workerId, runId, execution, [{ _tag: "EnvironmentSetupStarted" }, { _tag: "EnvironmentSetupSucceeded" }, { _tag: "Start" }])
          // The limit (60 s) and a lease's grace (30 s): renewals go on until then.
          for (let i = 0; i < 4; i++) {
            yield* TestClock.adjust("20 seconds")
            yield* renew
          }
          yield* TestClock.adjust("15 seconds")
          const refused = yield* failureOf(renew)
          expect(refused._tag).toBe("Conflict")
          const ended = yield* runs.get(world.alice, runId)
          expect(ended.state).toBe("FAILED")
          expect(ended.status_message).toMatchObject({ error_code: "max_runtime_exceeded" })
          expect(ended.status_message?.message).toContain("60 s")
          expect((yield* failureOf(workers.recordEvents(world.worker, workerId, runId, execution, [{ _tag: "Succeed" }])))._tag).toBe("Conflict")
        }).pipe(Effect.provide(overtimeServices)), 60_000)

    plainIt.scoped("a renewal of a run with a cost budget says what its children hold of it (the worker's check counts it)", () =>
      Effect.gen(function*() {
          yield* TestClock.setTime(Date.UTC(2026, 10, 2))
          const world = yield* seedWorkers
          const workers = yield* Workers
          const runs = yield* Runs
          const workerId = `w-${uid()}`
          const create = (config: NonNullable<RunAgentRequest["config"]>, parent?: RunId) =>
            Effect.map(
              runs.create(world.alice, new RunAgentRequest({ prompt: "p", config, ...(parent === undefined ? {} : { parent_run_id: parent }) })),
              (r) => r.run_id as RunId
            )
          const runId = yield* create({ worker_host: workerId, max_cost_usd: 2 })
          const { execution } = yield* claimAs(world.worker, workerId)
          expect((yield* workers.renew(world.worker, workerId, runId, execution, WORKER_PROTOCOL)).descendants_committed).toBe(0)
          yield* create({ max_cost_usd: 0.5 }, runId)
          expect((yield* workers.renew(world.worker, workerId, runId, execution, WORKER_PROTOCOL)).descendants_committed).toBe(0.5)
          // A run without a cost budget (on another worker: this one is at capacity): nothing said.
          const otherId = `w-${uid()}`
          const free = yield* create({ worker_host: otherId })
          const second = yield* claimAs(world.worker, otherId)
          expect((yield* workers.renew(world.worker, otherId, free, second.execution, WORKER_PROTOCOL)).descendants_committed).toBeUndefined()
        }).pipe(Effect.provide(overtimeServices)), 60_000)
  })

  describe(`workers service (${name})`, () => {
    layer(services, { excludeTestServices: true, timeout: "60 seconds" })("Workers", (it) => {
      it.effect("a claim takes the team's run for this worker id and says where its transcript ends", () =>
        Effect.gen(function*() {
          const world = yield* seedWorkers
          const workerId = `w-${uid()}`
          const runId = yield* createFor(world.alice, workerId)
          // An earlier execution's output is in the transcript already.
          yield* (yield* BlobStore).put(transcriptKey(runId), text("earlier\n"))
          const { answer, execution } = yield* claimAs(world.worker, workerId)
          expect(answer.claim?.run.run_id).toBe(runId)
          expect(answer.claim?.run.state).toBe("CLAIMED")
          expect(answer.claim?.run_token).toBe(`rt_${execution}`)
          expect(answer.claim?.transcript_bytes).toBe(8)
          expect(answer.claim?.environment).toBeNull()
          expect(answer.claim?.history).toEqual([])
          // The worker runs whatever it likes: it shaped the run, with its own role.
          expect(yield* (yield* RunStore).shapers([runId])).toEqual([{ uid: world.worker.principal_uid, role: "member" }])
          // Nothing left for it; another id's claim gets nothing either.
          expect((yield* claimAs(world.worker, workerId)).answer.claim).toBeNull()
          const other = yield* createFor(world.alice, `${workerId}-other`)
          expect((yield* claimAs(world.worker, workerId)).answer.claim).toBeNull()
          expect((yield* claimAs(world.worker, `${workerId}-other`)).answer.claim?.run.run_id).toBe(other)
        }))

      it.effect("a run created with conversation_id continues it: same id, the earlier run's messages as history; its images are attachments", () =>
        Effect.gen(function*() {
          const world = yield* seedWorkers
          const runs = yield* Runs
          const store = yield* RunStore
          const workerId = `w-${uid()}`
          const first = yield* createFor(world.alice, workerId, "first")
          const { execution } = yield* claimAs(world.worker, workerId)
          yield* advance(first, RunEvent.Start({ executionId: execution }))
          const said = (role: "user" | "assistant", text: string) => ({ role, content: [{ type: "text" as const, text }] })
          yield* store.appendConversation(first, execution, {
            seq: 1,
            ops: opsOf([{ id: "s1", messages: [said("user", "first"), said("assistant", "answer one")], steps: [] }])
          })
          yield* advance(first, RunEvent.Succeed({ executionId: execution }))
          const conversationId = (yield* runs.get(world.alice, first)).conversation_id!
          const png = "iVBORw0KGgoAAAANSUhEUg=="
          const second = yield* runs.create(
            world.alice,
            yield* decodeRequest(RunAgentRequest)({
              prompt: "second",
              conversation_id: conversationId,
              config: { worker_host: workerId },
              images: [{ mime_type: "image/png", data: png }, { mime_type: "image/png", data: png, name: "screen.png" }]
            })
          )
          expect((yield* runs.get(world.alice, second.run_id)).conversation_id).toBe(conversationId)
          const claim = (yield* claimAs(world.worker, workerId)).answer.claim
          expect(claim?.run.run_id).toBe(second.run_id)
          expect(claim?.history).toEqual([said("user", "first"), said("assistant", "answer one")])
          expect(claim?.attachments).toEqual([
            { name: "image-1.png", media_type: "image/png", data_base64: png },
            { name: "screen.png", media_type: "image/png", data_base64: png }
          ])
        }))

      it.effect("transcript appends with their offset: a retried request appends nothing; the answer is the next offset", () =>
        Effect.gen(function*() {
          const world = yield* seedWorkers
          const workers = yield* Workers
          const workerId = `w-${uid()}`
          const runId = yield* createFor(world.alice, workerId)
          const { answer, execution } = yield* claimAs(world.worker, workerId)
          expect(answer.claim?.transcript_bytes).toBe(0)
          const append = (chunk: string, offset: number) =>
            workers.appendTranscript(world.worker, workerId, runId, execution, text(chunk), offset)
          const first = yield* append("{\"type\":\"message\"}\n", 0)
          expect(first).toBe(19)
          // The answer was lost; the worker sends the same request again: a no-op.
          expect(yield* append("{\"type\":\"message\"}\n", 0)).toBe(19)
          const second = yield* append("line two\n", first)
          expect(second).toBe(28)
          // Retried twice, and concurrently with itself: still once.
          const retries = yield* Effect.all([append("line two\n", first), append("line two\n", first)], { concurrency: 2 })
          expect(retries).toEqual([28, 28])
          expect(yield* transcriptText(runId)).toBe("{\"type\":\"message\"}\nline two\n")
          // Past the run's output limit (which the heartbeat answers): 413, nothing appended.
          const limit = (yield* workers.heartbeat(world.worker, workerId, new HeartbeatRequest({ capacity: 1 }))).max_output_bytes
          expect(limit).toBe(DEFAULT_MAX_OUTPUT_BYTES)
          const past = yield* failureOf(append("too far\n", DEFAULT_MAX_OUTPUT_BYTES - 3))
          expect(past._tag).toBe("PayloadTooLarge")
          expect(yield* transcriptText(runId)).toBe("{\"type\":\"message\"}\nline two\n")
        }))

      it.effect("a later execution's appends start where the earlier ones ended", () =>
        Effect.gen(function*() {
          const world = yield* seedWorkers
          const workers = yield* Workers
          const workerId = `w-${uid()}`
          const runId = yield* createFor(world.alice, workerId)
          const one = yield* claimAs(world.worker, workerId)
          const end = yield* workers.appendTranscript(world.worker, workerId, runId, one.execution, text("first execution\n"), 0)
          // The lease is lost and the run requeued (as the sweep does); a new execution claims it.
          yield* advance(runId, RunEvent.LeaseExpired({ executionId: one.execution }), Date.now() + defaultWorkerSettings.leaseMs + 1)
          const two = yield* claimAs(world.worker, workerId)
          expect(two.answer.claim?.transcript_bytes).toBe(end)
          yield* workers.appendTranscript(world.worker, workerId, runId, two.execution, text("second\n"), end)
          // The first execution no longer holds the run: its (late) append is refused.
          const late = yield* failureOf(workers.appendTranscript(world.worker, workerId, runId, one.execution, text("late\n"), end))
          expect(late._tag).toBe("Conflict")
          expect(yield* transcriptText(runId)).toBe("first execution\nsecond\n")
        }))

      it.effect("a worker claims no more runs than the capacity its heartbeat declares", () =>
        Effect.gen(function*() {
          const world = yield* seedWorkers
          const workers = yield* Workers
          const workerId = `w-${uid()}`
          const first = yield* createFor(world.alice, workerId)
          const second = yield* createFor(world.alice, workerId)
          const one = yield* claimAs(world.worker, workerId)
          expect(one.answer.claim?.run.run_id).toBe(first)
          // Capacity 1, one run held: nothing more.
          expect((yield* claimAs(world.worker, workerId)).answer.claim).toBeNull()
          yield* workers.recordEvents(world.worker, workerId, first, one.execution, [
            { _tag: "EnvironmentSetupStarted" },
            { _tag: "EnvironmentSetupSucceeded" },
            { _tag: "Start" }
          ])
          expect((yield* claimAs(world.worker, workerId)).answer.claim).toBeNull()
          yield* workers.recordEvents(world.worker, workerId, first, one.execution, [{ _tag: "Succeed" }])
          expect((yield* claimAs(world.worker, workerId)).answer.claim?.run.run_id).toBe(second)
        }))

      it.effect("a worker claims only while its heartbeats are recent (none yet, or older than 2 intervals: nothing)", () =>
        Effect.gen(function*() {
          const world = yield* seedWorkers
          const workers = yield* Workers
          const workerId = `w-${uid()}`
          const runId = yield* createFor(world.alice, workerId)
          const claimNow = () => workers.claim(world.worker, workerId, 0, WORKER_PROTOCOL)
          expect((yield* claimNow()).claim).toBeNull()
          // Still listed (not expired), but its latest heartbeat is 2.5 intervals old: it froze.
          const then = Date.now() - 2.5 * defaultWorkerSettings.heartbeatMs
          yield* (yield* WorkerStore).heartbeat({
            team_uid: world.team,
            worker_id: workerId,
            display_name: workerId,
            version: null,
            protocol: WORKER_PROTOCOL,
            labels: [],
            capacity: 1,
            now: then,
            expires_at: then + defaultWorkerSettings.staleAfterMs
          })
          expect((yield* workers.list(world.alice)).workers.map((w) => w.worker_id)).toContain(workerId)
          expect((yield* claimNow()).claim).toBeNull()
          // It comes back: its next heartbeat lets it claim.
          expect((yield* claimAs(world.worker, workerId)).answer.claim?.run.run_id).toBe(runId)
        }))

      it.effect("a worker touches only its team's runs addressed to its id; users cannot act as workers", () =>
        Effect.gen(function*() {
          const world = yield* seedWorkers
          const other = yield* seedWorkers
          const workers = yield* Workers
          const workerId = `w-${uid()}`
          const runId = yield* createFor(world.alice, workerId)
          // Another team's worker with the same id neither claims nor sees it.
          expect((yield* claimAs(other.worker, workerId)).answer.claim).toBeNull()
          expect((yield* failureOf(workers.claim(world.alice, workerId, 0, WORKER_PROTOCOL)))._tag).toBe("NotAuthorized")
          const { execution } = yield* claimAs(world.worker, workerId)
          // Not its run (another team's worker, another id): 404, whatever the execution.
          const start = [{ _tag: "Start" }] as const
          expect((yield* failureOf(workers.recordEvents(other.worker, workerId, runId, execution, start)))._tag).toBe("ResourceNotFound")
          expect((yield* failureOf(workers.takeFollowups(world.worker, `${workerId}-x`, runId, execution)))._tag).toBe("ResourceNotFound")
          const stranger = uuid<ExecutionId>()
          const refused = yield* failureOf(workers.appendTranscript(world.worker, workerId, runId, stranger, text("x"), 0))
          expect(refused._tag).toBe("Conflict")
          expect(yield* workers.appendTranscript(world.worker, workerId, runId, execution, text("x"), 0)).toBe(1)
          // Another execution's events, report or follow-ups: 409 (it does not hold the run).
          expect((yield* failureOf(workers.recordEvents(world.worker, workerId, runId, stranger, start)))._tag).toBe("Conflict")
          expect((yield* failureOf(workers.takeFollowups(world.worker, workerId, runId, stranger)))._tag).toBe("Conflict")
        }))

      it.effect("a claim hands the bound worker the secrets its agent gets, recorded as the agent's reads; nobody else gets them", () =>
        Effect.gen(function*() {
          const world = yield* seedWorkers
          const other = yield* seedWorkers
          const secrets = yield* SecretStore
          const workerId = `w-${uid()}`
          yield* secrets.put(world.team, "ANTHROPIC_API_KEY" as SecretName, Redacted.make("sk-team-key"), 0)
          yield* secrets.put(other.team, "ANTHROPIC_API_KEY" as SecretName, Redacted.make("sk-other-key"), 0)
          // A registered MCP server whose header reads a team secret (members may use it).
          const registered = { url: "https://mcp.example/tools", headers: { Authorization: "Bearer ${{ secrets.TOOLS_TOKEN }}" } }
          yield* secrets.put(world.team, "MCP_SERVER_tools" as SecretName, Redacted.make(JSON.stringify(registered)), 0)
          yield* secrets.put(world.team, "TOOLS_TOKEN" as SecretName, Redacted.make("tools-token"), 0)
          const runs = yield* Runs
          const created = yield* runs.create(
            world.alice,
            new RunAgentRequest({
              prompt: "work",
              config: { worker_host: workerId, harness: { type: "claude" }, mcp_servers: { tools: { server_id: "tools" } } }
            })
          )
          // Another team's worker with the same id, and a second service account of the team under
          // that id (the id is bound to the first): neither gets the run, nor its key.
          expect((yield* claimAs(other.worker, workerId)).answer.claim).toBeNull()
          const bound = yield* claimAs(world.worker, workerId)
          const second = uid<PrincipalUid>()
          yield* (yield* IdentityStore).createPrincipal(
            new Principal({
              uid: second,
              type: "service_account",
              display_name: "intruder",
              instance_admin: false,
              memberships: [{ team_uid: world.team, role: "member" }],
              created_at: T0
            })
          )
          const intruder = yield* failureOf(claimAs(viewerOf(world.team, second, "member"), workerId))
          expect(intruder._tag).toBe("NotAuthorized")
          // The bound worker's claim carries the key and the MCP server with its secret's value.
          expect(bound.answer.claim?.run.run_id).toBe(created.run_id)
          expect(bound.answer.claim?.secrets).toEqual({
            agent_auth: { value: "sk-team-key" },
            mcp_servers: { value: { tools: { url: "https://mcp.example/tools", headers: { Authorization: "Bearer tools-token" } } } }
          })
          // Recorded as the run's agent reading the secrets.
          const audit = yield* AuditLog
          const readsOf = (runId: string) =>
            Effect.map(
              audit.list({ team_uid: world.team, action: "secret.read", limit: 10, order: "oldest_first" }),
              (entries) => entries.filter((e) => e.actor.run_id === runId).map((e) => e.resource.id).sort()
            )
          expect(yield* readsOf(created.run_id)).toEqual(["ANTHROPIC_API_KEY", "MCP_SERVER_tools", "TOOLS_TOKEN"])
          // A worker that does not say it takes secrets (an older one) is handed none, and none are read.
          const older = yield* runs.create(world.alice, new RunAgentRequest({ prompt: "old", config: { worker_host: workerId, harness: { type: "claude" } } }))
          yield* (yield* Workers).heartbeat(world.worker, workerId, new HeartbeatRequest({ capacity: 2 }))
          const plain = yield* (yield* Workers).claim(world.worker, workerId, 0, WORKER_PROTOCOL)
          expect(plain.claim?.run.run_id).toBe(older.run_id)
          expect(plain.claim?.secrets).toBeUndefined()
          expect(yield* readsOf(older.run_id)).toEqual([])
        }))

      it.effect("a claim says why a secret cannot be given (gone since), and hands nothing for a refused run", () =>
        Effect.gen(function*() {
          const world = yield* seedWorkers
          const secrets = yield* SecretStore
          const workerId = `w-${uid()}`
          yield* secrets.put(world.team, "ANTHROPIC_API_KEY" as SecretName, Redacted.make("sk-team-key"), 0)
          yield* secrets.put(world.team, "GH_TOKEN" as SecretName, Redacted.make("ghp-admin-only"), 0)
          const runs = yield* Runs
          yield* runs.create(world.alice, new RunAgentRequest({ prompt: "work", config: { worker_host: workerId, harness: { type: "claude" } } }))
          yield* secrets.remove(world.team, "ANTHROPIC_API_KEY" as SecretName)
          const gone = (yield* claimAs(world.worker, workerId)).answer.claim
          expect(gone?.secrets?.agent_auth).toEqual({ failure: expect.stringContaining("ANTHROPIC_API_KEY") })
          // An admin's run whose MCP server reads a secret only admins hand out: the worker (a
          // member) shapes it by claiming it, so its agent may not get it, and nothing is handed over.
          const mcp = { gh: { url: "https://mcp.example/gh", headers: { Authorization: "Bearer ${{ secrets.GH_TOKEN }}" } } }
          yield* runs.create(world.admin, new RunAgentRequest({ prompt: "work", config: { worker_host: workerId, mcp_servers: mcp } }))
          const refused = (yield* claimAs(world.worker, workerId)).answer.claim
          expect(refused?.refusal).not.toBeNull()
          expect(refused?.secrets).toBeUndefined()
          expect(JSON.stringify(refused)).not.toContain("ghp-admin-only")
        }))

      it.effect("an agent CLI's session files arrive in parts, are kept once whole, and are read back by the holding execution", () =>
        Effect.gen(function*() {
          const { execution, runId, workerId, workers, world } = yield* heldByWorker()
          const PART = AGENT_STATE_PART_BYTES
          const state = new Uint8Array(PART + 1000).map((_, i) => i % 251)
          const part = (offset: number, end: number) => ({ offset, bytes: state.subarray(offset, end), total: state.length })
          const save = (p: ReturnType<typeof part>) => workers.saveAgentState(world.worker, workerId, runId, execution, p)
          const read = (offset: number) => workers.readAgentState(world.worker, workerId, runId, execution, offset)
          expect(yield* save(part(0, 600))).toEqual({ received: 600, saved: false })
          // Sent again (a lost answer): nothing changes; nothing is kept before the last part.
          expect(yield* save(part(0, 600))).toEqual({ received: 600, saved: false })
          expect(yield* read(0)).toEqual(Option.none())
          // A part ahead of a missing one is refused, naming where to go on.
          const ahead = yield* failureOf(save(part(700, 800)))
          expect(ahead).toMatchObject({ _tag: "InvalidRequest", field: "offset" })
          // Another total than the first part's: refused, the upload dropped (start again from 0).
          const retotalled = { offset: 600, bytes: state.subarray(600, 700), total: 5_000 }
          expect(yield* failureOf(save(retotalled))).toMatchObject({ _tag: "InvalidRequest", field: "total_bytes" })
          expect(yield* failureOf(save(part(600, 700)))).toMatchObject({ _tag: "InvalidRequest", field: "offset" })
          expect(yield* save(part(0, 600))).toEqual({ received: 600, saved: false })
          expect(yield* save(part(600, PART))).toEqual({ received: PART, saved: false })
          expect(yield* save(part(PART, PART + 1000))).toEqual({ received: PART + 1000, saved: true })
          // The last part again after it was kept: saved, nothing left behind; other bytes there are not.
          expect(yield* save(part(PART, PART + 1000))).toEqual({ received: PART + 1000, saved: true })
          const forged = { offset: PART, bytes: new Uint8Array(1000), total: PART + 1000 }
          expect(yield* failureOf(save(forged))).toMatchObject({ _tag: "InvalidRequest", field: "offset" })
          // Read back in parts of at most AGENT_STATE_PART_BYTES, with the size.
          const first = yield* read(0)
          expect(Option.map(first, (p) => [p.bytes.length, p.total])).toEqual(Option.some([PART, PART + 1000]))
          const rest = yield* read(PART)
          expect(Option.map(rest, (p) => p.bytes)).toEqual(Option.some(state.subarray(PART)))
          expect(Option.map(first, (p) => p.bytes)).toEqual(Option.some(state.subarray(0, PART)))
          // Over the limit, past its own total, another execution, another team's worker.
          const big = { offset: 0, bytes: state.subarray(0, 10), total: 17 * 1024 * 1024 }
          expect((yield* failureOf(save(big)))._tag).toBe("PayloadTooLarge")
          const wide = { offset: 0, bytes: state, total: state.length }
          expect((yield* failureOf(save(wide)))._tag).toBe("PayloadTooLarge")
          const past = { offset: 900, bytes: state.subarray(0, 200), total: 1000 }
          expect((yield* failureOf(workers.saveAgentState(world.worker, workerId, runId, execution, past)))._tag).toBe("InvalidRequest")
          const stranger = uuid<ExecutionId>()
          expect((yield* failureOf(workers.readAgentState(world.worker, workerId, runId, stranger, 0)))._tag).toBe("Conflict")
          expect((yield* failureOf(workers.saveAgentState(world.worker, workerId, runId, stranger, part(0, 10))))._tag).toBe("Conflict")
          const other = yield* seedWorkers
          expect((yield* failureOf(workers.readAgentState(other.worker, workerId, runId, execution, 0)))._tag).toBe("ResourceNotFound")
        }))

      it.effect("a worker of a release more than one minor apart is refused with both protocols named; one minor apart claims", () =>
        Effect.gen(function*() {
          const world = yield* seedWorkers
          const workers = yield* Workers
          const workerId = `w-${uid()}`
          yield* createFor(world.alice, workerId)
          // A heartbeat that says protocols none of which the server speaks is refused.
          const tooNew = new HeartbeatRequest({ capacity: 1, protocol: WORKER_PROTOCOL + 2, oldest_protocol: WORKER_PROTOCOL + 1, version: "9.9.0" })
          const refusedBeat = yield* failureOf(workers.heartbeat(world.worker, workerId, tooNew))
          expect(refusedBeat._tag).toBe("OperationNotSupported")
          expect(refusedBeat.message).toContain(`(release 9.9.0) speaks ${WORKER_PROTOCOL + 1}–${WORKER_PROTOCOL + 2}`)
          // One that overlaps is answered with the server's range and release.
          const answer = yield* workers.heartbeat(world.worker, workerId, new HeartbeatRequest({ capacity: 1, protocol: WORKER_PROTOCOL + 1, oldest_protocol: WORKER_PROTOCOL }))
          expect(answer).toMatchObject({ protocol: WORKER_PROTOCOL, oldest_protocol: OLDEST_WORKER_PROTOCOL, version: VERSION })
          for (const protocol of [undefined, OLDEST_WORKER_PROTOCOL - 1, WORKER_PROTOCOL + 1]) {
            const refused = yield* failureOf(workers.claim(world.worker, workerId, 0, protocol))
            expect(refused._tag).toBe("OperationNotSupported")
            expect(refused.message).toContain(`speaks worker protocols ${OLDEST_WORKER_PROTOCOL}–${WORKER_PROTOCOL}`)
          }
          // The run was not claimed by the refused worker; a worker of the previous minor release claims it.
          expect((yield* workers.claim(world.worker, workerId, 0, OLDEST_WORKER_PROTOCOL)).claim).not.toBeNull()
        }))

      it.effect("a worker's events move its run as the server's own executions do; the run's other fields stay the server's", () =>
        Effect.gen(function*() {
          const { execution, runId, workerId, workers, world } = yield* heldByWorker("the server's prompt")
          const runs = yield* Runs
          const progress = yield* workers.recordEvents(world.worker, workerId, runId, execution, [
            { _tag: "EnvironmentSetupStarted" },
            { _tag: "EnvironmentSetupSucceeded" },
            { _tag: "Start" }
          ])
          expect(progress.state).toBe("INPROGRESS")
          yield* workers.report(world.worker, workerId, runId, execution, {
            session_id: "s-1",
            request_usage: { input_tokens: 5, output_tokens: 7, inference_cost: 0, compute_cost: 0 },
            status: "working"
          })
          const during = yield* runs.get(world.alice, runId)
          expect(during).toMatchObject({ state: "INPROGRESS", session_id: "s-1", status_message: { message: "working" } })
          expect(during.started_at).not.toBeNull()
          expect(during.request_usage.output_tokens).toBe(7)
          // An event that does not apply (a second start) is refused as stale: 409, the run unchanged.
          expect((yield* failureOf(workers.recordEvents(world.worker, workerId, runId, execution, [{ _tag: "EnvironmentSetupStarted" }])))._tag)
            .toBe("Conflict")
          const done = yield* workers.recordEvents(world.worker, workerId, runId, execution, [{ _tag: "Succeed", message: "done" }])
          expect(done.state).toBe("SUCCEEDED")
          const after = yield* runs.get(world.alice, runId)
          expect(after).toMatchObject({ state: "SUCCEEDED", prompt: "the server's prompt", attempt: 1, is_sandbox_running: false })
          expect((yield* runs.timeline(world.alice, runId)).events.map((e) => e.event_type)).toEqual([
            "run_created",
            "run_pending",
            "run_queued",
            "run_claimed",
            "environment_setup_started",
            "environment_setup_succeeded",
            "run_in_progress",
            "run_succeeded"
          ])
          // Once ended, the execution holds nothing: no more reports, events or follow-ups.
          expect((yield* failureOf(workers.report(world.worker, workerId, runId, execution, { request_usage: during.request_usage })))._tag)
            .toBe("Conflict")
          expect((yield* failureOf(workers.takeFollowups(world.worker, workerId, runId, execution)))._tag).toBe("Conflict")
        }))

      it.effect("a worker's events after someone else wrote its run keep what they wrote (the holder's copy is stale: read again)", () =>
        Effect.gen(function*() {
          const { execution, runId, workerId, workers, world } = yield* heldByWorker()
          const store = yield* RunStore
          // Another writer (same state, same holder) changes the run after the claim.
          const claimed = Option.getOrThrow(yield* store.get(runId))
          const retitled = { ...claimed, item: new RunItem({ ...claimed.item, title: "retitled meanwhile" }, true) }
          yield* store.update(runId, { state: "CLAIMED", execution_id: execution }, retitled, [])
          const progress = yield* workers.recordEvents(world.worker, workerId, runId, execution, [{ _tag: "Start" }])
          expect(progress.state).toBe("INPROGRESS")
          const started = Option.getOrThrow(yield* store.get(runId))
          expect([started.item.state, started.item.title]).toEqual(["INPROGRESS", "retitled meanwhile"])
          // And again after a report through the store itself.
          const reported = { ...started, item: new RunItem({ ...started.item, title: "retitled again" }, true) }
          yield* store.update(runId, { state: "INPROGRESS", execution_id: execution }, reported, [])
          yield* workers.recordEvents(world.worker, workerId, runId, execution, [{ _tag: "Succeed", message: "done" }])
          const ended = Option.getOrThrow(yield* store.get(runId))
          expect([ended.item.state, ended.item.title]).toEqual(["SUCCEEDED", "retitled again"])
        }))

      it.effect("an event the holder's copy refuses is tried on the run as stored: another replica recorded the start", () =>
        Effect.gen(function*() {
          const { execution, runId } = yield* heldByWorker()
          const store = yield* RunStore
          // The start, recorded through another replica: this one's copy still says CLAIMED.
          const claimed = Option.getOrThrow(yield* store.get(runId))
          const started = { ...claimed, item: new RunItem({ ...claimed.item, state: "INPROGRESS" }, true) }
          yield* store.update(runId, { state: "CLAIMED", execution_id: execution }, started, [])
          const recorded = yield* (yield* RunExecutions).record(runId, execution, [{ _tag: "Succeed", message: "done" }])
          expect(recorded.state).toBe("SUCCEEDED")
        }))

      it.effect("events and reports from a read that someone else's write made stale are tried again on the run as stored", () =>
        Effect.gen(function*() {
          const { execution, runId } = yield* heldByWorker()
          const store = yield* RunStore
          const executions = yield* RunExecutions
          // The worker's request read the run; another writer changed it before the event was written.
          const read = Option.getOrThrow(yield* store.get(runId))
          const retitled = { ...read, item: new RunItem({ ...read.item, title: "retitled meanwhile" }, true) }
          yield* store.update(runId, { state: "CLAIMED", execution_id: execution }, retitled, [])
          const started = yield* executions.record(runId, execution, [{ _tag: "Start" }], { current: read })
          expect(started.state).toBe("INPROGRESS")
          expect(Option.getOrThrow(yield* store.get(runId)).item.title).toBe("retitled meanwhile")
          const stale = Option.getOrThrow(yield* store.get(runId))
          const again = { ...stale, item: new RunItem({ ...stale.item, title: "retitled again" }, true) }
          yield* store.update(runId, { state: "INPROGRESS", execution_id: execution }, again, [])
          yield* executions.report(runId, execution, { request_usage: stale.item.request_usage, status: "working" }, stale)
          const after = Option.getOrThrow(yield* store.get(runId))
          expect([after.item.state, after.item.title, after.item.status_message?.message]).toEqual(["INPROGRESS", "retitled again", "working"])
        }))

      it.effect("a lapsed lease is lost for a worker: renewals and events are 409 even before the sweep; an older worker's renewal is 422", () =>
        Effect.gen(function*() {
          const { execution, runId, workerId, workers, world } = yield* heldByWorker()
          const refused = yield* failureOf(workers.renew(world.worker, workerId, runId, execution, undefined))
          expect(refused._tag).toBe("OperationNotSupported")
          expect((yield* workers.renew(world.worker, workerId, runId, execution, WORKER_PROTOCOL)).expires_at).toBeGreaterThan(Date.now())
          // The worker froze: its lease ran out (the sweep has not run yet).
          yield* (yield* RunStore).renewLease(runId, execution, Date.now() - 1)
          expect((yield* failureOf(workers.renew(world.worker, workerId, runId, execution, WORKER_PROTOCOL)))._tag).toBe("Conflict")
          expect((yield* failureOf(workers.recordEvents(world.worker, workerId, runId, execution, [{ _tag: "Start" }])))._tag).toBe("Conflict")
          expect((yield* failureOf(workers.appendTranscript(world.worker, workerId, runId, execution, text("late\n"), 0)))._tag).toBe("Conflict")
          expect((yield* Effect.flatMap(Runs, (runs) => runs.get(world.alice, runId))).state).toBe("CLAIMED")
        }))

      it.effect("a worker's artifact is stamped with the server's time; a run keeps at most 1,000", () =>
        Effect.gen(function*() {
          const { execution, runId, workerId, workers, world } = yield* heldByWorker()
          const future = DateTime.unsafeMake(Date.UTC(2099, 0, 1))
          const before = Date.now()
          yield* workers.addArtifact(world.worker, workerId, runId, execution, {
            artifact_type: "EXTERNAL_REFERENCE",
            created_at: future,
            data: { url: "https://tracker.example/T-1" }
          })
          const [artifact] = (yield* Effect.flatMap(Runs, (runs) => runs.get(world.alice, runId))).artifacts ?? []
          expect(DateTime.toEpochMillis(artifact!.created_at)).toBeGreaterThanOrEqual(before)
          expect(DateTime.toEpochMillis(artifact!.created_at)).toBeLessThan(Date.UTC(2099, 0, 1))
          // A run keeps at most 1,000: the next is 413, nothing stored.
          const reference = (n: number) =>
            workers.addArtifact(world.worker, workerId, runId, execution, {
              artifact_type: "EXTERNAL_REFERENCE",
              created_at: future,
              data: { url: `https://tracker.example/T-${n}` }
            })
          for (let n = 2; n <= MAX_ARTIFACTS_PER_RUN; n++) yield* reference(n)
          expect((yield* failureOf(reference(0)))._tag).toBe("PayloadTooLarge")
          expect((yield* Effect.flatMap(Runs, (runs) => runs.get(world.alice, runId))).artifacts).toHaveLength(MAX_ARTIFACTS_PER_RUN)
        }))

      it.effect("a worker's failed setup keeps no sandbox, whatever retention it asks for", () =>
        Effect.gen(function*() {
          const { execution, runId, workerId, workers, world } = yield* heldByWorker()
          const runs = yield* Runs
          const failed = yield* workers.recordEvents(world.worker, workerId, runId, execution, [
            { _tag: "EnvironmentSetupStarted" },
            { _tag: "EnvironmentSetupFailed", message: "setup broke", retention_ms: 3_600_000 }
          ])
          expect(failed.state).toBe("FAILED")
          const run = yield* runs.get(world.alice, runId)
          expect(run.is_sandbox_running).toBe(false)
          expect(run.status_message?.session_debug_until).toBeUndefined()
        }))
    })
  })
}
