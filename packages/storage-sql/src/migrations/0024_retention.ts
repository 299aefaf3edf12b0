/**
 * Retention (core's Retention.ts, RetentionStore.ts): teams keep how long their data is kept
 * (`retention`, JSON; null for no limit); blobs of removed rows wait in `blob_removals` until the
 * sweeper has removed them; the payload blobs of accepted deliveries are recorded in
 * `webhook_payloads` with their team and time of receipt, since the delivery log drops entries
 * before their payloads may go (its own bounds), and are counted at the upgrade from what the log
 * holds and from the runs deliveries started. `outbound_deliveries_run` lets a run's outbound
 * deliveries go with it; `runs_creator` and `runs_executor` find the runs a principal created or
 * executed as, across teams, for its erasure.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE teams ADD COLUMN retention TEXT NULL`
  yield* sql`CREATE TABLE blob_removals (
    blob_key TEXT PRIMARY KEY,
    queued_at BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX blob_removals_queue ON blob_removals (queued_at, blob_key)`
  yield* sql`CREATE TABLE webhook_payloads (
    delivery_id TEXT PRIMARY KEY,
    team_uid TEXT NOT NULL,
    received_at BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX webhook_payloads_team ON webhook_payloads (team_uid, received_at, delivery_id)`
  yield* sql`INSERT INTO webhook_payloads (delivery_id, team_uid, received_at)
    SELECT d.delivery_id, w.team_uid, d.received_at FROM deliveries d JOIN webhooks w ON w.uid = d.webhook_uid
    WHERE d.outcome = 'ACCEPTED'`
  // Payloads whose log entries are gone already: through the runs they started, from the first.
  yield* sql`INSERT INTO webhook_payloads (delivery_id, team_uid, received_at)
    SELECT m.value, r.team_uid, MIN(r.created_at) FROM run_metadata m JOIN runs r ON r.run_id = m.run_id
    WHERE m.key = 'delivery_id' AND r.source = 'WEBHOOK' GROUP BY m.value, r.team_uid
    ON CONFLICT (delivery_id) DO NOTHING`
  yield* sql`CREATE INDEX outbound_deliveries_run ON outbound_deliveries (run_id)`
  yield* sql`CREATE INDEX runs_creator ON runs (creator_uid, run_id)`
  yield* sql`CREATE INDEX runs_executor ON runs (executor_uid, run_id)`
})
