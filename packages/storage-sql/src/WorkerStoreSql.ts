/**
 * WorkerStore over SqlClient: a row per (team, worker id), upserted by each heartbeat, and the
 * worker id's owner in `worker_bindings` (inserted once, moved only from a given owner). A heartbeat
 * after the row expired starts a new connection (`connected_at` = now). The connected list counts
 * each worker's CLAIMED and INPROGRESS runs in the same query.
 */
import type { PrincipalUid, TeamUid } from "@agent-runs/core/domain/Ids"
import { WorkerStore } from "@agent-runs/core/ports/WorkerStore"
import type { StoredWorker, WorkerHeartbeat } from "@agent-runs/core/ports/WorkerStore"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option, Schema } from "effect"
import { Count, decodeRows, JsonColumn, json, operation } from "./internal/Catalog.js"
import * as Rows from "./Rows.js"

const WorkerRow = Schema.Struct({
  team_uid: Schema.String,
  worker_id: Schema.String,
  display_name: Schema.String,
  labels: JsonColumn.pipe(Schema.compose(Schema.Array(Schema.String))),
  capacity: Count,
  version: Schema.NullOr(Schema.String),
  protocol: Schema.NullOr(Count),
  connected_at: Rows.Millis,
  last_heartbeat_at: Rows.Millis,
  expires_at: Rows.Millis,
  active_runs: Count
})

/** WorkerStore, needing `SqlClient`. */
export const layer = Layer.effect(
  WorkerStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const heartbeat = Effect.fn("WorkerStore.heartbeat")(
      function* (beat: WorkerHeartbeat) {
        yield* sql`INSERT INTO workers ${
          sql.insert({
            team_uid: beat.team_uid,
            worker_id: beat.worker_id,
            display_name: beat.display_name,
            labels: json(beat.labels),
            capacity: beat.capacity,
            version: beat.version,
            protocol: beat.protocol,
            connected_at: beat.now,
            last_heartbeat_at: beat.now,
            expires_at: beat.expires_at
          })
        } ON CONFLICT (team_uid, worker_id) DO UPDATE SET
          display_name = excluded.display_name,
          labels = excluded.labels,
          capacity = excluded.capacity,
          version = excluded.version,
          protocol = excluded.protocol,
          connected_at = CASE WHEN workers.expires_at > ${beat.now} THEN workers.connected_at ELSE excluded.connected_at END,
          last_heartbeat_at = excluded.last_heartbeat_at,
          expires_at = excluded.expires_at`
      },
      operation("WorkerStore.heartbeat")
    )

    const disconnect = Effect.fn("WorkerStore.disconnect")(
      function* (team: TeamUid, workerId: string, now: number) {
        const rows = yield* sql`UPDATE workers SET expires_at = ${now}
          WHERE team_uid = ${team} AND worker_id = ${workerId} AND expires_at > ${now} RETURNING worker_id`
        return rows.length > 0
      },
      operation("WorkerStore.disconnect")
    )

    const lastHeartbeat = Effect.fn("WorkerStore.lastHeartbeat")(
      function* (team: TeamUid, workerId: string) {
        const rows = yield* sql`SELECT last_heartbeat_at FROM workers WHERE team_uid = ${team} AND worker_id = ${workerId}`.pipe(
          Effect.flatMap(decodeRows(Schema.Struct({ last_heartbeat_at: Rows.Millis })))
        )
        return Option.fromNullable(rows[0]?.last_heartbeat_at)
      },
      operation("WorkerStore.lastHeartbeat")
    )

    const connected = Effect.fn("WorkerStore.connected")(
      function* (team: TeamUid, now: number) {
        const rows = yield* sql`SELECT w.team_uid, w.worker_id, w.display_name, w.labels, w.capacity, w.version, w.protocol, w.connected_at,
            w.last_heartbeat_at, w.expires_at,
            (SELECT COUNT(*) FROM runs r WHERE r.team_uid = w.team_uid AND r.worker_host = w.worker_id
              AND r.state IN ('CLAIMED', 'INPROGRESS')) AS active_runs
          FROM workers w WHERE w.team_uid = ${team} AND w.expires_at > ${now}
          ORDER BY w.worker_id`.pipe(Effect.flatMap(decodeRows(WorkerRow)))
        return rows.map((row): StoredWorker => ({ ...row, team_uid: row.team_uid as TeamUid }))
      },
      operation("WorkerStore.connected")
    )

    const bind = Effect.fn("WorkerStore.bind")(
      function* (team: TeamUid, workerId: string, principal: PrincipalUid, now: number, from?: PrincipalUid) {
        const holder = sql<{ principal_uid: string }>`SELECT principal_uid FROM worker_bindings
          WHERE team_uid = ${team} AND worker_id = ${workerId}`
        // Every worker call binds: a read alone once the id is bound.
        if (from === undefined) {
          const bound = yield* holder
          if (bound.length > 0) return bound[0]!.principal_uid as PrincipalUid
        } else {
          yield* sql`UPDATE worker_bindings SET principal_uid = ${principal}, bound_at = ${now}
            WHERE team_uid = ${team} AND worker_id = ${workerId} AND principal_uid = ${from}`
        }
        yield* sql`INSERT INTO worker_bindings ${
          sql.insert({ team_uid: team, worker_id: workerId, principal_uid: principal, bound_at: now })
        } ON CONFLICT (team_uid, worker_id) DO NOTHING`
        const rows = yield* holder
        return rows[0]!.principal_uid as PrincipalUid
      },
      operation("WorkerStore.bind")
    )

    const release = Effect.fn("WorkerStore.release")(
      function* (team: TeamUid, workerId: string) {
        const rows = yield* sql`DELETE FROM worker_bindings WHERE team_uid = ${team} AND worker_id = ${workerId} RETURNING worker_id`
        return rows.length > 0
      },
      operation("WorkerStore.release")
    )

    return WorkerStore.of({ heartbeat, disconnect, connected, bind, lastHeartbeat, release })
  })
)
