/**
 * ScheduleStore in memory, with the semantics of `ScheduleStoreSql.ts`: a deleted schedule stays
 * (status `deleted`), invisible to `get`, `list` and `activeTimings`, and is never revived.
 * `update` is a compare-and-set on `updated_at` that keeps the scheduler's part (`history`,
 * `last_spawn_error`) and the later watermark; `recordTicks` is a compare-and-set on the
 * scheduler's part as read (the history compared in its wire encoding).
 */
import type { Context } from "effect"
import { DateTime, Effect, Option, Schema } from "effect"
import { canSee, type Viewer } from "../../src/domain/Access.js"
import type { ScheduleId } from "../../src/domain/Ids.js"
import { compareCodePoints } from "../../src/domain/RunQuery.js"
import { ScheduledAgentItem, ScheduleHistory } from "../../src/domain/Schedule.js"
import {
  ScheduleStore,
  type ScheduleTicks,
  type ScheduleTiming,
  type StoredSchedule,
  type TicksRecord,
  type TicksWrite
} from "../../src/ports/ScheduleStore.js"
import { StaleWrite, type StorageError } from "../../src/ports/Storage.js"
import { type MemoryState, storageError } from "./MemoryState.js"

/** The history as compared: its wire encoding. */
const historyText = (history: ScheduleHistory): string => JSON.stringify(Schema.encodeSync(ScheduleHistory)(history))

const copy = (s: StoredSchedule): StoredSchedule => ({
  item: s.item,
  team_uid: s.team_uid,
  creator_uid: s.creator_uid,
  editor_role: s.editor_role,
  state: { status: s.state.status, lastTickAt: s.state.lastTickAt }
})

/** ScheduleStore over the shared state. */
export const makeMemoryScheduleStore = (state: MemoryState): Context.Tag.Service<ScheduleStore> => {
  /** A schedule that is not deleted. */
  const live = (id: ScheduleId): StoredSchedule | undefined => {
    const found = state.schedules.get(id)
    return found === undefined || found.state.status === "deleted" ? undefined : found
  }

  const create = (schedule: StoredSchedule) =>
    Effect.suspend((): Effect.Effect<void, StorageError> => {
      if (state.schedules.has(schedule.item.id)) {
        return Effect.fail(storageError("ScheduleStore.create", `schedule ${schedule.item.id} exists already`))
      }
      state.schedules.set(schedule.item.id, copy(schedule))
      return Effect.void
    })

  const get = (id: ScheduleId) => Effect.sync(() => Option.fromNullable(live(id)))

  const getMany = (ids: ReadonlyArray<ScheduleId>) =>
    Effect.sync(() => [...new Set(ids)].flatMap((id) => live(id) ?? []))

  const list = (viewer: Viewer) =>
    Effect.sync(() =>
      [...state.schedules.values()]
        .filter((s) =>
          s.state.status !== "deleted" && canSee(viewer, { team_uid: s.team_uid, creator_uid: s.creator_uid, scope: s.item.scope })
        )
        .sort((a, b) => compareCodePoints(a.item.name, b.item.name) || compareCodePoints(a.item.id, b.item.id))
    )

  const update = (next: StoredSchedule, expectedUpdatedAt: number) =>
    Effect.suspend((): Effect.Effect<void, StaleWrite> => {
      const stored = live(next.item.id)
      if (stored === undefined || DateTime.toEpochMillis(stored.item.updated_at) !== expectedUpdatedAt) {
        return Effect.fail(new StaleWrite({ what: `schedule ${next.item.id}` }))
      }
      state.schedules.set(next.item.id, {
        item: new ScheduledAgentItem({
          ...next.item,
          history: stored.item.history,
          last_spawn_error: stored.item.last_spawn_error
        }),
        team_uid: next.team_uid,
        creator_uid: next.creator_uid,
        editor_role: next.editor_role,
        state: { status: next.state.status, lastTickAt: Math.max(stored.state.lastTickAt, next.state.lastTickAt) }
      })
      return Effect.void
    })

  const activeTimings = Effect.sync((): ReadonlyArray<ScheduleTiming> =>
    [...state.schedules.values()]
      .filter((s) => s.state.status === "active")
      .map((s) => ({
        id: s.item.id,
        cron_schedule: s.item.cron_schedule,
        timezone: s.item.timezone,
        updated_at: DateTime.toEpochMillis(s.item.updated_at),
        last_tick_at: s.state.lastTickAt
      }))
  )

  /** Applies one compare-and-set; false when the part changed or the schedule is deleted. */
  const apply = (id: ScheduleId, expected: ScheduleTicks, next: TicksWrite): boolean => {
    const stored = live(id)
    if (
      stored === undefined ||
      stored.state.lastTickAt !== expected.lastTickAt ||
      stored.item.last_spawn_error !== expected.last_spawn_error ||
      historyText(stored.item.history) !== historyText(expected.history)
    ) {
      return false
    }
    state.schedules.set(id, {
      ...stored,
      item: new ScheduledAgentItem({
        ...stored.item,
        history: { last_ran: next.last_ran, next_run: null, recent_runs: next.recent_runs },
        last_spawn_error: next.last_spawn_error
      }),
      state: { status: stored.state.status, lastTickAt: next.lastTickAt }
    })
    return true
  }

  const recordTicks = (id: ScheduleId, expected: ScheduleTicks, next: TicksWrite) =>
    Effect.suspend((): Effect.Effect<void, StaleWrite> =>
      apply(id, expected, next) ? Effect.void : Effect.fail(new StaleWrite({ what: `schedule ${id}` }))
    )

  const recordTicksEach = (writes: ReadonlyArray<TicksRecord>) =>
    Effect.sync(() => writes.map((w) => apply(w.id, w.expected, w.next)))

  return ScheduleStore.of({ create, get, getMany, list, update, activeTimings, recordTicks, recordTicksEach })
}
