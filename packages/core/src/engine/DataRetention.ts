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
export const RETENTION_BATCH = 100

/** Batches per pass of the teams with more to remove; then a new pass (over every team) starts. */
export const MAX_ROUNDS = 20

/** The sweep's settings: the server's ceilings, and how often it looks. */
export interface RetentionSettings {
  readonly ceilings: RetentionCeilings
  readonly everyMs: number
}

export const DEFAULT_RETENTION: RetentionSettings = { ceilings: {}, everyMs: 60 * 60 * 1000 }

/**
 * Removes queued blobs, then forgets the keys of those removed; how many. A blob that cannot be
 * removed (a permission, a full disk) goes to the back of the queue, with a warning, for a later
 * pass: it does not hold the others up.
 */
export const removeQueuedKeys = (keys: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const blobs = yield* BlobStore
    const store = yield* RetentionStore
    const removed = yield* Effect.filter(keys, (key) =>
      blobs.remove(key).pipe(
        Effect.as(true),
        Effect.catchAll((e) => Effect.as(Effect.logWarning(`retention: blob ${key} could not be removed; it stays queued`, e), false))
      ), { concurrency: 8 })
    yield* store.blobsRemoved(removed)
    yield* store.blobsDeferred(keys.filter((key) => !removed.includes(key)))
    return removed.length
  })

/** Removes the blobs queued for removal, a batch at a time, until none is left or one could not be removed. */
export const removeQueuedBlobs = Effect.gen(function*() {
  const store = yield* RetentionStore
  for (;;) {
    const keys = yield* store.blobsToRemove(RETENTION_BATCH)
    const removed = yield* removeQueuedKeys(keys)
    if (keys.length < RETENTION_BATCH || removed < keys.length) return
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

/** A team's batch; a failure is logged and counted, so that one team's problem does not stop the others'. */
const sweepTeamAlone = (team: Team, ceilings: RetentionCeilings, now: number) =>
  sweepTeam(team, ceilings, now).pipe(
    Effect.map((full) => ({ team, full, failed: false })),
    Effect.catchAll((e) => Effect.as(Effect.logWarning(`retention: team ${team.uid} failed`, e), { team, full: false, failed: true }))
  )

/**
 * One pass: a batch of every team, then more batches of the teams whose batch was full (at most
 * `MAX_ROUNDS`), then the blobs; the wait before the next (none while some team has more). Fails
 * when a team's batch failed, after the others ran, so that `/readyz` says so.
 */
export const retentionPass = (settings: RetentionSettings) =>
  Effect.gen(function*() {
    yield* removeQueuedBlobs
    let pending = yield* (yield* IdentityStore).listTeams
    const now = yield* Clock.currentTimeMillis
    let failures = 0
    for (let round = 0; round < MAX_ROUNDS && pending.length > 0; round++) {
      const swept = yield* Effect.forEach(pending, (team) => sweepTeamAlone(team, settings.ceilings, now))
      failures += swept.filter((s) => s.failed).length
      pending = swept.filter((s) => s.full).map((s) => s.team)
      yield* removeQueuedBlobs
    }
    if (failures > 0) return yield* Effect.fail(`retention: ${failures} team batches failed (see the warnings)`)
    return pending.length > 0 ? 0 : settings.everyMs
  })

/** The sweep, for the layer's lifetime. */
export const layer = (settings: RetentionSettings = DEFAULT_RETENTION): Layer.Layer<never, never, RetentionStore | IdentityStore | BlobStore | Health> =>
  Layer.scopedDiscard(Effect.forkScoped(supervise("data retention", retentionPass(settings), settings.everyMs)))
