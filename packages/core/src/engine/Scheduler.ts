/**
 * The scheduler (docs/schedules.md): what makes schedules fire. Every replica runs it over the ports.
 * A pass reads the timing of every active schedule (`ScheduleStore.activeTimings`: id, expression,
 * zone, `updated_at`, watermark), finds those with a fire time after their watermark that has
 * come (`ScheduleStateMachine.dueTicks`: the on-time ticks, or at most one catch-up), and fires
 * them in batches: a batch's schedules read again in one query (`ScheduleStore.getMany`), the runs
 * of all their due ticks created by `Runs.createForTicks` in one transaction, each under the key
 * `ScheduleTick(schedule id, scheduled time)`, then the outcomes recorded on the schedules in one
 * more (`ScheduleStore.recordTicksEach`). Two replicas firing the same tick race on the key: one
 * creates the run, the other's tick is a DuplicateKey, so each tick starts exactly one run however
 * many replicas run.
 *
 * The run is created as the principal who last set the schedule's definition (`updated_by`: its
 * creator until someone PUTs it; pause and resume do not change it) would create it, with their current role in the
 * schedule's team, so the same checks as `POST /agent/runs`. Whoever sets a schedule's prompt and
 * config answers for its runs: a member who edits an admin's Team schedule makes it run as the
 * member, never as the admin. prompt and `agent_config` of the
 * schedule, `team: true` for a Team-scoped schedule, source `SCHEDULED_AGENT`, `schedule
 * {schedule_id, schedule_name, cron_schedule}`, metadata `backfilled: "true"` on a catch-up run.
 *
 * Decisions:
 * - On time or missed: a tick is on time when it is at most `catchUpGraceMs` old at the start of
 *   a pass, or when it came after this replica's previous pass began (the replica was up; a slow
 *   pass does not turn ticks into catch-ups). Older ticks were missed (downtime): at most one
 *   catch-up run, for the most recent of them, and only when no tick is on time.
 * - A refused spawn (the environment deleted or no longer usable, the creator no longer in the
 *   team or now a viewer, the team gone...) creates nothing; its message becomes
 *   `last_spawn_error`, and the watermark still moves past the tick, so a broken schedule does not
 *   retry the same tick forever: it tries again at its next tick, and the first run it starts
 *   clears the error. Storage failing is not a refusal: the watermark stays, and the tick is tried
 *   again on the next pass (on time, or later as the catch-up).
 * - History: `last_ran` is the scheduled time of the newest tick that started a run;
 *   `recent_runs` are the newest `recentRuns` (10) runs of the schedule, newest first: the runs of
 *   its ticks, each with the tick it was started for, and those started with run now
 *   (`Schedules.runNow`), each with the time it was started; `last_spawn_error` belongs to the
 *   newest tick handled (null when it started a run). The record is a compare-and-set on that part
 *   of the schedule (re-read and merged again when another replica, the API or run now wrote
 *   meanwhile: `ScheduleStore.recordTicksRetrying`, shared with run now), and merging is order-free
 *   (`recordOutcomes`), so the replica that lost a tick's race, or wrote first, never undoes the
 *   winner's record. The replica that lost the race records that the tick ran (watermark,
 *   `last_ran`); the winner adds its run.
 * - Scale: a pass costs one light query and, per schedule, a cached look-up (the parsed
 *   expression is kept per (id, `updated_at`), the next fire time per watermark); only due
 *   schedules are read whole. Due schedules are fired in batches of `batchSize`, `concurrency`
 *   batches at a time, in an order of each replica's own (shuffled), so replicas split a large
 *   minute between them rather than collide on every schedule. A batch costs three round trips
 *   and two transactions, whatever its size. The batches of a pass share their reads
 *   (`Runs.CreationLookups`: each team, principal and team's admission counts read once, the
 *   pass's runs counted ahead of later ones; the fire times per expression). A storage failure
 *   fails the batch's runs and records nothing of them: its ticks are tried again on the next
 *   pass. Between passes the loop sleeps until the next fire time it knows of, at most `pollMs`
 *   (new and changed schedules are seen within it).
 */
import { Chunk, Clock, Data, DateTime, Effect, Either, Layer, Option, Random } from "effect"
import { lesserRole, type Viewer } from "../domain/Access.js"
import type { CronSchedule } from "../domain/Cron.js"
import { fireTimesBetween, nextFire, parseSchedule } from "../domain/Cron.js"
import { type Health, supervise } from "./Health.js"
import type { PrincipalUid, RunId, ScheduleId } from "../domain/Ids.js"
import { memberViewer } from "../services/Identities.js"
import type { Principal } from "../domain/Identity.js"
import { IdentityStore } from "../ports/IdentityStore.js"
import { changesNothing, recordTicksRetrying, ScheduleStore, ticksOf } from "../ports/ScheduleStore.js"
import type { ScheduleTicks, StoredSchedule, TicksRecord, TicksWrite } from "../ports/ScheduleStore.js"
import type { KeyHolder } from "../ports/Storage.js"
import type { RunState } from "../domain/RunState.js"
import { Runs } from "../services/Runs.js"
import { newLookups } from "../services/Runs.js"
import type { CreationLookups, TickCreation, TickRequests } from "../services/Runs.js"
import { newestRunsFirst } from "../domain/Schedule.js"
import type { ScheduledRunRef } from "../domain/Schedule.js"
import { scheduleRunRequest } from "../services/Schedules.js"
import { dueTicksFor } from "../domain/ScheduleStateMachine.js"
import { SchedulerConfig } from "./Settings.js"
import type { DueTick } from "../domain/ScheduleStateMachine.js"

export { defaultSchedulerSettings as defaultSettings, SchedulerConfig, type SchedulerSettings } from "./Settings.js"

// ---------------------------------------------------------------------------------------------
// What a tick came to, and the history it leaves (pure)

/**
 * What became of one due tick (`scheduledFor` in epoch ms): this replica started its run, another
 * had started it already (the key was taken), or the spawn was refused (`message` says why).
 */
export type TickOutcome = Data.TaggedEnum<{
  Started: { readonly scheduledFor: number; readonly run_id: RunId; readonly state: RunState }
  /** Another pass (maybe another replica's) started the tick: `holder` is its run, when known. */
  AlreadyStarted: { readonly scheduledFor: number; readonly holder?: KeyHolder | undefined }
  Refused: { readonly scheduledFor: number; readonly message: string }
}>
export const TickOutcome = Data.taggedEnum<TickOutcome>()

/**
 * The scheduler's part of a schedule after `outcomes` (any order, any number of times: merging is
 * commutative and idempotent, except which of two different refusals of one tick is kept):
 * - the watermark is the latest of the stored one and the ticks';
 * - `last_ran` the latest tick that has a run (started here or elsewhere);
 * - `recent_runs` the runs started, newest tick first, at most `limit`: those this pass started and
 *   those it found holding a tick's key (so a run whose replica stopped before recording it, or
 *   whose record was lost, is listed by the next pass that fires its tick);
 * - `last_spawn_error` that of the newest tick handled: a refusal of a tick newer than the
 *   watermark sets it, a run for a tick at least as new as the watermark clears it, anything
 *   older leaves it.
 */
export const recordOutcomes = (part: ScheduleTicks, outcomes: ReadonlyArray<TickOutcome>, limit: number): TicksWrite => {
  let lastTickAt = part.lastTickAt
  let lastRan = part.history.last_ran === null ? undefined : DateTime.toEpochMillis(part.history.last_ran)
  let error = part.last_spawn_error
  const runs = new Map<string, ScheduledRunRef>(part.history.recent_runs.map((r) => [r.run_id, r]))
  for (const outcome of outcomes) {
    const t = outcome.scheduledFor
    if (outcome._tag === "Refused") {
      if (t > lastTickAt) error = outcome.message
    } else {
      lastRan = lastRan === undefined ? t : Math.max(lastRan, t)
      if (t >= lastTickAt) error = null
      const run = outcome._tag === "Started" ? outcome : outcome.holder
      if (run !== undefined && !runs.has(run.run_id)) {
        runs.set(run.run_id, { run_id: run.run_id, state: run.state, scheduled_for: DateTime.unsafeMake(t) })
      }
    }
    lastTickAt = Math.max(lastTickAt, t)
  }
  const recent = newestRunsFirst(runs.values(), limit)
  return {
    lastTickAt,
    last_ran: lastRan === undefined ? null : DateTime.unsafeMake(lastRan),
    recent_runs: recent,
    last_spawn_error: error
  }
}

// ---------------------------------------------------------------------------------------------
// The passes

/** What one pass did. */
export interface PassReport {
  /** Schedules that had a fire time due at the pass's start. */
  readonly due: number
  /** Runs this replica created. */
  readonly started: number
  /**
   * When to pass again: no later than the next fire time of any active schedule (undefined: none
   * fires again). After due schedules, the next whole second (their next fire times are worked out then).
   */
  readonly nextTickAt: number | undefined
}

/** A parsed expression, kept per (schedule id, `updated_at`), with its next fire time per watermark. */
interface Cached {
  readonly updatedAt: number
  readonly expression: string
  readonly timezone: string
  /** Undefined when the stored expression no longer parses. */
  readonly cron: CronSchedule | undefined
  lastTickAt: number
  /** The first fire time after `lastTickAt`; undefined when there is none. */
  next: number | undefined
}

const messageOf = (error: unknown): string =>
  typeof error === "object" && error !== null && "message" in error && typeof error.message === "string" && error.message !== ""
    ? error.message
    : String(error)

/**
 * What the batches of one pass share: the reads of the run checks (teams, principals, admission
 * counts: `Runs.CreationLookups`), and the fire times worked out per expression (schedules with the
 * same expression and zone, due at the same time, have the same on-time ticks).
 */
interface PassShared {
  readonly lookups: CreationLookups
  readonly fireTimes: typeof fireTimesBetween
}

/** `fireTimesBetween`, remembered per (expression, zone, bounds, limit). */
const memoFireTimes = (): typeof fireTimesBetween => {
  const known = new Map<string, ReadonlyArray<Date>>()
  return (schedule, after, until, limit) => {
    const key = `${schedule.expression}\u0000${schedule.timezone}\u0000${+after}\u0000${+until}\u0000${limit}`
    let found = known.get(key)
    if (found === undefined) {
      found = fireTimesBetween(schedule, after, until, limit)
      known.set(key, found)
    }
    return found
  }
}

/** Makes one replica's scheduler: `pass` fires what is due now. */
export const make = Effect.gen(function*() {
  const settings = yield* SchedulerConfig
  const store = yield* ScheduleStore
  const identities = yield* IdentityStore
  const runs = yield* Runs

  let cache = new Map<ScheduleId, Cached>()
  /** When this replica's previous pass began. */
  let previousPass: number | undefined

  const cached = (id: ScheduleId, updatedAt: number, expression: string, timezone: string): Cached => {
    const found = cache.get(id)
    if (found !== undefined && found.updatedAt === updatedAt && found.expression === expression && found.timezone === timezone) {
      return found
    }
    const parsed = parseSchedule(expression, timezone)
    const entry: Cached = {
      updatedAt,
      expression,
      timezone,
      cron: Either.getOrUndefined(parsed),
      lastTickAt: Number.NaN,
      next: undefined
    }
    cache.set(id, entry)
    return entry
  }

  /** The principal a schedule's runs act as (who last changed it) as a caller in its team, or why there is none. */
  const actorOf = (schedule: StoredSchedule, principals: Map<PrincipalUid, Option.Option<Principal>>) =>
    Effect.gen(function*() {
      const uid = schedule.item.updated_by.uid
      let principal = principals.get(uid)
      if (principal === undefined) {
        principal = yield* identities.getPrincipal(uid)
        principals.set(uid, principal)
      }
      if (Option.isNone(principal)) {
        return Either.left(`the schedule's last editor (${uid}) no longer exists`)
      }
      const viewer = memberViewer(principal.value, schedule.team_uid)
      return viewer === undefined
        ? Either.left(`the schedule's last editor (${principal.value.display_name}) is no longer a member of its team`)
        // With no more than the role it set the schedule with (an agent's token may have acted for it).
        : Either.right({ ...viewer, role: lesserRole(viewer.role, schedule.editor_role) })
    })

  /** The request of one tick's run, as the schedule's last editor. */
  const tickRequest = (schedule: StoredSchedule, viewer: Viewer, tick: DueTick): TickRequests => {
    const item = schedule.item
    return {
      key: { _tag: "ScheduleTick", schedule_id: item.id, scheduled_for: tick.scheduledFor.getTime() },
      requests: [scheduleRunRequest(schedule, viewer, tick.backfilled ? { backfilled: "true" } : undefined)]
    }
  }

  /** What a tick's creation came to. */
  const outcomeOf = (scheduledFor: number, creation: TickCreation): TickOutcome => {
    if (Either.isRight(creation)) {
      const [response] = creation.right
      return TickOutcome.Started({ scheduledFor, run_id: response!.run_id, state: response!.state })
    }
    return creation.left._tag === "DuplicateKey"
      ? TickOutcome.AlreadyStarted({ scheduledFor, holder: creation.left.holder })
      : TickOutcome.Refused({ scheduledFor, message: messageOf(creation.left) })
  }

  /**
   * Creates the runs of the ticks (one transaction); undefined when storage failed (the ticks are
   * tried again later). Any other failure of the batch (none is expected: refusals are per tick)
   * falls back to creating each tick's runs on its own, so one tick never holds the others back.
   */
  const spawnAll = (
    ticks: ReadonlyArray<TickRequests>,
    lookups: CreationLookups
  ): Effect.Effect<ReadonlyArray<TickCreation | undefined>> =>
    runs.createForTicks(ticks, lookups).pipe(
      Effect.catchAll((error) =>
        error._tag === "ResourceUnavailable"
          ? Effect.as(
            Effect.logWarning(`scheduler: could not start the runs of ${ticks.length} ticks: storage is unavailable`),
            ticks.map(() => undefined)
          )
          : Effect.forEach(ticks, (tick) =>
            runs.createOnce(tick.requests, tick.key).pipe(
              Effect.map((responses): TickCreation | undefined => Either.right(responses)),
              Effect.catchAll((e): Effect.Effect<TickCreation | undefined> =>
                e._tag === "ResourceUnavailable" ? Effect.succeed(undefined) : Effect.succeed(Either.left(e))
              )
            ))
      )
    )

  /**
   * Writes the outcomes on one schedule after its write lost: re-read, merged, compare-and-set
   * again, as long as it keeps losing (`recordTicksRetrying`).
   */
  const recordAgain = (id: ScheduleId, outcomes: ReadonlyArray<TickOutcome>) =>
    recordTicksRetrying(store, id, (part) => recordOutcomes(part, outcomes, settings.recentRuns))

  /**
   * Writes the outcomes on the schedules as read, in one transaction; each write that lost its
   * compare-and-set (another replica or the API wrote meanwhile) is re-read and merged on its own.
   */
  const recordAll = (fired: ReadonlyArray<{ readonly schedule: StoredSchedule; readonly outcomes: ReadonlyArray<TickOutcome> }>) =>
    Effect.gen(function*() {
      const writes: Array<TicksRecord> = []
      const owners: Array<(typeof fired)[number]> = []
      for (const f of fired) {
        const part = ticksOf(f.schedule)
        const next = recordOutcomes(part, f.outcomes, settings.recentRuns)
        if (changesNothing(part, next)) continue
        writes.push({ id: f.schedule.item.id, expected: part, next })
        owners.push(f)
      }
      if (writes.length === 0) return
      const applied = yield* store.recordTicksEach(writes)
      yield* Effect.forEach(
        owners.filter((_, i) => !applied[i]),
        (f) =>
          recordAgain(f.schedule.item.id, f.outcomes).pipe(
            Effect.catchAllCause((cause) => Effect.logWarning(`scheduler: could not record the ticks of schedule ${f.schedule.item.id}`, cause))
          ),
        { concurrency: 4, discard: true }
      )
    })

  /**
   * Fires the due ticks of a batch of schedules, read again whole (another replica may have fired
   * them): their runs in one transaction, then their records in one more. Answers the runs started.
   */
  const fire = (ids: ReadonlyArray<ScheduleId>, now: number, graceMs: number, shared: PassShared) =>
    Effect.gen(function*() {
      const found = yield* store.getMany(ids)
      const fired: Array<{ schedule: StoredSchedule; outcomes: Array<TickOutcome> }> = []
      const requests: Array<TickRequests> = []
      /** Per request: the schedule's entry of `fired` it belongs to. */
      const owners: Array<{ schedule: StoredSchedule; outcomes: Array<TickOutcome> }> = []
      for (const schedule of found) {
        if (schedule.state.status !== "active") continue
        const item = schedule.item
        const { cron } = cached(item.id, DateTime.toEpochMillis(item.updated_at), item.cron_schedule, item.timezone)
        if (cron === undefined) continue
        const ticks = dueTicksFor(schedule.state, cron, now, {
          catchUpGraceMs: graceMs,
          maxTicks: settings.maxTicks,
          fireTimes: shared.fireTimes
        })
        if (ticks.length === 0) continue
        const creator = yield* actorOf(schedule, shared.lookups.principals)
        const entry = { schedule, outcomes: [] as Array<TickOutcome> }
        fired.push(entry)
        for (const tick of ticks) {
          if (Either.isLeft(creator)) {
            entry.outcomes.push(TickOutcome.Refused({ scheduledFor: tick.scheduledFor.getTime(), message: creator.left }))
          } else {
            requests.push(tickRequest(schedule, creator.right, tick))
            owners.push(entry)
          }
        }
      }
      const created = requests.length === 0 ? [] : yield* spawnAll(requests, shared.lookups)
      let started = 0
      const refused: Array<string> = []
      created.forEach((creation, i) => {
        // Undefined: storage failed; the schedule's ticks are tried again on the next pass.
        if (creation === undefined) return
        const outcome = outcomeOf(requests[i]!.key.scheduled_for, creation)
        if (outcome._tag === "Started") started++
        if (outcome._tag === "Refused") {
          refused.push(`scheduler: schedule ${requests[i]!.key.schedule_id} could not start its run: ${outcome.message}`)
        }
        owners[i]!.outcomes.push(outcome)
      })
      yield* Effect.forEach(refused, (line) => Effect.logInfo(line), { discard: true })
      yield* recordAll(fired.filter((f) => f.outcomes.length > 0))
      return started
    })

  /** One pass: fires every tick due now, in batches of `batchSize` schedules, `concurrency` batches at a time. */
  const pass: Effect.Effect<PassReport, unknown> = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const graceMs = previousPass === undefined
      ? settings.catchUpGraceMs
      : Math.max(settings.catchUpGraceMs, now - previousPass)
    previousPass = now
    const timings = yield* store.activeTimings
    const previous = cache
    cache = new Map()
    const due: Array<ScheduleId> = []
    let nextTickAt = Infinity
    for (const timing of timings) {
      const old = previous.get(timing.id)
      if (old !== undefined) cache.set(timing.id, old)
      const entry = cached(timing.id, timing.updated_at, timing.cron_schedule, timing.timezone)
      if (entry.cron === undefined) continue
      if (entry.lastTickAt !== timing.last_tick_at) {
        entry.lastTickAt = timing.last_tick_at
        entry.next = nextFire(entry.cron, timing.last_tick_at)?.getTime()
      }
      if (entry.next === undefined) continue
      if (entry.next <= now) {
        // Its next fire time is after now, on a whole second: the next pass works it out (from
        // the new watermark), after this one has started the runs.
        due.push(timing.id)
        nextTickAt = Math.min(nextTickAt, Math.floor(now / 1000) * 1000 + 1000)
      } else {
        nextTickAt = Math.min(nextTickAt, entry.next)
      }
    }
    const shared: PassShared = { lookups: newLookups(), fireTimes: memoFireTimes() }
    const order = Chunk.toReadonlyArray(yield* Random.shuffle(due))
    const size = Math.max(1, settings.batchSize)
    const batches: Array<ReadonlyArray<ScheduleId>> = []
    for (let i = 0; i < order.length; i += size) batches.push(order.slice(i, i + size))
    let started = 0
    yield* Effect.forEach(
      batches,
      (ids) =>
        fire(ids, now, graceMs, shared).pipe(
          Effect.tap((n) => Effect.sync(() => (started += n))),
          Effect.catchAllCause((cause) => Effect.logWarning(`scheduler: firing ${ids.length} schedules failed`, cause))
        ),
      { concurrency: Math.max(1, settings.concurrency), discard: true }
    )
    return { due: due.length, started, nextTickAt: nextTickAt === Infinity ? undefined : nextTickAt }
  })

  return { pass } as const
})

/**
 * The scheduler's loop, for the scope of the layer: a pass, then a sleep until the next fire time
 * it knows of (at most `pollMs`), forever; supervised (Health.ts): a failing pass is reported and
 * retried, never the end of the loop.
 */
export const layer: Layer.Layer<never, never, SchedulerConfig | ScheduleStore | IdentityStore | Runs | Health> = Layer
  .scopedDiscard(
    Effect.gen(function*() {
      const settings = yield* SchedulerConfig
      const scheduler = yield* make
      const step = Effect.gen(function*() {
        const report = yield* scheduler.pass
        if (report.started > 0) yield* Effect.logDebug(`scheduler: started ${report.started} runs of ${report.due} due schedules`)
        const now = yield* Clock.currentTimeMillis
        return report.nextTickAt === undefined
          ? settings.pollMs
          : Math.min(settings.pollMs, Math.max(0, report.nextTickAt - now))
      })
      yield* Effect.forkScoped(supervise("scheduler", step, settings.pollMs))
    })
  )
