/**
 * The retention of outbound webhooks' delivery logs (docs/outbound-webhooks.md): delivered and
 * failed deliveries created more than `days` ago are removed in batches of `PRUNE_BATCH`, the next
 * batch at once while a batch was full, else after `everyMs` (an hour). Pending deliveries stay
 * whatever their age. Supervised (Health.ts): a failing sweep says so in `/readyz` and retries.
 */
import { Clock, Effect, Layer } from "effect"
import { OutboundWebhookStore } from "../ports/OutboundWebhookStore.js"
import type { Health } from "./Health.js"
import { supervise } from "./Health.js"

/** Deliveries removed per statement. */
export const PRUNE_BATCH = 1_000

/** How many days delivered and failed deliveries are kept unless the host says otherwise. */
export const DEFAULT_LOG_DAYS = 7

const DAY_MS = 24 * 60 * 60 * 1000

/** One pass: removes a batch; the wait before the next (none while there is more to remove). */
export const retentionPass = (days: number, everyMs: number) =>
  Effect.gen(function*() {
    const store = yield* OutboundWebhookStore
    const before = (yield* Clock.currentTimeMillis) - days * DAY_MS
    const removed = yield* store.prune(before, PRUNE_BATCH)
    return removed === PRUNE_BATCH ? 0 : everyMs
  })

/** The sweep, every `everyMs`, for the layer's lifetime. */
export const layer = (
  days: number = DEFAULT_LOG_DAYS,
  everyMs: number = 60 * 60 * 1000
): Layer.Layer<never, never, OutboundWebhookStore | Health> =>
  Layer.scopedDiscard(Effect.forkScoped(supervise("outbound webhook log retention", retentionPass(days, everyMs), everyMs)))
