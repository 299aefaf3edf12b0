/**
 * The scheduled agent's lifecycle (docs/schedules.md) and which of
 * its ticks are due. States: `active` (running on cron, `enabled: true`), `paused`
 * (`enabled: false`) and `deleted` (terminal). Pause, `PUT` with `enabled: false`, resume, `PUT`
 * with `enabled: true`, delete and the scheduler's ticks are events of one pure transition function.
 *
 * Every schedule carries a watermark, `lastTickAt`: the epoch ms of the last scheduled time handled.
 * No scheduled time at or before it ever fires. It starts at the creation time (nothing before
 * creation fires), each fired tick moves it to that tick's scheduled time, and resuming (or
 * changing the cron expression or zone) moves it to that moment, so a paused schedule does not
 * catch up and a new expression does not fire for times before it was set.
 *
 * Which ticks are due (`dueTicks`): the fire times in (lastTickAt, now]. Those at most
 * `catchUpGraceMs` old are on time and all fire. Older ones were missed (downtime): if nothing is
 * on time, the most recent missed one fires once as a catch-up run, `backfilled: true`; the rest
 * never fire. When an on-time tick fires, it stands in for the missed ones (no extra catch-up run).
 */
import { Data, Either, Schema } from "effect"
import type { CronSchedule, TimeInput } from "./Cron.js"
import { fireTimesBetween, nextFire } from "./Cron.js"

export const ScheduleStatus = Schema.Literal("active", "paused", "deleted")
export type ScheduleStatus = typeof ScheduleStatus.Type

/** What the state machine knows of a schedule. */
export interface ScheduleState {
  readonly status: ScheduleStatus
  /** Epoch ms of the last scheduled time handled; nothing at or before it fires. */
  readonly lastTickAt: number
}

/** The state of a schedule just created (`enabled` as requested); nothing before `createdAt` fires. */
export const initialState = (options: { readonly enabled: boolean; readonly createdAt: number }): ScheduleState => ({
  status: options.enabled ? "active" : "paused",
  lastTickAt: options.createdAt
})

/** The wire's `enabled`: true only while active. */
export const isEnabled = (state: ScheduleState): boolean => state.status === "active"

/**
 * What can happen to a schedule. `at` is when it happened (epoch ms). `Update` is a PUT:
 * `scheduleChanged` says whether its `cron_schedule` or `timezone` differs from before. `Tick` is the
 * scheduler firing the run for `scheduledFor`.
 */
export type ScheduleEvent = Data.TaggedEnum<{
  Pause: { readonly at: number }
  Resume: { readonly at: number }
  Update: { readonly enabled: boolean; readonly scheduleChanged: boolean; readonly at: number }
  Delete: { readonly at: number }
  Tick: { readonly scheduledFor: number }
}>
export const ScheduleEvent = Data.taggedEnum<ScheduleEvent>()

/** The events as the transition table tells them apart (an Update by its `enabled`). */
export type ScheduleEventKind = "Pause" | "Resume" | "UpdateEnabled" | "UpdateDisabled" | "Delete" | "Tick"

/** The kind of an event, as the transition table keys it. */
export const eventKind = (event: ScheduleEvent): ScheduleEventKind =>
  event._tag === "Update" ? (event.enabled ? "UpdateEnabled" : "UpdateDisabled") : event._tag

/**
 * Every allowed transition; anything else is rejected. Pause and resume are idempotent (pausing a
 * paused schedule changes nothing), and nothing leaves `deleted`.
 */
export const ScheduleTransitions: {
  readonly [S in ScheduleStatus]: { readonly [K in ScheduleEventKind]?: ScheduleStatus }
} = {
  active: {
    Pause: "paused",
    Resume: "active",
    UpdateEnabled: "active",
    UpdateDisabled: "paused",
    Delete: "deleted",
    Tick: "active"
  },
  paused: {
    Pause: "paused",
    Resume: "active",
    UpdateEnabled: "active",
    UpdateDisabled: "paused",
    Delete: "deleted"
  },
  deleted: {}
}

/** An accepted event: the states before and after, and the new state. */
export interface ScheduleTransition {
  readonly from: ScheduleStatus
  readonly to: ScheduleStatus
  readonly event: ScheduleEvent
  readonly state: ScheduleState
}

/**
 * A refused event. `deleted`: the schedule is gone (a 404 for API calls). `paused`: a paused
 * schedule fires nothing. `already_handled`: a tick at or before the watermark (already fired,
 * skipped, or before creation or resume).
 */
export class ScheduleRejection extends Data.TaggedError("ScheduleRejection")<{
  readonly from: ScheduleStatus
  readonly event: ScheduleEventKind
  readonly reason: "deleted" | "paused" | "already_handled"
  readonly message: string
}> {}

/** Applies one event: the new state, or why the event is refused. */
export const transition = (state: ScheduleState, event: ScheduleEvent): Either.Either<ScheduleTransition, ScheduleRejection> => {
  const kind = eventKind(event)
  const to = ScheduleTransitions[state.status][kind]
  if (to === undefined) {
    const reason = state.status === "deleted" ? "deleted" : "paused"
    return Either.left(
      new ScheduleRejection({
        from: state.status,
        event: kind,
        reason,
        message: reason === "deleted" ? "the schedule has been deleted" : "a paused schedule fires nothing"
      })
    )
  }
  let lastTickAt = state.lastTickAt
  if (event._tag === "Tick") {
    if (!(event.scheduledFor > state.lastTickAt)) {
      return Either.left(
        new ScheduleRejection({
          from: state.status,
          event: kind,
          reason: "already_handled",
          message: `the tick for ${event.scheduledFor} is at or before the last one handled (${state.lastTickAt})`
        })
      )
    }
    lastTickAt = event.scheduledFor
  } else if (
    (state.status === "paused" && to === "active") ||
    (event._tag === "Update" && event.scheduleChanged)
  ) {
    // Resuming does not catch up, and a new expression counts from when it was set.
    lastTickAt = Math.max(lastTickAt, event.at)
  }
  return Either.right({ from: state.status, to, event, state: { status: to, lastTickAt } })
}

/** The next time the schedule will fire (`history.next_run`), or null when paused or deleted. */
export const nextRun = (state: ScheduleState, schedule: CronSchedule, now: TimeInput): Date | null => {
  if (state.status !== "active") return null
  const from = Math.max(typeof now === "number" ? now : now.getTime(), state.lastTickAt)
  return nextFire(schedule, from) ?? null
}

/** A run to start now for a scheduled time; `backfilled` marks a catch-up run after downtime. */
export interface DueTick {
  readonly scheduledFor: Date
  readonly backfilled: boolean
}

/** How `dueTicks` decides. */
export interface DueTickOptions {
  readonly catchUpGraceMs: number
  readonly maxTicks?: number
  /** `Cron.fireTimesBetween`, or a function answering the same (one that remembers its answers). */
  readonly fireTimes?: typeof fireTimesBetween
}

/** How many on-time ticks one call returns at most (the latest ones) when the expression is dense. */
export const DEFAULT_MAX_DUE_TICKS = 60

/**
 * The ticks to fire now, ascending (see the module comment): the on-time fire times in
 * (lastTickAt, now], or else at most one catch-up tick for the most recent missed one. Nothing
 * when `lastTickAt` is unknown (callers start it at the creation time, see `initialState`).
 * Choose `catchUpGraceMs` at least as long as the scheduler's polling interval.
 */
export const dueTicks = (
  schedule: CronSchedule,
  lastTickAt: number | undefined,
  now: TimeInput,
  options: DueTickOptions
): ReadonlyArray<DueTick> => {
  const fireTimes = options.fireTimes ?? fireTimesBetween
  const nowMs = typeof now === "number" ? now : now.getTime()
  if (lastTickAt === undefined || !(nowMs > lastTickAt)) return []
  // On time: scheduled no earlier than now - grace. Fire times are whole milliseconds.
  const onTimeAfter = Math.max(lastTickAt, Math.ceil(nowMs - Math.max(0, options.catchUpGraceMs)) - 1)
  const maxTicks = Math.max(1, options.maxTicks ?? DEFAULT_MAX_DUE_TICKS)
  const onTime = fireTimes(schedule, onTimeAfter, nowMs, maxTicks)
  if (onTime.length > 0) return onTime.map((scheduledFor) => ({ scheduledFor, backfilled: false }))
  const [latestMissed] = fireTimes(schedule, lastTickAt, onTimeAfter, 1)
  return latestMissed === undefined ? [] : [{ scheduledFor: latestMissed, backfilled: true }]
}

/** `dueTicks` for a schedule in a given state: nothing unless it is active. */
export const dueTicksFor = (
  state: ScheduleState,
  schedule: CronSchedule,
  now: TimeInput,
  options: DueTickOptions
): ReadonlyArray<DueTick> =>
  state.status === "active" ? dueTicks(schedule, state.lastTickAt, now, options) : []
