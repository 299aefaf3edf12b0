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
import type { DateTime, Effect, Option } from "effect"
import { Context } from "effect"
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
