/**
 * The retention sweep (docs/retention.md): every `everyMs` (an hour), for each team, the ended runs
 * and the webhook deliveries past what applies to it (the shorter of its own retention and the
 * server's ceiling, Retention.ts) are removed, a batch of each per team, then the blobs those
 * removals queued. While a batch was full the next pass starts at once, so a backlog drains in
 * bounded steps and one team's backlog does not hold another's back. Supervised (Health.ts): a
 * failing sweep says so in `/readyz` and retries.
 */
import { Clock, Effect, Layer } from "effect"
import { cutoff, effectiveRetention, type RetentionCeilings } from "../domain/Retention.js"
import type { Team } from "../domain/Identity.js"
import { BlobStore } from "../ports/BlobStore.js"
import { IdentityStore } from "../ports/IdentityStore.js"
import { RetentionStore } from "../ports/RetentionStore.js"
import type { Health } from "./Health.js"
import { supervise } from "./Health.js"

/** Runs, deliveries and blobs removed per statement. */
export const RETENTION_BATCH = 200

/** The sweep's settings: the server's ceilings, and how often it looks. */
export interface RetentionSettings {
  readonly ceilings: RetentionCeilings
  readonly everyMs: number
}

export const DEFAULT_RETENTION: RetentionSettings = { ceilings: {}, everyMs: 60 * 60 * 1000 }

/** Removes the blobs queued for removal, a batch at a time, until none is left. */
export const removeQueuedBlobs = Effect.gen(function*() {
  const store = yield* RetentionStore
  const blobs = yield* BlobStore
  for (;;) {
    const keys = yield* store.blobsToRemove(RETENTION_BATCH)
    yield* Effect.forEach(keys, (key) => blobs.remove(key), { concurrency: 8, discard: true })
    yield* store.blobsRemoved(keys)
    if (keys.length < RETENTION_BATCH) return
  }
})

/** One batch of a team's runs and one of its deliveries; whether either was full. */
const sweepTeam = (team: Team, ceilings: RetentionCeilings, now: number) =>
  Effect.gen(function*() {
    const store = yield* RetentionStore
    const applies = effectiveRetention(team.retention, ceilings)
    const runs = applies.run_days === undefined ? 0 : yield* store.expireRuns(team.uid, cutoff(now, applies.run_days), RETENTION_BATCH)
    const deliveries = applies.webhook_delivery_days === undefined
      ? 0
      : yield* store.expireDeliveries(team.uid, cutoff(now, applies.webhook_delivery_days), RETENTION_BATCH)
    if (runs + deliveries > 0) {
      yield* Effect.logInfo(`retention: removed ${runs} runs and ${deliveries} webhook deliveries of team ${team.uid}`)
    }
    return runs === RETENTION_BATCH || deliveries === RETENTION_BATCH
  })

/** One pass over every team; the wait before the next (none while a batch was full). */
export const retentionPass = (settings: RetentionSettings) =>
  Effect.gen(function*() {
    yield* removeQueuedBlobs
    const teams = yield* (yield* IdentityStore).listTeams
    const now = yield* Clock.currentTimeMillis
    const full = yield* Effect.forEach(teams, (team) => sweepTeam(team, settings.ceilings, now))
    yield* removeQueuedBlobs
    return full.some((more) => more) ? 0 : settings.everyMs
  })

/** The sweep, for the layer's lifetime. */
export const layer = (settings: RetentionSettings = DEFAULT_RETENTION): Layer.Layer<never, never, RetentionStore | IdentityStore | BlobStore | Health> =>
  Layer.scopedDiscard(Effect.forkScoped(supervise("data retention", retentionPass(settings), settings.everyMs)))
