/**
 * The expiry of idempotency keys (services/Idempotency.ts): keys past their 24 hours are removed
 * in batches of `PRUNE_BATCH`, the next batch at once while a batch was full, else after `everyMs`
 * (an hour). A claim already ignores an expired key; the sweep only frees the space. Supervised
 * (Health.ts): a failing sweep says so in `/readyz` and retries.
 */
import { Clock, Effect, Layer } from "effect"
import { expiredBefore } from "../domain/Idempotency.js"
import { IdempotencyStore } from "../ports/IdempotencyStore.js"
import type { Health } from "./Health.js"
import { supervise } from "./Health.js"

/** Keys removed per statement. */
export const PRUNE_BATCH = 1_000

/** One pass: removes a batch; the wait before the next (none while there is more to remove). */
export const expiryPass = (everyMs: number) =>
  Effect.gen(function*() {
    const store = yield* IdempotencyStore
    const removed = yield* store.prune(expiredBefore(yield* Clock.currentTimeMillis), PRUNE_BATCH)
    return removed === PRUNE_BATCH ? 0 : everyMs
  })

/** The sweep, every `everyMs`, for the layer's lifetime. */
export const layer = (everyMs: number = 60 * 60 * 1000): Layer.Layer<never, never, IdempotencyStore | Health> =>
  Layer.scopedDiscard(Effect.forkScoped(supervise("idempotency key expiry", expiryPass(everyMs), everyMs)))
