/**
 * The execution loop alone, over the in-memory execution host and the in-process scripted executor,
 * on the TestClock: no storage, no server, no processes, no sleeps.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Redacted, Ref, Scope } from "effect"
import * as ExecutionLoop from "../src/engine/ExecutionLoop.js"
import { defaultSettings, DispatcherConfig } from "../src/engine/Settings.js"
import * as Health from "../src/engine/Health.js"
import { IdsLive, type RunId } from "../src/domain/Ids.js"
import { LiveExecutions } from "../src/engine/LiveExecutions.js"
import { ExecutionHost } from "../src/engine/ExecutionHost.js"
import { Executor } from "../src/ports/Executor.js"
import { pass } from "../testing/ClockSteps.js"
import { memoryHost, planFor } from "../testing/MemoryHost.js"
import { scriptedExecutor } from "../testing/ScriptedExecutor.js"

const LEASE_MS = 3_000
const runId = (n: number) => `01a20000-0000-7000-8000-${String(n).padStart(12, "0")}` as RunId

/** What a loop over `host` and `executor` runs on. */
const loopLayer = (
  host: Effect.Effect.Success<ReturnType<typeof memoryHost>>,
  executor: Effect.Effect.Success<typeof scriptedExecutor>
) =>
  Layer.mergeAll(
    host.layer,
    executor.layer,
    IdsLive,
    Health.layer,
    LiveExecutions.Default,
    Layer.succeed(DispatcherConfig, { ...defaultSettings("agent", "http://localhost/api/v1"), concurrency: 2, leaseMs: LEASE_MS })
  )

/** A loop over a fresh memory host: its parts, the host and the executor's sandboxes, and `pass` to move the clock. */
const withLoop = <A, E>(
  test: (env: {
    readonly host: Effect.Effect.Success<ReturnType<typeof memoryHost>>
    readonly claimSome: Effect.Effect<void, unknown>
    readonly sandboxes: Effect.Effect<number>
    readonly pass: (ms: number) => Effect.Effect<void>
  }) => Effect.Effect<A, E, Health.Health | LiveExecutions>
) =>
  Effect.gen(function*() {
    const host = yield* memoryHost(LEASE_MS)
    const executor = yield* scriptedExecutor
    return yield* Effect.gen(function*() {
      const loop = yield* ExecutionLoop.make(yield* Effect.scope)
      return yield* test({ host, claimSome: loop.claimSome, sandboxes: executor.sandboxes, pass })
    }).pipe(Effect.provide(loopLayer(host, executor)))
  })

describe("the execution loop over an in-memory host (TestClock)", () => {
  it.scoped("a loop that stops hands its runs back once their agents are stopped, at the same attempt; an ended run is not", () =>
    Effect.gen(function*() {
      const host = yield* memoryHost(LEASE_MS)
      const executor = yield* scriptedExecutor
      const scope = yield* Scope.make()
      const [running, ended] = [runId(60), runId(61)]
      yield* Effect.gen(function*() {
        const loop = yield* ExecutionLoop.make(scope)
        yield* host.offer(planFor(running, "sleep 60000"))
        yield* host.offer(planFor(ended, "say done"))
        yield* loop.claimSome
        yield* pass(500)
        expect((yield* host.run(running)).snapshot.state).toBe("INPROGRESS")
        expect((yield* host.run(ended)).snapshot.state).toBe("SUCCEEDED")
        yield* Scope.close(scope, Exit.void)
        const run = yield* host.run(running)
        expect(run.events.map((e) => e._tag).at(-1)).toBe("HandOver")
        expect(run.snapshot).toMatchObject({ state: "QUEUED", attempt: 1, lease: undefined })
        expect(yield* executor.sandboxes).toBe(0)
        expect((yield* host.run(ended)).events.map((e) => e._tag)).not.toContain("HandOver")
      }).pipe(Effect.provide(loopLayer(host, executor)))
    }))

  it.scoped("while draining it claims nothing", () =>
    withLoop(({ claimSome, host }) =>
      Effect.gen(function*() {
        yield* (yield* LiveExecutions).drain(0)
        yield* host.offer(planFor(runId(63), "say hello"))
        yield* claimSome
        expect((yield* host.run(runId(63))).snapshot.state).toBe("QUEUED")
      })))

  it.scoped("runs a plan: setup and start recorded at once, output in transcript and conversation, the outcome last", () =>
    withLoop(({ claimSome, host, pass, sandboxes }) =>
      Effect.gen(function*() {
        const id = runId(1)
        yield* host.offer(planFor(id, "say hello\nprint {\"type\":\"usage\",\"input_tokens\":3,\"output_tokens\":4}\nsleep 500\nsay bye"))
        yield* claimSome
        yield* pass(1_500)
        const run = yield* host.run(id)
        expect(run.snapshot.state).toBe("SUCCEEDED")
        expect(run.events.map((e) => e._tag)).toEqual(["EnvironmentSetupStarted", "EnvironmentSetupSucceeded", "Start", "Succeed"])
        expect(yield* host.texts(id)).toEqual(["hello", "bye"])
        expect(yield* host.transcriptText(id)).toContain("\"text\":\"bye\"")
        expect(run.reports.at(-1)?.request_usage).toMatchObject({ input_tokens: 3, output_tokens: 4 })
        expect(yield* sandboxes).toBe(0)
      })))

  it.scoped("the agent's last report is written with its outcome; a report of only the stored usage is not written", () =>
    withLoop(({ claimSome, host, pass }) =>
      Effect.gen(function*() {
        const id = runId(20)
        yield* host.offer(planFor(id, "print {\"type\":\"usage\",\"input_tokens\":5,\"output_tokens\":6}\nsay done"))
        yield* claimSome
        yield* pass(1_500)
        const run = yield* host.run(id)
        expect(run.snapshot.state).toBe("SUCCEEDED")
        expect(run.reports.map((r) => r.request_usage)).toEqual([{ input_tokens: 5, output_tokens: 6, inference_cost: 0, compute_cost: 0 }])
        // Written with the outcome: after the three events of the start and the outcome's.
        expect(run.reportedAfter).toEqual([4])
      })))

  it.scoped("with pull requests to publish, the last report is written before them (a failure or a cancel there cannot lose it)", () =>
    withLoop(({ claimSome, host, pass }) =>
      Effect.gen(function*() {
        const id = runId(21)
        const pull_request = { draft: false, branch: "agent/x", api_url: "http://127.0.0.1:1", token: Redacted.make("t") }
        yield* host.offer(planFor(id, "print {\"type\":\"usage\",\"input_tokens\":5,\"output_tokens\":6}\nsay done", { pull_request }))
        yield* claimSome
        yield* pass(1_500)
        const run = yield* host.run(id)
        expect(run.snapshot.state).toBe("SUCCEEDED")
        expect(run.reports.map((r) => r.request_usage.input_tokens)).toEqual([5])
        expect(run.reportedAfter).toEqual([3])
      })))

  it.scoped("a plan that cannot run fails its setup with the reason; no sandbox is made", () =>
    withLoop(({ claimSome, host, pass, sandboxes }) =>
      Effect.gen(function*() {
        const id = runId(2)
        yield* host.offer(planFor(id, "say never", { has_environment: true, failure: "skill acme/tools:fix is no longer available" }))
        yield* claimSome
        yield* pass(200)
        const run = yield* host.run(id)
        expect(run.snapshot.state).toBe("FAILED")
        expect(run.snapshot.status_message).toMatchObject({ error_code: "environment_setup_failed", message: expect.stringContaining("skill") })
        expect(run.events.map((e) => e._tag)).toEqual(["EnvironmentSetupStarted", "EnvironmentSetupFailed"])
        expect(yield* sandboxes).toBe(0)
      })))

  it.scoped("a failed setup with a debug window hands its sandbox to the host; an executor failure is ERROR internal_error", () =>
    withLoop(({ claimSome, host, pass, sandboxes }) =>
      Effect.gen(function*() {
        const kept = runId(3)
        const broken = runId(4)
        yield* host.offer(planFor(kept, "say never", {
          has_environment: true,
          retention_ms: 60_000,
          sandbox: { ...planFor(kept, "").sandbox, setup_commands: ["exit 1"] }
        }))
        yield* host.offer(planFor(broken, "say never", { sandbox: { ...planFor(broken, "").sandbox, docker_image: "broken" } }))
        yield* claimSome
        yield* pass(200)
        const failed = yield* host.run(kept)
        expect(failed.snapshot.state).toBe("FAILED")
        expect(failed.snapshot.sandbox_retained).toBe(true)
        expect(failed.retained).toBeDefined()
        expect(yield* sandboxes).toBe(1)
        const errored = yield* host.run(broken)
        expect(errored.snapshot.state).toBe("ERROR")
        expect(errored.snapshot.status_message).toMatchObject({ error_code: "internal_error" })
      })))

  it.scoped("delivers follow-ups live; a run cancelled meanwhile has its agent stopped and records nothing more", () =>
    withLoop(({ claimSome, host, pass, sandboxes }) =>
      Effect.gen(function*() {
        const id = runId(5)
        yield* host.offer(planFor(id, "say working\nsleep 60000\nsay after"))
        yield* claimSome
        yield* pass(500)
        yield* host.send(id, "also this")
        yield* pass(500)
        expect(yield* host.texts(id)).toEqual(["working", "got: also this"])
        yield* host.cancel(id)
        yield* pass(1_000)
        const run = yield* host.run(id)
        expect(run.snapshot.state).toBe("CANCELLED")
        expect(run.events.map((e) => e._tag)).toEqual(["EnvironmentSetupStarted", "EnvironmentSetupSucceeded", "Start"])
        expect(yield* host.texts(id)).not.toContain("after")
        expect(yield* sandboxes).toBe(0)
      })))

  it.scoped("while the host fails the agent goes on and its lease is kept; once it answers, the run ends once with all its output", () =>
    withLoop(({ claimSome, host, pass }) =>
      Effect.gen(function*() {
        const id = runId(6)
        yield* host.offer(planFor(id, "say first\nsleep 1000\nsay during\nsay last"))
        yield* claimSome
        yield* pass(500)
        yield* Ref.set(host.failing, true)
        yield* pass(3 * LEASE_MS)
        expect((yield* host.run(id)).snapshot.state).toBe("INPROGRESS")
        yield* Ref.set(host.failing, false)
        yield* pass(6_000)
        const run = yield* host.run(id)
        expect(run.snapshot.state).toBe("SUCCEEDED")
        expect(run.events.filter((e) => e._tag === "Succeed")).toHaveLength(1)
        expect(yield* host.texts(id)).toEqual(["first", "during", "last"])
      })))

  it.scoped("claims no more than its concurrency; a freed slot claims the next run", () =>
    withLoop(({ claimSome, host, pass }) =>
      Effect.gen(function*() {
        const ids = [runId(7), runId(8), runId(9)]
        for (const id of ids) yield* host.offer(planFor(id, "sleep 1000\nsay done"))
        yield* claimSome
        yield* pass(200)
        const states = Effect.forEach(ids, (id) => Effect.map(host.run(id), (r) => r.snapshot.state))
        expect(yield* states).toEqual(["INPROGRESS", "INPROGRESS", "QUEUED"])
        yield* pass(1_500)
        expect((yield* states).slice(0, 2)).toEqual(["SUCCEEDED", "SUCCEEDED"])
        expect((yield* states)[2]).toBe("INPROGRESS")
        yield* pass(1_500)
        expect(yield* states).toEqual(["SUCCEEDED", "SUCCEEDED", "SUCCEEDED"])
      })))

  it.scoped("a queue on a slow host is taken by more and more claims at once, up to 16, never more than the free slots", () =>
    Effect.gen(function*() {
      // Each claim takes a second, as on a server busy with hundreds of runs (issue 34: 4 claims at
      // once started 1,000 runs at about one a second).
      const host = yield* memoryHost(LEASE_MS)
      const executor = yield* scriptedExecutor
      let inFlight = 0
      /** How many claims were in flight as each claim began. */
      const widths: Array<number> = []
      const slowHost = Layer.effect(
        ExecutionHost,
        Effect.map(ExecutionHost, (inner) =>
          ExecutionHost.of({
            ...inner,
            claim: (executionId) =>
              Effect.sync(() => widths.push(++inFlight)).pipe(
                Effect.zipRight(Effect.sleep("1 second")),
                Effect.zipRight(inner.claim(executionId)),
                Effect.ensuring(Effect.sync(() => inFlight--))
              )
          }))
      ).pipe(Layer.provide(host.layer))
      const loop = yield* ExecutionLoop.make(yield* Effect.scope).pipe(
        Effect.provide(Layer.mergeAll(
          slowHost,
          executor.layer,
          IdsLive,
          Health.layer,
          LiveExecutions.Default,
          Layer.succeed(DispatcherConfig, { ...defaultSettings("agent", "http://localhost/api/v1"), concurrency: 32, leaseMs: LEASE_MS })
        ))
      )
      const ids = Array.from({ length: 40 }, (_, i) => runId(100 + i))
      for (const id of ids) yield* host.offer(planFor(id, "sleep 60000"))
      yield* Effect.fork(loop.claimSome)
      yield* pass(6_500)
      const states = yield* Effect.forEach(ids, (id) => Effect.map(host.run(id), (r) => r.snapshot.state))
      expect(states.filter((state) => state === "INPROGRESS")).toHaveLength(32)
      expect(states.filter((state) => state === "QUEUED")).toHaveLength(8)
      // Waves of 1, 1, 2, 4, 8 and 16 claims: the 32 slots filled in 6 claim times, no claim more.
      expect(Math.max(...widths)).toBe(ExecutionLoop.CLAIMERS)
      expect(widths).toHaveLength(32)
    }))

  it.scoped("an agent CLI without its auth secret, or without an adapter here, fails integration_not_configured; no sandbox is made", () =>
    withLoop(({ claimSome, host, pass, sandboxes }) =>
      Effect.gen(function*() {
        const gone = runId(40)
        const noAdapter = runId(41)
        yield* host.offer(planFor(gone, "say never", {
          agent: { type: "claude", model_id: null, reasoning_level: null, auth: null },
          unconfigured: "the team secret ANTHROPIC_API_KEY for the claude harness no longer exists"
        }))
        yield* host.offer(planFor(noAdapter, "say never", { agent: { type: "codex", model_id: null, reasoning_level: null, auth: "k" } }))
        yield* claimSome
        yield* pass(200)
        for (const [id, words] of [[gone, "ANTHROPIC_API_KEY"], [noAdapter, "@agent-runs/harness-codex"]] as const) {
          const run = yield* host.run(id)
          expect(run.snapshot.state).toBe("FAILED")
          expect(run.snapshot.status_message).toMatchObject({ error_code: "integration_not_configured", message: expect.stringContaining(words) })
        }
        expect(yield* sandboxes).toBe(0)
      })))

  it.scoped("as a layer: claims by polling, with no call from the test", () =>
    Effect.gen(function*() {
      const host = yield* memoryHost(LEASE_MS)
      const executor = yield* scriptedExecutor
      const settings = { ...defaultSettings("agent", "http://localhost/api/v1"), concurrency: 1, leaseMs: LEASE_MS }
      yield* Layer.build(ExecutionLoop.layer.pipe(
        Layer.provide(Layer.mergeAll(host.layer, executor.layer, IdsLive, Health.layer, LiveExecutions.Default, Layer.succeed(DispatcherConfig, settings)))
      ))
      const id = runId(10)
      yield* host.offer(planFor(id, "say polled"))
      yield* pass(3 * settings.pollMs)
      expect((yield* host.run(id)).snapshot.state).toBe("SUCCEEDED")
      expect(yield* host.texts(id)).toEqual(["polled"])
    }))

  it.scoped("a defect while running ends the run ERROR internal_error; the loop goes on with the next run", () =>
    Effect.gen(function*() {
      const host = yield* memoryHost(LEASE_MS)
      const executor = yield* scriptedExecutor
      let first = true
      const dying = Layer.succeed(Executor, {
        leftovers: Effect.succeed([]),
        prepare: (spec) => {
          if (!first) return Effect.flatMap(Executor, (e) => e.prepare(spec)).pipe(Effect.provide(executor.layer))
          first = false
          return Effect.die(new Error("the executor broke"))
        }
      })
      const loop = yield* ExecutionLoop.make(yield* Effect.scope).pipe(
        Effect.provide(Layer.mergeAll(
          host.layer,
          dying,
          IdsLive,
          Health.layer,
          LiveExecutions.Default,
          Layer.succeed(DispatcherConfig, { ...defaultSettings("agent", "http://localhost/api/v1"), concurrency: 1, leaseMs: LEASE_MS })
        ))
      )
      yield* host.offer(planFor(runId(11), "say never"))
      yield* host.offer(planFor(runId(12), "say after"))
      yield* loop.claimSome
      yield* pass(1_000)
      const broken = yield* host.run(runId(11))
      expect(broken.snapshot.state).toBe("ERROR")
      expect(broken.snapshot.status_message).toMatchObject({ error_code: "internal_error", message: "the service failed while running the agent" })
      expect((yield* host.run(runId(12))).snapshot.state).toBe("SUCCEEDED")
    }))
})
