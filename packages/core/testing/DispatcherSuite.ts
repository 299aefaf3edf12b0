/**
 * The execution engine (`Dispatcher`) over a real storage adapter, an in-memory BlobStore and the
 * in-process scripted executor, on the TestClock: no server, no processes, no wall-clock sleeps.
 * Storage faults are injected by a switch in front of the RunStore (its writes fail while on).
 * Call `dispatcherSuite(name, layer)` inside a vitest file; `layer` must make a fresh database
 * each time it is built, and answer without real waiting (SQLite: its calls are synchronous, so
 * the TestClock alone decides what happens when).
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Context, Effect, Layer, Option, Ref, TestClock } from "effect"
import type { Viewer } from "../src/domain/Access.js"
import type { ConversationStep } from "../src/domain/Conversation.js"
import * as Dispatcher from "../src/engine/Dispatcher.js"
import { DebugWindows } from "../src/engine/DebugWindows.js"
import * as ExecutionLoop from "../src/engine/ExecutionLoop.js"
import * as LeaseSweep from "../src/engine/LeaseSweep.js"
import * as LocalHost from "../src/engine/LocalHost.js"
import * as SandboxReaper from "../src/engine/SandboxReaper.js"
import { RunExecutions } from "../src/engine/RunExecutions.js"
import * as Health from "../src/engine/Health.js"
import { LiveExecutions } from "../src/engine/LiveExecutions.js"
import { type ExecutionId, IdsLive, type RunId } from "../src/domain/Ids.js"
import type { BlobStore } from "../src/ports/BlobStore.js"
import type { Executor } from "../src/ports/Executor.js"
import { RunStore } from "../src/ports/RunStore.js"
import { RunTokens } from "../src/ports/RunTokens.js"
import { StorageError } from "../src/ports/Storage.js"
import { Environment, type EnvironmentConfig } from "../src/domain/Environment.js"
import { RunAgentRequest, RunFollowupRequest } from "../src/domain/Run.js"
import { EnvironmentStore } from "../src/ports/EnvironmentStore.js"
import { Followups } from "../src/services/Followups.js"
import { Runs } from "../src/services/Runs.js"
import { memoryBlobStore, transcriptText } from "./ConversationsServiceSuite.js"
import { makeEnvironment } from "./CatalogConformance.js"
import { testRepos } from "./RunsServiceSuite.js"
import { pass } from "./ClockSteps.js"
import { scriptedExecutor } from "./ScriptedExecutor.js"
import type { Stores } from "./Stores.js"
import { seedWorld } from "./World.js"

const runTokens = Layer.succeed(RunTokens, {
  issue: ({ execution_id }) => Effect.succeed(`rt_${execution_id}`),
  verify: () => Effect.succeed(Option.none())
})

/** A switch that makes the RunStore's writes fail while it is on. */
class StorageFault extends Context.Tag("@agent-runs/core/testing/StorageFault")<StorageFault, Ref.Ref<boolean>>() {}

const faulty = Layer.effect(
  RunStore,
  Effect.gen(function*() {
    const inner = yield* RunStore
    const fault = yield* StorageFault
    const guarded = <A extends ReadonlyArray<unknown>, R, E>(name: string, write: (...args: A) => Effect.Effect<R, E>) =>
    (...args: A): Effect.Effect<R, E | StorageError> =>
      Effect.flatMap(Ref.get(fault), (on): Effect.Effect<R, E | StorageError> =>
        on ? Effect.fail(new StorageError({ operation: name, cause: "injected fault" })) : write(...args))
    return RunStore.of({
      ...inner,
      update: guarded("RunStore.update", inner.update),
      renewLease: guarded("RunStore.renewLease", inner.renewLease),
      appendConversation: guarded("RunStore.appendConversation", inner.appendConversation),
      addArtifact: guarded("RunStore.addArtifact", inner.addArtifact)
    })
  })
)

const LEASE_MS = 3_000
const MAX_OUTPUT = 100_000
/** The ceiling of a run's maximum runtime here. */
const MAX_RUNTIME_SECONDS = 30

/** What the agent said: the text blocks of its messages (not the user's). */
const texts = (steps: ReadonlyArray<ConversationStep>): Array<string> =>
  steps.flatMap((s) => [
    ...s.messages.flatMap((m) => m.role === "user" ? [] : m.content.flatMap((b) => (b.type === "text" ? [b.text] : []))),
    ...texts(s.steps)
  ])

/** Who said what, in order: each message's role and its text blocks. */
const dialogue = (steps: ReadonlyArray<ConversationStep>): Array<string> =>
  steps.flatMap((s) => [
    ...s.messages.map((m) => `${m.role}: ${m.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join(" ")}`),
    ...dialogue(s.steps)
  ])

export const dispatcherSuite = <E>(name: string, storage: Layer.Layer<Stores, E>) => {
  const setup = Effect.gen(function*() {
    const executor = yield* scriptedExecutor
    const fault = yield* Ref.make(false)
    const services = Layer.mergeAll(Runs.Default, Followups.Default, LocalHost.layer).pipe(
      Layer.provideMerge(DebugWindows.Default),
      Layer.provideMerge(RunExecutions.Default),
      Layer.provideMerge(
        Layer.mergeAll(
          faulty.pipe(Layer.provide(Layer.succeed(StorageFault, fault))),
          executor.layer,
          memoryBlobStore,
          runTokens,
          testRepos,
          IdsLive,
          Health.layer,
          LiveExecutions.Default,
          Layer.succeed(Dispatcher.DispatcherConfig, {
            ...Dispatcher.defaultSettings("agent", "http://localhost/api/v1"),
            concurrency: 4,
            leaseMs: LEASE_MS,
            maxOutputBytes: MAX_OUTPUT,
            maxRuntimeSeconds: MAX_RUNTIME_SECONDS
          })
        ).pipe(Layer.provideMerge(storage))
      )
    )
    return { executor, fault, services }
  })

  /** Runs `test` with a dispatcher (its parts called by the test) over fresh storage. */
  const withDispatcher = <A>(
    test: (env: {
      readonly viewer: Viewer
      readonly create: (prompt: string) => Effect.Effect<RunId, unknown, Runs>
      /** The execution loop's claiming and the lease sweep, called by the test. */
      readonly dispatcher: {
        readonly claimSome: Effect.Effect<void, unknown>
        readonly sweep: Effect.Effect<void, unknown>
        /** The debug windows' tending (ends windows, starts debug agents). */
        readonly tend: Effect.Effect<void, unknown>
        /** What another server starting over the same place does first: takes back the executor's leftovers. */
        readonly recover: Effect.Effect<void, unknown>
      }
      /** Creates a run in a new environment of the team with these setup commands and debug window (and `config` besides). */
      readonly createIn: (
        prompt: string,
        setup: ReadonlyArray<string>,
        retentionMinutes: number,
        config?: Partial<EnvironmentConfig>
      ) => Effect.Effect<RunId, unknown, Runs>
      /** Creates a run with this configuration. */
      readonly createWith: (prompt: string, config: NonNullable<RunAgentRequest["config"]>) => Effect.Effect<RunId, unknown, Runs>
      readonly fault: Ref.Ref<boolean>
      readonly sandboxes: Effect.Effect<number>
      /** Adds a sandbox as another server would have made it. */
      readonly foreign: (run: RunId, execution: ExecutionId) => Effect.Effect<void>
      /** Moves the clock `ms` in steps of 50 ms, letting every fiber run at each. */
      readonly pass: (ms: number) => Effect.Effect<void>
    }) => Effect.Effect<A, unknown, Runs | Followups | RunStore | BlobStore | Health.Health | EnvironmentStore | Executor>
  ) =>
    Effect.gen(function*() {
      const { executor, fault, services } = yield* setup
      return yield* Effect.gen(function*() {
        yield* TestClock.setTime(Date.UTC(2026, 10, 25))
        // One run at a time for the team: the second waits PENDING.
        const world = yield* seedWorld({ maxConcurrentRuns: 1 })
        const loop = yield* ExecutionLoop.make(yield* Effect.scope)
        const windows = yield* DebugWindows
        const context = yield* Effect.context<Layer.Layer.Context<typeof DebugWindows.Default>>()
        const recover = Effect.scoped(Layer.build(DebugWindows.Default)).pipe(Effect.asVoid, Effect.provide(context))
        const dispatcher = { claimSome: loop.claimSome, sweep: yield* LeaseSweep.make, tend: windows.tend, recover }
        const create = (prompt: string) =>
          Effect.map(Effect.flatMap(Runs, (runs) => runs.create(world.alice, new RunAgentRequest({ prompt }))), (r) => r.run_id as RunId)
        const environments = yield* EnvironmentStore
        const createWith = (prompt: string, config: NonNullable<RunAgentRequest["config"]>) =>
          Effect.map(Effect.flatMap(Runs, (runs) => runs.create(world.alice, new RunAgentRequest({ prompt, config }))), (r) => r.run_id as RunId)
        const createIn = (prompt: string, setup: ReadonlyArray<string>, retentionMinutes: number, config: Partial<EnvironmentConfig> = {}) =>
          Effect.gen(function*() {
            const base = makeEnvironment({ team: world.team, creator: world.alice.principal_uid, teamScope: true })
            const env = new Environment({
              ...base.item,
              config: { ...base.item.config, ...config, setup_commands: setup, failure_session_retention_minutes: retentionMinutes }
            })
            yield* environments.create({ ...base, item: env })
            const created = yield* Effect.flatMap(Runs, (runs) =>
              runs.create(world.alice, new RunAgentRequest({ prompt, config: { environment_id: env.uid } })))
            return created.run_id as RunId
          })
        return yield* test({
          viewer: world.alice,
          create,
          createIn,
          createWith,
          dispatcher,
          fault,
          sandboxes: executor.sandboxes,
          foreign: executor.foreign,
          pass
        })
      }).pipe(Effect.scoped, Effect.provide(services))
    })

  const runOf = (viewer: Viewer, id: RunId) => Effect.flatMap(Runs, (runs) => runs.get(viewer, id))
  describe(`the execution engine on the TestClock (${name})`, () => {
    it.scoped("delivers a follow-up to the running agent; admits the waiting run once the first ends", () =>
      withDispatcher(({ create, dispatcher, pass, viewer }) =>
        Effect.gen(function*() {
          const first = yield* create("say working\nsleep 2000\nsay done")
          const second = yield* create("say second")
          expect((yield* runOf(viewer, second)).state).toBe("PENDING")
          yield* dispatcher.claimSome
          yield* pass(500)
          yield* Effect.flatMap(Followups, (f) => f.send(viewer, first, new RunFollowupRequest({ message: "also this" })))
          yield* pass(2_000)
          expect((yield* runOf(viewer, first)).state).toBe("SUCCEEDED")
          const steps = yield* Effect.flatMap(RunStore, (store) => store.conversation(first))
          expect(texts(steps)).toEqual(["working", "got: also this", "done"])
          // The first run's end admitted the second, and its freed slot claimed and ran it.
          yield* pass(500)
          const admitted = yield* runOf(viewer, second)
          expect(admitted.state).toBe("SUCCEEDED")
          expect(texts(yield* Effect.flatMap(RunStore, (store) => store.conversation(second)))).toEqual(["second"])
        })
      ))

    it.scoped("the conversation is the dialogue: the prompt and every follow-up as user messages; an empty continuation adds none and re-runs nothing", () =>
      withDispatcher(({ create, dispatcher, pass, viewer }) =>
        Effect.gen(function*() {
          const send = (id: RunId, message: string) =>
            Effect.flatMap(Followups, (f) => f.send(viewer, id, new RunFollowupRequest({ message })))
          const conversation = (id: RunId) => Effect.flatMap(RunStore, (store) => store.conversation(id))
          const id = yield* create("say working\nsleep 2000\nsay done")
          yield* dispatcher.claimSome
          yield* pass(500)
          yield* send(id, "also this")
          yield* pass(2_000)
          expect((yield* runOf(viewer, id)).state).toBe("SUCCEEDED")
          // Continued with a message: a new execution whose user says only the message.
          yield* send(id, "say and now this")
          yield* dispatcher.claimSome
          yield* pass(500)
          expect((yield* runOf(viewer, id)).state).toBe("SUCCEEDED")
          expect(dialogue(yield* conversation(id))).toEqual([
            "user: say working\nsleep 2000\nsay done",
            "assistant: working",
            "user: also this",
            "assistant: got: also this",
            "assistant: done",
            "user: say and now this",
            "assistant: and now this"
          ])
          // An agent that said nothing still has a conversation to continue: the prompt. An empty
          // message continues from it (the agent gets it as history), says nothing, re-runs nothing.
          const quiet = yield* create("exit 0")
          yield* dispatcher.claimSome
          yield* pass(500)
          expect((yield* runOf(viewer, quiet)).state).toBe("SUCCEEDED")
          expect(dialogue(yield* conversation(quiet))).toEqual(["user: exit 0"])
          yield* send(quiet, "  ")
          yield* dispatcher.claimSome
          yield* pass(500)
          const continued = yield* runOf(viewer, quiet)
          expect([continued.state, continued.execution_count]).toEqual(["SUCCEEDED", 2])
          expect(dialogue(yield* conversation(quiet))).toEqual(["user: exit 0", "assistant: continued after 1 messages"])
        })
      ))

    it.scoped("stops an agent that prints more than the run's output limit: FAILED, the transcript cut at the limit", () =>
      withDispatcher(({ create, dispatcher, pass, sandboxes, viewer }) =>
        Effect.gen(function*() {
          const id = yield* create(`say start\nbig ${MAX_OUTPUT}\nsleep 60000`)
          yield* dispatcher.claimSome
          yield* pass(1_000)
          const run = yield* runOf(viewer, id)
          expect(run.state).toBe("FAILED")
          expect(run.status_message?.message).toContain(`limit of ${MAX_OUTPUT} bytes`)
          expect((yield* transcriptText(id)).length).toBe(MAX_OUTPUT)
          expect(yield* sandboxes).toBe(0)
        })
      ))

    it.scoped("stops an agent that runs past its maximum runtime: FAILED max_runtime_exceeded; the environment's default and the ceiling apply", () =>
      withDispatcher(({ createIn, createWith, dispatcher, pass, sandboxes, viewer }) =>
        Effect.gen(function*() {
          const overran = (id: RunId, seconds: number) =>
            Effect.map(runOf(viewer, id), (run) => {
              expect(run.state).toBe("FAILED")
              expect(run.status_message).toMatchObject({ error_code: "max_runtime_exceeded", message: expect.stringContaining(`${seconds} s`) })
            })
          // The run's own limit (2 s): its agent's start counts, not the claim.
          const asked = yield* createWith("say started\nsleep 60000", { max_runtime_seconds: 2 })
          yield* dispatcher.claimSome
          yield* pass(1_900)
          expect((yield* runOf(viewer, asked)).state).toBe("INPROGRESS")
          yield* pass(1_000)
          yield* overran(asked, 2)
          expect(yield* transcriptText(asked)).toContain("started")
          // An agent done within its limit is not touched, even just before it.
          const quick = yield* createWith("sleep 1950\nsay done", { max_runtime_seconds: 2 })
          yield* dispatcher.claimSome
          yield* pass(5_000)
          expect((yield* runOf(viewer, quick)).state).toBe("SUCCEEDED")
          // The environment's default (3 s), when the run sets none.
          const inEnvironment = yield* createIn("sleep 60000", [], 0, { max_runtime_seconds: 3 })
          yield* dispatcher.claimSome
          yield* pass(2_500)
          expect((yield* runOf(viewer, inEnvironment)).state).toBe("INPROGRESS")
          yield* pass(1_000)
          yield* overran(inEnvironment, 3)
          // More than the ceiling asked: the ceiling (30 s here).
          const greedy = yield* createWith("sleep 600000", { max_runtime_seconds: 600 })
          yield* dispatcher.claimSome
          yield* pass(MAX_RUNTIME_SECONDS * 1000 - 500)
          expect((yield* runOf(viewer, greedy)).state).toBe("INPROGRESS")
          yield* pass(1_000)
          yield* overran(greedy, MAX_RUNTIME_SECONDS)
          expect(yield* sandboxes).toBe(0)
        })
      ))

    it.scoped("runs a run to SUCCEEDED: output in the transcript and the conversation, the sandbox released", () =>
      withDispatcher(({ create, dispatcher, pass, sandboxes, viewer }) =>
        Effect.gen(function*() {
          const id = yield* create("say hello\nsleep 1000\nprint plain text\nsay bye")
          yield* dispatcher.claimSome
          yield* pass(500)
          expect((yield* runOf(viewer, id)).state).toBe("INPROGRESS")
          yield* pass(1_500)
          const run = yield* runOf(viewer, id)
          expect(run.state).toBe("SUCCEEDED")
          expect(run.attempt).toBe(1)
          const steps = yield* Effect.flatMap(RunStore, (store) => store.conversation(id))
          expect(texts(steps)).toEqual(["hello", "bye"])
          expect(yield* transcriptText(id)).toContain("plain text")
          expect(yield* sandboxes).toBe(0)
        })
      ))

    it.scoped("while storage fails: the agent goes on, its lease is kept, nothing is lost; once it works, the run ends once", () =>
      withDispatcher(({ create, dispatcher, fault, pass, viewer }) =>
        Effect.gen(function*() {
          const health = yield* Health.Health
          const id = yield* create("say first\nsleep 1000\nsay during the fault\nsay last")
          yield* dispatcher.claimSome
          yield* pass(500)
          expect((yield* runOf(viewer, id)).state).toBe("INPROGRESS")
          yield* Ref.set(fault, true)
          // Three leases long: the agent finishes, its writes and renewals fail, the sweep runs.
          for (let i = 0; i < 9; i++) {
            yield* pass(1_000)
            yield* dispatcher.sweep
          }
          expect((yield* runOf(viewer, id)).state).toBe("INPROGRESS")
          expect((yield* health.problems).join()).toContain("storage failed")
          yield* Ref.set(fault, false)
          yield* pass(6_000)
          yield* dispatcher.sweep
          const run = yield* runOf(viewer, id)
          expect(run.state).toBe("SUCCEEDED")
          expect(run.attempt).toBe(1)
          const steps = yield* Effect.flatMap(RunStore, (store) => store.conversation(id))
          expect(texts(steps)).toEqual(["first", "during the fault", "last"])
          const timeline = yield* Effect.flatMap(Runs, (runs) => runs.timeline(viewer, id))
          expect(timeline.events.map((e) => e.event_type)).not.toContain("lease_expired")
        })
      ))

    it.scoped("fails an agent that prints JSON nested 3,000 levels deep (FAILED agent_failed), and cancels a running one", () =>
      withDispatcher(({ create, dispatcher, pass, sandboxes, viewer }) =>
        Effect.gen(function*() {
          const deep = yield* create(`print ${"[".repeat(3000)}${"]".repeat(3000)}\nsleep 60000`)
          const long = yield* create("say started\nsleep 60000")
          yield* dispatcher.claimSome
          yield* pass(1_000)
          const failed = yield* runOf(viewer, deep)
          expect(failed.state).toBe("FAILED")
          expect(failed.status_message).toMatchObject({ error_code: "agent_failed", message: expect.stringContaining("nested deeper") })
          expect((yield* runOf(viewer, long)).state).toBe("INPROGRESS")
          yield* Effect.flatMap(Runs, (runs) => runs.cancel(viewer, long))
          yield* pass(1_000)
          expect((yield* runOf(viewer, long)).state).toBe("CANCELLED")
          expect(yield* sandboxes).toBe(0)
        })
      ))

    it.scoped("cancels an agent whose stdin takes nothing (the cancel message never gets there): stopped after the grace period", () =>
      withDispatcher(({ create, dispatcher, pass, sandboxes, viewer }) =>
        Effect.gen(function*() {
          const deaf = yield* create("deaf\nsay started\nsleep 600000")
          yield* dispatcher.claimSome
          yield* pass(1_000)
          expect((yield* runOf(viewer, deaf)).state).toBe("INPROGRESS")
          yield* Effect.flatMap(Runs, (runs) => runs.cancel(viewer, deaf))
          // The cancel message's grace, then the exit's, then the stop.
          for (let i = 0; i < 20; i++) yield* pass(1_000)
          expect((yield* runOf(viewer, deaf)).state).toBe("CANCELLED")
          expect(yield* sandboxes).toBe(0)
        })
      ))

    it.scoped("a failed setup keeps its sandbox for the debug window: a follow-up starts a debug agent; the window's end releases it", () =>
      withDispatcher(({ createIn, dispatcher, pass, sandboxes, viewer }) =>
        Effect.gen(function*() {
          // A window of 6 s.
          const id = yield* createIn("say never", ["exit 1"], 0.1)
          yield* dispatcher.claimSome
          yield* pass(200)
          const failed = yield* runOf(viewer, id)
          expect(failed.state).toBe("FAILED")
          expect(failed.status_message).toMatchObject({ error_code: "environment_setup_failed" })
          expect(failed.is_sandbox_running).toBe(true)
          expect(yield* sandboxes).toBe(1)
          // The environment is replaced meanwhile (by a token acting with a viewer's role): its editor
          // shapes the debug agent too.
          const environments = yield* EnvironmentStore
          const env = Option.getOrThrow(yield* environments.get(failed.environment_id!))
          yield* environments.update({ ...env, editor: { uid: viewer.principal_uid, role: "viewer" } })
          // A follow-up inside the window goes to a debug agent in the kept sandbox.
          yield* Effect.flatMap(Followups, (f) => f.send(viewer, id, new RunFollowupRequest({ message: "say debugging" })))
          yield* dispatcher.tend
          yield* pass(1_000)
          expect((yield* runOf(viewer, id)).state).toBe("FAILED")
          expect(yield* transcriptText(id)).toContain("debugging")
          expect(yield* Effect.flatMap(RunStore, (store) => store.shapers([id]))).toContainEqual({ uid: viewer.principal_uid, role: "viewer" })
          // The window ends: the sandbox is released, and the run says so.
          yield* pass(6_000)
          yield* dispatcher.tend
          expect(yield* sandboxes).toBe(0)
          expect((yield* runOf(viewer, id)).is_sandbox_running).toBe(false)
        })
      ))

    it.scoped("the reaper releases shared sandboxes whose run ended, moved on or is unknown; keeps those in use or in a debug window", () =>
      withDispatcher(({ create, createIn, dispatcher, foreign, pass, sandboxes, viewer }) =>
        Effect.gen(function*() {
          const store = yield* RunStore
          const running = yield* create("sleep 2000\nsay done")
          yield* dispatcher.claimSome
          yield* pass(200)
          const lease = Option.getOrThrow(yield* store.get(running)).lease!
          // Another server's leftovers: an unknown run's, and one of this run's earlier execution.
          yield* foreign("01a22d00-0000-7000-8000-000000000001" as RunId, "01a22d00-0000-7000-8000-000000000002" as ExecutionId)
          yield* foreign(running, "01a22d00-0000-7000-8000-000000000003" as ExecutionId)
          expect(yield* sandboxes).toBe(3)
          expect(yield* SandboxReaper.reap).toBe(2)
          expect(yield* sandboxes).toBe(1)
          expect((yield* runOf(viewer, running)).state).toBe("INPROGRESS")
          yield* pass(2_500)
          expect((yield* runOf(viewer, running)).state).toBe("SUCCEEDED")
          // The ended run's sandbox, had its server not released it.
          yield* foreign(running, lease.execution_id)
          // A failed setup's sandbox, kept for its debug window (6 s).
          const failed = yield* createIn("say never", ["exit 1"], 0.1)
          yield* dispatcher.claimSome
          yield* pass(200)
          expect((yield* runOf(viewer, failed)).state).toBe("FAILED")
          expect(yield* SandboxReaper.reap).toBe(1)
          expect(yield* sandboxes).toBe(1)
          // Its window over (its server gone, say), the reaper releases it too.
          yield* pass(6_500)
          expect(yield* SandboxReaper.reap).toBe(1)
          expect(yield* sandboxes).toBe(0)
        })
      ))

    it.scoped("a server that starts in a shared place releases its leftovers, but not a sandbox whose run its execution still leases (another server's)", () =>
      withDispatcher(({ create, dispatcher, foreign, pass, sandboxes, viewer }) =>
        Effect.gen(function*() {
          const running = yield* create("sleep 5000")
          yield* dispatcher.claimSome
          yield* pass(200)
          expect((yield* runOf(viewer, running)).state).toBe("INPROGRESS")
          yield* foreign("01a22d00-0000-7000-8000-000000000004" as RunId, "01a22d00-0000-7000-8000-000000000005" as ExecutionId)
          expect(yield* sandboxes).toBe(2)
          // Another server starts over the same place (one name for two servers): it takes back
          // what it finds, but leaves the running agent's sandbox alone.
          yield* dispatcher.recover
          expect(yield* sandboxes).toBe(1)
          yield* pass(200)
          expect((yield* runOf(viewer, running)).state).toBe("INPROGRESS")
        })
      ))

    it.scoped("the environment's editor when an execution is claimed shapes it: recorded before its agent gets a token", () =>
      withDispatcher(({ createIn, dispatcher, pass, viewer }) =>
        Effect.gen(function*() {
          const id = yield* createIn("say built", [], 0)
          const store = yield* RunStore
          expect(yield* store.shapers([id])).toEqual([])
          // Replaced between the run's creation and its claim, by a token acting with a viewer's role.
          const environments = yield* EnvironmentStore
          const run = yield* runOf(viewer, id)
          const env = Option.getOrThrow(yield* environments.get(run.environment_id!))
          yield* environments.update({ ...env, editor: { uid: viewer.principal_uid, role: "viewer" } })
          yield* dispatcher.claimSome
          yield* pass(500)
          expect((yield* runOf(viewer, id)).state).toBe("SUCCEEDED")
          expect(yield* store.shapers([id])).toEqual([{ uid: viewer.principal_uid, role: "viewer" }])
        })
      ))

    it.scoped("a lease that expired while its execution here lives (a late renewal) is renewed by the sweep, never requeued", () =>
      withDispatcher(({ create, dispatcher, pass, viewer }) =>
        Effect.gen(function*() {
          const id = yield* create("say once\nsleep 2000\nsay done")
          const store = yield* RunStore
          yield* dispatcher.claimSome
          yield* pass(500)
          const held = yield* store.get(id)
          const lease = Option.getOrThrow(held).lease!
          // The renewal comes late: the lease has expired, the execution goes on.
          yield* store.renewLease(id, lease.execution_id, (yield* Clock.currentTimeMillis) - 1)
          yield* dispatcher.sweep
          const after = Option.getOrThrow(yield* store.get(id))
          expect(after.item).toMatchObject({ state: "INPROGRESS", attempt: 1 })
          expect(after.lease?.execution_id).toBe(lease.execution_id)
          expect(after.lease!.expires_at).toBeGreaterThan(yield* Clock.currentTimeMillis)
          yield* pass(3_000)
          expect(yield* runOf(viewer, id)).toMatchObject({ state: "SUCCEEDED", attempt: 1 })
          const events = (yield* Effect.flatMap(Runs, (runs) => runs.timeline(viewer, id))).events.map((e) => e.event_type)
          expect(events).not.toContain("lease_expired")
          expect(events.filter((e) => e === "run_in_progress")).toHaveLength(1)
        })
      ))

    it.scoped("the sweep requeues a run whose execution vanished (attempt 2), which then runs to its end", () =>
      withDispatcher(({ create, dispatcher, pass, viewer }) =>
        Effect.gen(function*() {
          const id = yield* create("say second try")
          const store = yield* RunStore
          // An execution claims the run, then is gone (no renewals).
          const gone = yield* store.claim({
            worker_host: null,
            execution_id: "01a20000-0000-7000-8000-0000000000aa" as never,
            now: yield* Clock.currentTimeMillis,
            lease_ms: LEASE_MS
          })
          expect(gone._tag).toBe("Some")
          yield* dispatcher.sweep
          expect((yield* runOf(viewer, id)).state).toBe("CLAIMED")
          yield* pass(LEASE_MS + 100)
          yield* dispatcher.sweep
          const requeued = yield* runOf(viewer, id)
          expect(requeued).toMatchObject({ state: "QUEUED", attempt: 2 })
          yield* dispatcher.claimSome
          yield* pass(500)
          expect(yield* runOf(viewer, id)).toMatchObject({ state: "SUCCEEDED", attempt: 2 })
          const events = (yield* Effect.flatMap(Runs, (runs) => runs.timeline(viewer, id))).events.map((e) => e.event_type)
          expect(events).toContain("lease_expired")
          expect(events).toContain("requeued")
        })
      ))

    it.scoped("a run whose execution vanishes three times ends ERROR resource_unavailable; the team's waiting run is admitted", () =>
      withDispatcher(({ create, dispatcher, pass, viewer }) =>
        Effect.gen(function*() {
          const id = yield* create("never runs here")
          const waiting = yield* create("say after the error")
          expect((yield* runOf(viewer, waiting)).state).toBe("PENDING")
          const store = yield* RunStore
          for (const attempt of [1, 2, 3]) {
            // An execution elsewhere (a crashed server, a killed worker) claims the run, then is gone.
            const claimed = yield* store.claim({
              worker_host: null,
              execution_id: `01a20000-0000-7000-8000-0000000000b${attempt}` as never,
              now: yield* Clock.currentTimeMillis,
              lease_ms: LEASE_MS
            })
            expect(Option.map(claimed, (r) => [r.item.run_id, r.item.attempt])).toEqual(Option.some([id, attempt]))
            // Nothing runs here meanwhile: the clock jumps past the lease.
            yield* TestClock.adjust(LEASE_MS + 100)
            yield* dispatcher.sweep
            expect((yield* runOf(viewer, id)).state).toBe(attempt < 3 ? "QUEUED" : "ERROR")
          }
          expect(yield* runOf(viewer, id)).toMatchObject({
            state: "ERROR",
            attempt: 3,
            status_message: { error_code: "resource_unavailable", retryable: true }
          })
          const events = (yield* Effect.flatMap(Runs, (runs) => runs.timeline(viewer, id))).events.map((e) => e.event_type)
          expect(events.filter((e) => e === "lease_expired")).toHaveLength(3)
          expect(events.filter((e) => e === "requeued")).toHaveLength(2)
          expect(events.at(-1)).toBe("run_errored")
          // The run's slot is free again: the team's waiting run is admitted and runs.
          expect((yield* runOf(viewer, waiting)).state).toBe("QUEUED")
          yield* dispatcher.claimSome
          yield* pass(500)
          expect((yield* runOf(viewer, waiting)).state).toBe("SUCCEEDED")
        })
      ))
  })
}
