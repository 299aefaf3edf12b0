/**
 * A created run is claimed at once, not at the claimer's next poll (docs/execution.md, "How a run
 * flows"): the real engine (`Dispatcher.layer`, scripted executor) over a real storage adapter, on
 * the live clock, polling every minute, so that only a wake-up can make a claim within the bound.
 * `replicas` builds the stores of the replica that creates runs (the API's) and of the one that
 * claims them: one store for both on SQLite and in memory (one process), two pools on one database
 * on PostgreSQL (two replicas). Also the store's part: every listener of its wake-ups hears each
 * one, whatever other listeners did. Call `claimWakeupSuite(name, replicas)` inside a vitest file.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Option, Ref, Schedule, Stream } from "effect"
import type { Scope } from "effect"
import { IdsLive, type RunId } from "../src/domain/Ids.js"
import { RunAgentRequest } from "../src/domain/Run.js"
import { START } from "../src/domain/RunStream.js"
import { RunStore } from "../src/ports/RunStore.js"
import { RunEvents } from "../src/services/RunEvents.js"
import { Runs } from "../src/services/Runs.js"
import { memoryBlobStore } from "./ConversationsServiceSuite.js"
import { engineLayer } from "./Engine.js"
import { testRepos } from "./RunsServiceSuite.js"
import { scriptedExecutor } from "./ScriptedExecutor.js"
import type { Stores } from "./Stores.js"
import { seedWorld } from "./World.js"

/** Far below the poll below: a claim within it was woken. */
const BOUND = "500 millis"
const POLL_MS = 60_000

export const claimWakeupSuite = <E>(
  name: string,
  replicas: Effect.Effect<readonly [Context.Context<Stores>, Context.Context<Stores>], E, Scope.Scope>
) =>
  describe(`claim wake-ups (${name})`, () => {
    const setup = Effect.gen(function*() {
      const [api, claimer] = yield* replicas
      const executor = yield* scriptedExecutor
      yield* Layer.buildWithScope(
        engineLayer({ pollMs: POLL_MS, sweepMs: POLL_MS }, Layer.mergeAll(executor.layer, memoryBlobStore, testRepos)).pipe(Layer.provide(Layer.succeedContext(claimer))),
        yield* Effect.scope
      )
      const runs = yield* Effect.provide(Runs, Runs.Default.pipe(Layer.provide(Layer.mergeAll(testRepos, IdsLive)))).pipe(
        Effect.provide(api)
      )
      const world = yield* seedWorld().pipe(Effect.provide(api))
      const store = Context.get(api, RunStore)
      // The loop's first claim (at start) is over and its wake-ups are heard.
      yield* Effect.sleep("300 millis")
      const create = (prompt: string) =>
        Effect.map(runs.create(world.alice, new RunAgentRequest({ prompt })), (r) => r.run_id as RunId)
      /** Whether the run left QUEUED within the bound. */
      const claimedInTime = (runId: RunId) =>
        store.get(runId).pipe(
          Effect.map(Option.exists((run) => run.item.state !== "QUEUED" && run.item.state !== "PENDING")),
          Effect.repeat({ until: (claimed) => claimed, schedule: Schedule.spaced("5 millis") }),
          Effect.timeoutOption(BOUND),
          Effect.map(Option.isSome)
        )
      return { claimer, create, claimedInTime, world }
    })

    it.scopedLive("a created run is claimed at once, far within the poll interval", () =>
      Effect.gen(function*() {
        const { claimedInTime, create } = yield* setup
        for (let i = 0; i < 3; i++) {
          expect(yield* claimedInTime(yield* create("say hello"))).toBe(true)
          yield* Effect.sleep("50 millis")
        }
      }))

    it.scopedLive("the claimer still wakes at once after a run's event stream on its replica ended", () =>
      Effect.gen(function*() {
        const { claimedInTime, claimer, create, world } = yield* setup
        const first = yield* create("say hello")
        expect(yield* claimedInTime(first)).toBe(true)
        // A client follows the run on the claimer's replica until it ends, then the stream closes.
        const events = yield* Effect.provide(RunEvents, RunEvents.Default).pipe(Effect.provide(claimer))
        const items = yield* Stream.runCollect(yield* events.follow(world.alice, first, START)).pipe(
          Effect.timeoutOption("5 seconds")
        )
        expect(Option.isSome(items)).toBe(true)
        yield* Effect.sleep("100 millis")
        expect(yield* claimedInTime(yield* create("say again"))).toBe(true)
      }))

    // The store's own promise, below the engine: the loop listens as long as the service lives, a
    // run's event stream only while its client follows the run.
    it.scopedLive("a wake-up reaches every listener of the store, also after another listener stopped", () =>
      Effect.gen(function*() {
        const { claimer, create } = yield* setup
        const store = Context.get(claimer, RunStore)
        const heard = yield* Ref.make(0)
        yield* store.wakeups.pipe(Stream.runForEach(() => Ref.update(heard, (n) => n + 1)), Effect.forkScoped)
        const other = yield* Effect.fork(Stream.runHead(store.wakeups))
        yield* Effect.sleep("200 millis")
        yield* create("say hello")
        expect(Option.isSome(yield* Fiber.join(other).pipe(Effect.timeoutOption("5 seconds"), Effect.map(Option.flatten))))
          .toBe(true)
        yield* Effect.sleep("200 millis") // the other listener's subscription is closed
        const before = yield* Ref.get(heard)
        yield* create("say again")
        const after = yield* Ref.get(heard).pipe(
          Effect.repeat({ until: (n) => n > before, schedule: Schedule.spaced("5 millis") }),
          Effect.timeoutOption(BOUND)
        )
        expect(Option.isSome(after)).toBe(true)
      }))
  })
