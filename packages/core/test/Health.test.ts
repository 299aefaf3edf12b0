import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Option, Ref, TestClock } from "effect"
import { Health, layer, STORAGE_FAULT_MS, supervise } from "../src/engine/Health.js"
import { StorageError } from "../src/ports/Storage.js"

describe("supervise", () => {
  it.effect("survives failures and defects of its iterations, reports the loop failing until one succeeds, and backs off", () =>
    Effect.gen(function*() {
      const health = yield* Health
      const calls = yield* Ref.make<Array<number>>([])
      // Fails, dies, fails with a storage error, then succeeds from the fourth call on.
      const iteration = Effect.gen(function*() {
        const now = yield* TestClock.currentTimeMillis
        const n = (yield* Ref.updateAndGet(calls, (c) => [...c, now])).length
        if (n === 1) return yield* Effect.fail("no luck")
        if (n === 2) return yield* Effect.die(new RangeError("Maximum call stack size exceeded"))
        if (n === 3) return yield* new StorageError({ operation: "test", cause: "disk full" })
      })
      const fiber = yield* supervise("test loop", iteration, 1_000).pipe(Effect.fork)
      yield* TestClock.adjust(Duration.millis(1))
      expect(yield* health.problems).toEqual([expect.stringMatching(/^test loop is failing since .*: no luck$/)])
      yield* TestClock.adjust(Duration.millis(2_000))
      expect((yield* health.problems)[0]).toContain("Maximum call stack size exceeded")
      yield* TestClock.adjust(Duration.millis(4_000))
      // The storage failure: the loop fails, and storage is reported faulty.
      expect(yield* health.problems).toHaveLength(2)
      expect(Option.isSome(yield* health.lastStorageFault)).toBe(true)
      yield* TestClock.adjust(Duration.millis(8_000))
      // Recovered; the storage fault is still recent (it was 8 s ago).
      expect(yield* health.problems).toEqual([expect.stringContaining("storage failed")])
      yield* TestClock.adjust(Duration.millis(STORAGE_FAULT_MS))
      expect(yield* health.problems).toEqual([])
      // Backoff doubled from the interval while failing (2, 4, 8 s), then the interval again.
      const at = yield* Ref.get(calls)
      expect(at.slice(0, 5)).toEqual([0, 2_000, 6_000, 14_000, 15_000])
      expect(fiber.unsafePoll()).toBeNull()
      yield* Fiber.interrupt(fiber)
    }).pipe(Effect.provide(layer)))
})
