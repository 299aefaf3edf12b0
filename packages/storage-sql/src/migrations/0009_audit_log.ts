/**
 * The audit log (docs/audit.md): one row per entry, append-only; the columns the list filters on,
 * and `doc`, the entry's JSON as the core Schema encodes it. Pages are newest first by id (UUIDv7,
 * time-ordered): the team's through `(team_uid, id)`, all of them through the primary key; the
 * retention sweep reads `(at)`.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const key = sql.literal(sql.onDialectOrElse({ pg: () => `TEXT COLLATE "C"`, orElse: () => "TEXT" }))
  yield* sql`CREATE TABLE audit_log (
    id ${key} PRIMARY KEY,
    at BIGINT NOT NULL,
    team_uid ${key} NULL,
    principal_uid TEXT NULL,
    action TEXT NOT NULL,
    resource_type TEXT NOT NULL,
    resource_id TEXT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN ('succeeded', 'denied', 'failed')),
    doc TEXT NOT NULL
  )`
  yield* sql`CREATE INDEX audit_log_by_team ON audit_log (team_uid, id)`
  yield* sql`CREATE INDEX audit_log_by_time ON audit_log (at)`
})
