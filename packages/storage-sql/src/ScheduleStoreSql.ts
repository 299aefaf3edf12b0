/**
 * ScheduleStore over SqlClient: one row per schedule, with columns for what queries need (team,
 * owner, scope, name, status, tick watermark) and the nested parts (agent configuration,
 * environment, principal references, history) as the JSON the core Schemas encode. A deleted
 * schedule keeps its row (status `deleted`) and is invisible to `get`, `list` and `active`.
 * `update` is a compare-and-set on `updated_at`, and never revives a deleted schedule; it leaves
 * the scheduler's columns (`history`, `last_spawn_error`) alone and keeps the later watermark.
 * `recordTicks` writes only those, compare-and-set on the three of them as read (the history
 * compared as the JSON text this module writes for it). `recordTicksEach` is the same
 * compare-and-set for many schedules in one statement (`UPDATE ... FROM (VALUES ...)`, a few
 * hundred rows per statement) inside one transaction, answering which rows it changed.
 */
import type { Viewer } from "@agent-runs/core/domain/Access"
import { PrincipalUid, TeamUid } from "@agent-runs/core/domain/Ids"
import type { ScheduleId } from "@agent-runs/core/domain/Ids"
import { ScheduleStore } from "@agent-runs/core/ports/ScheduleStore"
import type { ScheduleTicks, StoredSchedule, TicksRecord, TicksWrite } from "@agent-runs/core/ports/ScheduleStore"
import { StaleWrite } from "@agent-runs/core/ports/Storage"
import { ScheduledAgentItem, ScheduleHistory } from "@agent-runs/core/domain/Schedule"
import * as TrustedCodec from "@agent-runs/core/domain/TrustedCodec"
import { ScheduleStatus } from "@agent-runs/core/domain/ScheduleStateMachine"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option, Schema } from "effect"
import { bool, decodeRows, iso, json, JsonColumn, millis, operation, traced, visibleTo } from "./internal/Catalog.js"
import * as Rows from "./Rows.js"
import { Role } from "@agent-runs/core/domain/Identity"

const ScheduleRow = Schema.Struct({
  id: Schema.String,
  team_uid: TeamUid,
  creator_uid: PrincipalUid,
  scope_type: Schema.String,
  scope_uid: Schema.String,
  name: Schema.String,
  cron_schedule: Schema.String,
  timezone: Schema.String,
  enabled: Rows.Bool,
  prompt: Schema.String,
  agent_config: JsonColumn,
  environment: Schema.NullOr(JsonColumn),
  created_at: Rows.Millis,
  updated_at: Rows.Millis,
  created_by: JsonColumn,
  updated_by: JsonColumn,
  history: JsonColumn,
  last_spawn_error: Schema.NullOr(Schema.String),
  status: ScheduleStatus,
  last_tick_at: Rows.Millis,
  editor_role: Role
})

/** A stored item: written by this service through the same Schema, so decoded without checking it again (TrustedCodec). */
const decodeItem = TrustedCodec.decoder(ScheduledAgentItem)

/** The stored schedule of a row, its item decoded with the core Schema. */
const fromRow = (row: typeof ScheduleRow.Type) =>
  Effect.map(
    decodeItem({
      id: row.id,
      name: row.name,
      cron_schedule: row.cron_schedule,
      timezone: row.timezone,
      enabled: row.enabled,
      prompt: row.prompt,
      agent_config: row.agent_config,
      environment: row.environment,
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at),
      created_by: row.created_by,
      updated_by: row.updated_by,
      scope: { type: row.scope_type, uid: row.scope_uid },
      history: row.history,
      last_spawn_error: row.last_spawn_error
    }),
    (item): StoredSchedule => ({
      item,
      team_uid: row.team_uid,
      creator_uid: row.creator_uid,
      editor_role: row.editor_role,
      state: { status: row.status, lastTickAt: row.last_tick_at }
    })
  )

const decodeSchedules = (rows: ReadonlyArray<unknown>) =>
  Effect.flatMap(decodeRows(ScheduleRow)(rows), Effect.forEach(fromRow))

const TimingRow = Schema.Struct({
  id: Schema.String,
  cron_schedule: Schema.String,
  timezone: Schema.String,
  updated_at: Rows.Millis,
  last_tick_at: Rows.Millis
})

/** The stored text of a history (the same encoding as a whole item's). */
const historyText = (history: ScheduleHistory) => Effect.map(Schema.encode(ScheduleHistory)(history), json)

/** Schedules read, or compare-and-sets written, per statement (far below either database's limit of parameters). */
const CHUNK = 500

/** ScheduleStore, needing `SqlClient`. */
export const layer = Layer.effect(
  ScheduleStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** Every column but the id, from the core Schema's encoding of the item. */
    const columns = (s: StoredSchedule) =>
      Effect.map(Schema.encode(ScheduledAgentItem)(s.item), (item) => ({
        team_uid: s.team_uid,
        creator_uid: s.creator_uid,
        scope_type: item.scope.type,
        scope_uid: item.scope.uid,
        name: item.name,
        cron_schedule: item.cron_schedule,
        timezone: item.timezone,
        enabled: bool(sql, item.enabled),
        prompt: item.prompt,
        agent_config: json(item.agent_config),
        environment: item.environment === null ? null : json(item.environment),
        created_at: millis(s.item.created_at),
        updated_at: millis(s.item.updated_at),
        created_by: json(item.created_by),
        updated_by: json(item.updated_by),
        history: json(item.history),
        last_spawn_error: item.last_spawn_error,
        status: s.state.status,
        last_tick_at: s.state.lastTickAt,
        editor_role: s.editor_role
      }))

    const create = Effect.fn("ScheduleStore.create")(
      function* (schedule: StoredSchedule) {
        const row = yield* columns(schedule)
        yield* sql`INSERT INTO schedules ${sql.insert({ id: schedule.item.id, ...row })}`
      },
      operation("ScheduleStore.create")
    )

    const get = Effect.fn("ScheduleStore.get")(
      function* (id: ScheduleId) {
        const rows = yield* sql`SELECT * FROM schedules WHERE id = ${id} AND status <> 'deleted'`.pipe(
          Effect.flatMap(decodeSchedules)
        )
        return Option.fromNullable(rows[0])
      },
      operation("ScheduleStore.get")
    )

    const getMany = Effect.fn("ScheduleStore.getMany")(
      function* (ids: ReadonlyArray<ScheduleId>) {
        const unique = [...new Set(ids)]
        const found: Array<StoredSchedule> = []
        for (let i = 0; i < unique.length; i += CHUNK) {
          found.push(
            ...(yield* sql`SELECT * FROM schedules WHERE id IN ${sql.in(unique.slice(i, i + CHUNK))} AND status <> 'deleted'`.pipe(
              Effect.flatMap(decodeSchedules)
            ))
          )
        }
        return found
      },
      operation("ScheduleStore.getMany")
    )

    const list = Effect.fn("ScheduleStore.list")(
      function* (viewer: Viewer) {
        return yield* sql`SELECT * FROM schedules s WHERE ${visibleTo(sql, viewer, "s")} AND s.status <> 'deleted'
          ORDER BY s.name, s.id`.pipe(Effect.flatMap(decodeSchedules))
      },
      operation("ScheduleStore.list")
    )

    /** The later of the stored watermark and `at`. */
    const laterTick = (at: number) =>
      sql.onDialectOrElse({
        pg: () => sql`GREATEST(last_tick_at, ${at})`,
        orElse: () => sql`MAX(last_tick_at, ${at})`
      })

    const update = Effect.fn("ScheduleStore.update")(
      function* (next: StoredSchedule, expectedUpdatedAt: number) {
        const { history: _history, last_spawn_error: _error, last_tick_at, ...row } = yield* columns(next)
        const updated = yield* sql`UPDATE schedules SET ${sql.update(row)}, last_tick_at = ${laterTick(last_tick_at)}
          WHERE id = ${next.item.id} AND updated_at = ${expectedUpdatedAt} AND status <> 'deleted'
          RETURNING id`
        if (updated.length === 0) return yield* new StaleWrite({ what: `schedule ${next.item.id}` })
      },
      operation("ScheduleStore.update")
    )

    const activeTimings = sql`SELECT id, cron_schedule, timezone, updated_at, last_tick_at FROM schedules
      WHERE status = 'active'`.pipe(
      Effect.flatMap(decodeRows(TimingRow)),
      Effect.map((rows) => rows.map((row) => ({ ...row, id: row.id as ScheduleId }))),
      traced("ScheduleStore.activeTimings")
    )

    const recordTicks = Effect.fn("ScheduleStore.recordTicks")(
      function* (id: ScheduleId, expected: ScheduleTicks, next: TicksWrite) {
        const was = yield* historyText(expected.history)
        const history = yield* historyText({ last_ran: next.last_ran, next_run: null, recent_runs: next.recent_runs })
        const error = expected.last_spawn_error === null
          ? sql`last_spawn_error IS NULL`
          : sql`last_spawn_error = ${expected.last_spawn_error}`
        const updated = yield* sql`UPDATE schedules
          SET last_tick_at = ${next.lastTickAt}, history = ${history}, last_spawn_error = ${next.last_spawn_error}
          WHERE id = ${id} AND status <> 'deleted' AND last_tick_at = ${expected.lastTickAt} AND history = ${was}
            AND ${error}
          RETURNING id`
        if (updated.length === 0) return yield* new StaleWrite({ what: `schedule ${id}` })
      },
      operation("ScheduleStore.recordTicks")
    )

    /** Null-safe equality (a NULL spawn error equals NULL). */
    const same = sql.onDialectOrElse({ pg: () => sql.literal("IS NOT DISTINCT FROM"), orElse: () => sql.literal("IS") })

    const recordTicksEach = Effect.fn("ScheduleStore.recordTicksEach")(
      function* (writes: ReadonlyArray<TicksRecord>) {
        const rows: Array<ReadonlyArray<string | number | null>> = []
        for (const { expected, id, next } of writes) {
          rows.push([
            id,
            expected.lastTickAt,
            yield* historyText(expected.history),
            expected.last_spawn_error,
            next.lastTickAt,
            yield* historyText({ last_ran: next.last_ran, next_run: null, recent_runs: next.recent_runs }),
            next.last_spawn_error
          ])
        }
        const applied = new Set<string>()
        yield* sql.withTransaction(
          Effect.forEach(
            Array.from({ length: Math.ceil(rows.length / CHUNK) }, (_, i) => rows.slice(i * CHUNK, (i + 1) * CHUNK)),
            (chunk) =>
              Effect.gen(function* () {
                // Typed by the first row's casts (PostgreSQL types the columns of VALUES from it).
                // `id IN (SELECT sid ...)` makes SQLite look the rows up by key rather than scan
                // the table for each batch.
                const values = sql.join(",\n", false)(chunk.map((row, i) =>
                  i === 0
                    ? sql`(CAST(${row[0]} AS TEXT), CAST(${row[1]} AS BIGINT), CAST(${row[2]} AS TEXT), CAST(${row[3]} AS TEXT),
                        CAST(${row[4]} AS BIGINT), CAST(${row[5]} AS TEXT), CAST(${row[6]} AS TEXT))`
                    : sql`(${row[0]}, ${row[1]}, ${row[2]}, ${row[3]}, ${row[4]}, ${row[5]}, ${row[6]})`
                ))
                const updated = yield* sql<{ id: string }>`WITH v(sid, was_tick, was_history, was_error, tick, history, error)
                  AS (VALUES ${values})
                  UPDATE schedules SET last_tick_at = v.tick, history = v.history, last_spawn_error = v.error
                  FROM v
                  WHERE schedules.id IN (SELECT sid FROM v) AND schedules.id = v.sid AND schedules.status <> 'deleted' AND schedules.last_tick_at = v.was_tick
                    AND schedules.history = v.was_history AND schedules.last_spawn_error ${same} v.was_error
                  RETURNING id`
                for (const row of updated) applied.add(row.id)
              }),
            { discard: true }
          )
        )
        return writes.map((w) => applied.has(w.id))
      },
      operation("ScheduleStore.recordTicksEach")
    )

    return ScheduleStore.of({ create, get, getMany, list, update, activeTimings, recordTicks, recordTicksEach })
  })
)
