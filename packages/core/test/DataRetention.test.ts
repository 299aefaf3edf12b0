/** The retention sweep on the TestClock, over the in-memory stores and blob store. */
import { describe, expect, it } from "@effect/vitest"
import { DateTime, Effect, Layer, Option, TestClock } from "effect"
import { transcriptKey } from "../src/domain/BlobKeys.js"
import type { PrincipalUid, TeamUid } from "../src/domain/Ids.js"
import { Team } from "../src/domain/Identity.js"
import type { TeamRetention } from "../src/domain/Retention.js"
import type { RunState } from "../src/domain/RunState.js"
import { layer as sweep, MAX_ROUNDS, RETENTION_BATCH, retentionPass } from "../src/engine/DataRetention.js"
import * as Health from "../src/engine/Health.js"
import { BlobStore } from "../src/ports/BlobStore.js"
import { IdentityStore } from "../src/ports/IdentityStore.js"
import { RetentionStore } from "../src/ports/RetentionStore.js"
import { RunStore, type StoredRun } from "../src/ports/RunStore.js"
import { StorageError } from "../src/ports/Storage.js"
import { creationEvents, makeRun, memoryStorage, uid } from "../testing/index.js"
import { memoryBlobStore } from "../testing/ConversationsServiceSuite.js"

const DAY = 86_400_000
const HOUR = 3_600_000
const NOW = Date.UTC(2026, 10, 28)

const teamWith = (retention: TeamRetention) =>
  Effect.gen(function*() {
    const team = uid<TeamUid>()
    yield* (yield* IdentityStore).createTeam(new Team({
      uid: team,
      name: `team ${team}`,
      features: { metadata_filtering: true, scheduled_agents: true },
      max_concurrent_runs: 8,
      created_at: DateTime.unsafeMake(NOW - 400 * DAY),
      retention
    }))
    return team
  })

/** A run of the team last changed at `at`, with a transcript blob. */
const runAt = (team: TeamUid, at: number, state: RunState = "SUCCEEDED") =>
  Effect.gen(function*() {
    const run = makeRun({ team, creator: uid<PrincipalUid>(), state, created_at: at - 1000, updated_at: at })
    yield* (yield* RunStore).create([{ run, events: creationEvents(run) }])
    yield* (yield* BlobStore).put(transcriptKey(run.item.run_id), new TextEncoder().encode("{}\n"))
    return run
  })

/** Whether the run and its transcript are still there. */
const kept = (run: StoredRun) =>
  Effect.gen(function*() {
    const row = Option.isSome(yield* (yield* RunStore).get(run.item.run_id))
    const blob = (yield* (yield* BlobStore).size(transcriptKey(run.item.run_id))) > 0
    expect(blob).toBe(row)
    return row
  })

const stores = Layer.mergeAll(memoryStorage, memoryBlobStore, Health.layer)

describe("data retention", () => {
  it.effect("removes runs past the shorter of the team's and the server's limits, with their blobs, and only ended ones", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(NOW)
      const strict = yield* teamWith({ run_days: 7 })
      const lax = yield* teamWith({ run_days: 365 })
      const unset = yield* teamWith({})
      const strictOld = yield* runAt(strict, NOW - 8 * DAY)
      const strictLive = yield* runAt(strict, NOW - 100 * DAY, "INPROGRESS")
      const strictNew = yield* runAt(strict, NOW - 6 * DAY)
      const laxOld = yield* runAt(lax, NOW - 31 * DAY, "FAILED")
      const laxNew = yield* runAt(lax, NOW - 29 * DAY)
      const unsetOld = yield* runAt(unset, NOW - 31 * DAY, "CANCELLED")

      const pass = retentionPass({ ceilings: { run_days: 30 }, everyMs: HOUR })
      expect(yield* pass).toBe(HOUR)
      expect(yield* kept(strictOld)).toBe(false)
      expect(yield* kept(laxOld)).toBe(false)
      expect(yield* kept(unsetOld)).toBe(false)
      for (const run of [strictLive, strictNew, laxNew]) expect(yield* kept(run)).toBe(true)
    }).pipe(Effect.provide(stores)))

  it.effect("drains a backlog in bounded batches, oldest first, the next pass at once while a batch was full", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(NOW)
      const team = yield* teamWith({ run_days: 1 })
      const quiet = yield* teamWith({ run_days: 1 })
      const backlog = RETENTION_BATCH * MAX_ROUNDS + 5
      const runs = yield* Effect.forEach(Array.from({ length: backlog }), (_, i) => runAt(team, NOW - 2 * DAY - i))
      const other = yield* runAt(quiet, NOW - 2 * DAY)
      const pass = retentionPass({ ceilings: {}, everyMs: HOUR })
      expect(yield* pass).toBe(0)
      expect(yield* kept(other)).toBe(false)
      const left = yield* Effect.filter(runs, kept)
      // Oldest first: the newest five are what is left.
      expect(left.map((r) => r.item.run_id)).toEqual(runs.slice(0, 5).map((r) => r.item.run_id))
      expect(yield* pass).toBe(HOUR)
      expect((yield* Effect.filter(runs, kept)).length).toBe(0)
    }).pipe(Effect.provide(stores)))

  it.effect("a blob that cannot be removed stays queued for the next pass; the others go", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(NOW)
      const team = yield* teamWith({ run_days: 1 })
      const stuck = yield* runAt(team, NOW - 2 * DAY)
      const fine = yield* runAt(team, NOW - 2 * DAY)
      const real = yield* BlobStore
      const broken = BlobStore.of({
        ...real,
        remove: (key) => key === transcriptKey(stuck.item.run_id) ? Effect.fail(new StorageError({ operation: "remove", cause: "EACCES" })) : real.remove(key)
      })
      const pass = retentionPass({ ceilings: {}, everyMs: HOUR }).pipe(Effect.provideService(BlobStore, broken))
      expect(yield* pass).toBe(HOUR)
      expect((yield* real.size(transcriptKey(fine.item.run_id)))).toBe(0)
      expect((yield* real.size(transcriptKey(stuck.item.run_id)))).toBeGreaterThan(0)
      expect(yield* (yield* RetentionStore).blobsToRemove(10)).toEqual([transcriptKey(stuck.item.run_id)])
      expect(yield* retentionPass({ ceilings: {}, everyMs: HOUR })).toBe(HOUR)
      expect((yield* real.size(transcriptKey(stuck.item.run_id)))).toBe(0)
      expect(yield* (yield* RetentionStore).blobsToRemove(10)).toEqual([])
    }).pipe(Effect.provide(stores)))

  it.scoped("on the clock: a run goes within the hour after its time, not before", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(NOW)
      const team = yield* teamWith({ run_days: 7 })
      const run = yield* runAt(team, NOW)
      yield* Layer.launch(sweep({ ceilings: {}, everyMs: HOUR })).pipe(Effect.forkScoped)
      yield* TestClock.adjust(7 * DAY - HOUR)
      expect(yield* kept(run)).toBe(true)
      yield* TestClock.adjust(2 * HOUR)
      expect(yield* kept(run)).toBe(false)
    }).pipe(Effect.provide(stores)))
})
