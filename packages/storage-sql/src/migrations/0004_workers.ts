/**
 * Self-hosted workers' presence (Workers, docs/workers.md): one row per (team, worker id) with
 * its latest heartbeat and until when it counts as connected. Labels are TEXT holding a JSON
 * array. Runs find their worker by `runs.worker_host` (0001), which `runs_by_worker` indexes for
 * the count of the runs a worker holds.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const key = sql.literal(sql.onDialectOrElse({ pg: () => `TEXT COLLATE "C"`, orElse: () => "TEXT" }))
  yield* sql`CREATE TABLE workers (
    team_uid ${key} NOT NULL,
    worker_id ${key} NOT NULL,
    display_name TEXT NOT NULL,
    labels TEXT NOT NULL,
    capacity INTEGER NOT NULL,
    connected_at BIGINT NOT NULL,
    last_heartbeat_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (team_uid, worker_id)
  )`
  yield* sql`CREATE INDEX runs_by_worker ON runs (team_uid, worker_host, state) WHERE worker_host IS NOT NULL`
})
