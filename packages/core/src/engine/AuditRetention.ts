/**
 * The audit log's retention (docs/audit.md): entries older than `retentionDays` are removed in
 * batches of `AUDIT_PRUNE_BATCH`, oldest first, the next batch at once while a batch was full,
 * else after `everyMs`. Supervised (Health.ts): a failing sweep says so in `/readyz` and retries.
 * Zero days keeps every entry (no sweep runs).
 */
import { Clock, Effect, Layer } from "effect"
import { AuditLog } from "../ports/AuditLog.js"
import type { Health} from "./Health.js";
import { supervise } from "./Health.js"

/** Entries removed per statement. */
export const AUDIT_PRUNE_BATCH = 1_000

const DAY_MS = 24 * 60 * 60 * 1000

/** One pass: removes a batch; the wait before the next (none while there is more to remove). */
export const prunePass = (retentionDays: number, everyMs: number) =>
  Effect.gen(function*() {
    const log = yield* AuditLog
    const cutoff = (yield* Clock.currentTimeMillis) - retentionDays * DAY_MS
    const removed = yield* log.prune(cutoff, AUDIT_PRUNE_BATCH)
    if (removed > 0) yield* Effect.logInfo(`audit log: removed ${removed} entries older than ${retentionDays} days`)
    return removed === AUDIT_PRUNE_BATCH ? 0 : everyMs
  })

/** The sweep, every `everyMs` (an hour by default), for the layer's lifetime; nothing with 0 days. */
export const layer = (options: { readonly retentionDays: number; readonly everyMs?: number }): Layer.Layer<never, never, AuditLog | Health> =>
  options.retentionDays <= 0
    ? Layer.empty
    : Layer.scopedDiscard(
      supervise("audit retention", prunePass(options.retentionDays, options.everyMs ?? 60 * 60 * 1000), options.everyMs ?? 60 * 60 * 1000).pipe(
        Effect.forkScoped
      )
    )
