/**
 * Key rotation's background work (docs/operations.md#rotating-the-secret-key), run only while
 * other keys are given: stored values sealed under them are sealed again under the current key,
 * `BATCH` at a time, the next batch at once, cycle after cycle, until a whole cycle finds every
 * value under the current key; then it says so (the other keys can be retired) and looks again
 * every `everyMs`. Any later cycle that seals something again (a replica still on the earlier
 * settings during a rolling deploy) withdraws that and says so again once done. Every replica may
 * run it: a value is written only if unchanged. A restart starts a new cycle: what is done is done.
 * Supervised (Health.ts).
 */
import { Effect, Layer, Ref } from "effect"
import { SealedValues } from "../ports/SealedValues.js"
import type { Health } from "./Health.js"
import { supervise } from "./Health.js"

/** Values sealed again per call. */
export const BATCH = 100

/** One call; the wait before the next (none until a cycle found nothing to do). */
export const rotationPass = (everyMs: number, reported: Ref.Ref<boolean>) =>
  Effect.gen(function*() {
    const pass = yield* (yield* SealedValues).reseal(BATCH)
    if (pass.resealed > 0) {
      yield* Ref.set(reported, false)
      yield* Effect.logInfo(`key rotation: sealed ${pass.resealed} stored values again under the current key`)
    }
    if (!pass.cycleEnded || pass.cycleResealed > 0) return 0
    if (!(yield* Ref.getAndSet(reported, true))) {
      yield* Effect.logInfo(
        pass.unreadable === 0
          ? "key rotation: every stored value is sealed under the current key; the other keys can be retired"
          : `key rotation: every value a key opens is under the current key, but ${pass.unreadable} open under no key given (damaged, or sealed under a key that is not given)`
      )
    }
    return everyMs
  })

/** The rotation, for the layer's lifetime. */
export const layer = (everyMs: number = 60 * 60 * 1000): Layer.Layer<never, never, SealedValues | Health> =>
  Layer.scopedDiscard(Effect.gen(function*() {
    const reported = yield* Ref.make(false)
    yield* Effect.forkScoped(supervise("key rotation", rotationPass(everyMs, reported), everyMs))
  }))
