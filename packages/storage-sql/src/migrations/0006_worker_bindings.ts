/**
 * Which principal a self-hosted worker id belongs to (Workers, docs/workers.md): the service
 * account whose first heartbeat used the id in the team. Kept when the worker disconnects, so no
 * other principal can take the id (and the runs queued for it) while the owner is away.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const key = sql.literal(sql.onDialectOrElse({ pg: () => `TEXT COLLATE "C"`, orElse: () => "TEXT" }))
  yield* sql`CREATE TABLE worker_bindings (
    team_uid ${key} NOT NULL,
    worker_id ${key} NOT NULL,
    principal_uid TEXT NOT NULL,
    bound_at BIGINT NOT NULL,
    PRIMARY KEY (team_uid, worker_id)
  )`
})
