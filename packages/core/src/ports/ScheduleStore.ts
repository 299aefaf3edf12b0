/**
 * Port: scheduled agents and their tick ledger (the ledger's keys are written by RunStore.create
 * with a ScheduleTick key, in the transaction that creates the tick's run).
 */
import type { Effect, Option } from "effect"
import { Context } from "effect"
import type { Viewer } from "../Access.js"
import type { PrincipalUid, ScheduleId, TeamUid } from "../Ids.js"
import type { ScheduledAgentItem } from "../Schedule.js"
import type { ScheduleState } from "../ScheduleStateMachine.js"
import type { StaleWrite, StorageError } from "./Storage.js"

/** A schedule as stored: its wire item (history is computed on read), owner and machine state. */
export interface StoredSchedule {
  readonly item: ScheduledAgentItem
  readonly team_uid: TeamUid
  readonly creator_uid: PrincipalUid
  readonly state: ScheduleState
}

export class ScheduleStore extends Context.Tag("@agent-runs/core/ScheduleStore")<ScheduleStore, {
  /** Creates a schedule. */
  readonly create: (schedule: StoredSchedule) => Effect.Effect<void, StorageError>
  /** Reads a schedule that is not deleted. */
  readonly get: (id: ScheduleId) => Effect.Effect<Option.Option<StoredSchedule>, StorageError>
  /** The schedules the viewer may see, sorted by name. */
  readonly list: (viewer: Viewer) => Effect.Effect<ReadonlyArray<StoredSchedule>, StorageError>
  /** Replaces a schedule if its `updated_at` is still `expectedUpdatedAt`; deleting is an update to `deleted`. */
  readonly update: (next: StoredSchedule, expectedUpdatedAt: number) => Effect.Effect<void, StaleWrite | StorageError>
  /** Every active schedule of every team, for the scheduler. */
  readonly active: Effect.Effect<ReadonlyArray<StoredSchedule>, StorageError>
}>() {}
