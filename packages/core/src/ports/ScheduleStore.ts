/**
 * Port: scheduled agents and their tick ledger (the ledger's keys are written by RunStore.create
 * with a ScheduleTick key, in the transaction that creates the tick's run).
 *
 * A schedule has two writers with parts of their own: the API (`update`: name, expression,
 * prompt, configuration, status...) and the scheduler (`recordTicks`: `history` and
 * `last_spawn_error`). Both move the tick watermark, only ever forwards, so neither undoes the
 * other's write: `update` never writes the scheduler's part and keeps the later of the two
 * watermarks; `recordTicks` is a compare-and-set on the scheduler's part as it was read.
 */
import type { Role } from "../domain/Identity.js"
import { Context, Data, DateTime, Effect, Option } from "effect"
import type { Viewer } from "../domain/Access.js"
import type { PrincipalUid, ScheduleId, TeamUid } from "../domain/Ids.js"
import type { ScheduledAgentItem, ScheduleHistory, ScheduledRunRef } from "../domain/Schedule.js"
import type { ScheduleState } from "../domain/ScheduleStateMachine.js"
import type { StaleWrite, StorageError } from "./Storage.js"

/** A schedule as stored: its wire item (history is computed on read), owner and machine state. */
export interface StoredSchedule {
  readonly item: ScheduledAgentItem
  readonly team_uid: TeamUid
  readonly creator_uid: PrincipalUid
  /**
   * The role its last editor (`item.updated_by`) acted with when it set the prompt and config: its
   * runs act as that editor with no more than this role (docs/security.md).
   */
  readonly editor_role: Role
  readonly state: ScheduleState
}

/** What the scheduler reads of every active schedule on every pass: when it fires, and what it handled. */
export interface ScheduleTiming {
  readonly id: ScheduleId
  readonly cron_schedule: string
  readonly timezone: string
  /** Epoch ms of the schedule's `updated_at` (a changed schedule has a new one). */
  readonly updated_at: number
  /** The tick watermark (`ScheduleState.lastTickAt`). */
  readonly last_tick_at: number
}

/** The scheduler's part of a schedule: the watermark, the history (its `next_run` is not stored), the spawn error. */
export interface ScheduleTicks {
  readonly lastTickAt: number
  readonly history: ScheduleHistory
  readonly last_spawn_error: string | null
}

/** The scheduler's part of a stored schedule. */
export const ticksOf = (schedule: StoredSchedule): ScheduleTicks => ({
  lastTickAt: schedule.state.lastTickAt,
  history: schedule.item.history,
  last_spawn_error: schedule.item.last_spawn_error
})

/** A scheduler's write: the watermark, when the newest tick ran, the runs, the spawn error. */
export interface TicksWrite {
  readonly lastTickAt: number
  readonly last_ran: DateTime.Utc | null
  readonly recent_runs: ReadonlyArray<ScheduledRunRef>
  readonly last_spawn_error: string | null
}

/** One schedule's compare-and-set of `recordTicksEach`. */
export interface TicksRecord {
  readonly id: ScheduleId
  readonly expected: ScheduleTicks
  readonly next: TicksWrite
}

export class ScheduleStore extends Context.Tag("@agent-runs/core/ScheduleStore")<ScheduleStore, {
  /** Creates a schedule. */
  readonly create: (schedule: StoredSchedule) => Effect.Effect<void, StorageError>
  /** Reads a schedule that is not deleted. */
  readonly get: (id: ScheduleId) => Effect.Effect<Option.Option<StoredSchedule>, StorageError>
  /** The schedules among `ids` that are not deleted, in no particular order (one query; the scheduler's batch). */
  readonly getMany: (ids: ReadonlyArray<ScheduleId>) => Effect.Effect<ReadonlyArray<StoredSchedule>, StorageError>
  /** The schedules the viewer may see, sorted by name. */
  readonly list: (viewer: Viewer) => Effect.Effect<ReadonlyArray<StoredSchedule>, StorageError>
  /**
   * Replaces the API's part of a schedule if its `updated_at` is still `expectedUpdatedAt`;
   * deleting is an update to `deleted`. The stored `history` and `last_spawn_error` stay (the
   * scheduler's), and the watermark becomes the later of the stored one and `next`'s.
   */
  readonly update: (next: StoredSchedule, expectedUpdatedAt: number) => Effect.Effect<void, StaleWrite | StorageError>
  /** The timing of every active schedule of every team: what the scheduler reads on every pass. */
  readonly activeTimings: Effect.Effect<ReadonlyArray<ScheduleTiming>, StorageError>
  /**
   * Writes the scheduler's part of a schedule that is not deleted, if that part is still exactly
   * `expected` (watermark, history and spawn error as read); StaleWrite otherwise.
   */
  readonly recordTicks: (
    id: ScheduleId,
    expected: ScheduleTicks,
    next: TicksWrite
  ) => Effect.Effect<void, StaleWrite | StorageError>
  /**
   * `recordTicks` for many schedules (one write each) in one transaction: each write is the same compare-and-set,
   * applied or not on its own. Answers, per write in order, whether it was applied (false where
   * `recordTicks` would be a StaleWrite: the part changed since it was read, or the schedule is
   * deleted). A storage failure writes nothing.
   */
  readonly recordTicksEach: (
    writes: ReadonlyArray<TicksRecord>
  ) => Effect.Effect<ReadonlyArray<boolean>, StorageError>
}>() {}

const sameTime = (a: DateTime.Utc | null, b: DateTime.Utc | null) =>
  a === null || b === null ? a === b : DateTime.toEpochMillis(a) === DateTime.toEpochMillis(b)

/** Whether a write would change nothing of the part as read. */
export const changesNothing = (part: ScheduleTicks, next: TicksWrite): boolean =>
  part.lastTickAt === next.lastTickAt &&
  part.last_spawn_error === next.last_spawn_error &&
  sameTime(part.history.last_ran, next.last_ran) &&
  part.history.recent_runs.length === next.recent_runs.length &&
  part.history.recent_runs.every((r, i) => {
    const n = next.recent_runs[i]!
    return r.run_id === n.run_id && r.state === n.state && sameTime(r.scheduled_for, n.scheduled_for)
  })

/** How many compare-and-sets `recordTicksRetrying` tries before it gives up. */
export const RECORD_TICKS_TRIES = 10

/** Every compare-and-set of `recordTicksRetrying` lost: the scheduler's part of the schedule kept changing. */
export class TicksKeptChanging extends Data.TaggedError("TicksKeptChanging")<{
  readonly id: ScheduleId
  readonly tries: number
}> {
  override get message(): string {
    return `the scheduler's part of schedule ${this.id} changed before each of ${this.tries} writes`
  }
}

/**
 * Writes `change` of the scheduler's part of a schedule as it is now, for the scheduler (a record
 * that lost its race) and run now (a run started by hand, listed): reads the schedule, makes the
 * write from its part and compare-and-sets it (`recordTicks`); when another write came first
 * (another replica, the API, another run now), reads again and applies `change` again,
 * `RECORD_TICKS_TRIES` times in all, then fails with TicksKeptChanging. Nothing is written for a
 * deleted schedule, or when the write would change nothing.
 */
export const recordTicksRetrying = (
  store: Context.Tag.Service<ScheduleStore>,
  id: ScheduleId,
  change: (part: ScheduleTicks) => TicksWrite
): Effect.Effect<void, TicksKeptChanging | StorageError> => {
  const attempt = (tries: number): Effect.Effect<void, TicksKeptChanging | StorageError> =>
    Effect.flatMap(
      store.get(id),
      Option.match({
        onNone: () => Effect.void,
        onSome: (current) => {
          const part = ticksOf(current)
          const next = change(part)
          if (changesNothing(part, next)) return Effect.void
          return store.recordTicks(id, part, next).pipe(
            Effect.catchTag("StaleWrite", () =>
              tries >= RECORD_TICKS_TRIES ? Effect.fail(new TicksKeptChanging({ id, tries })) : attempt(tries + 1))
          )
        }
      })
    )
  return attempt(1)
}
