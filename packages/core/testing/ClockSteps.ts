/** Moving the TestClock the way the engine's tests need: in small steps, letting every fiber run at each. */
import { Duration, Effect, TestClock } from "effect"

/** Moves the clock `ms` in steps of 50 ms, yielding to every waiting fiber at each step. */
export const pass = (ms: number) =>
  Effect.gen(function*() {
    for (let t = 0; t < ms; t += 50) {
      yield* TestClock.adjust(Duration.millis(50))
      for (let i = 0; i < 20; i++) yield* Effect.yieldNow()
    }
  })
