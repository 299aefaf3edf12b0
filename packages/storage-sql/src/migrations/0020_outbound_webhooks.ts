/**
 * Outbound webhooks (OutboundWebhookStoreSql.ts): the endpoints (`outbound_webhooks`, secrets sealed
 * under the server key), the outbox of run changes (`outbound_changes`) and the deliveries made
 * from it (`outbound_deliveries`).
 *
 * The outbox is written by triggers on `runs`, so every write of a run — the run store's, the
 * claim function's, any later one — records its change in its own transaction: a row inserted, or
 * its `state` changed, records one change when the run's team has an enabled endpoint (an index
 * probe otherwise, and nothing written). `occurred_at` is the run's `updated_at` as written.
 *
 * The dispatcher reads changes oldest first and claims due pending deliveries by `next_attempt_at`
 * (partial index); the order checks read pending deliveries by (endpoint, run) and changes by run.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

const PG_OUTBOX_FUNCTION = `CREATE FUNCTION agent_runs_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  previous TEXT;
BEGIN
  IF TG_OP = 'UPDATE' THEN
    previous := OLD.state;
  END IF;
  IF EXISTS (SELECT 1 FROM outbound_webhooks w WHERE w.team_uid = NEW.team_uid AND w.enabled) THEN
    INSERT INTO outbound_changes (run_id, team_uid, previous_state, state, occurred_at)
    VALUES (NEW.run_id, NEW.team_uid, previous, NEW.state, NEW.updated_at);
  END IF;
  RETURN NULL;
END
$$`

const SQLITE_CHANGE = (previous: string) =>
  `INSERT INTO outbound_changes (run_id, team_uid, previous_state, state, occurred_at)
    VALUES (NEW.run_id, NEW.team_uid, ${previous}, NEW.state, NEW.updated_at);`

const SQLITE_HAS_ENDPOINT = "EXISTS (SELECT 1 FROM outbound_webhooks w WHERE w.team_uid = NEW.team_uid AND w.enabled)"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const pg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
  const bytes = sql.literal(pg ? "BYTEA" : "BLOB")
  const bool = sql.literal(pg ? "BOOLEAN" : "INTEGER")
  const serial = sql.literal(pg ? "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY" : "INTEGER PRIMARY KEY AUTOINCREMENT")
  yield* sql`CREATE TABLE outbound_webhooks (
    uid TEXT PRIMARY KEY,
    team_uid TEXT NOT NULL,
    creator_uid TEXT NOT NULL,
    url TEXT NOT NULL,
    description TEXT NOT NULL,
    events TEXT NOT NULL,
    filters TEXT NOT NULL,
    enabled ${bool} NOT NULL,
    disabled_reason TEXT NULL,
    disabled_at BIGINT NULL,
    secret ${bytes} NOT NULL,
    previous_secret ${bytes} NULL,
    previous_secret_until BIGINT NULL,
    last_success_at BIGINT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX outbound_webhooks_team ON outbound_webhooks (team_uid, created_at)`
  yield* sql`CREATE TABLE outbound_changes (
    change_id ${serial},
    run_id TEXT NOT NULL,
    team_uid TEXT NOT NULL,
    previous_state TEXT NULL,
    state TEXT NOT NULL,
    occurred_at BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX outbound_changes_run ON outbound_changes (run_id, change_id)`
  yield* sql`CREATE TABLE outbound_deliveries (
    seq ${serial},
    delivery_id TEXT NOT NULL UNIQUE,
    webhook_uid TEXT NOT NULL,
    team_uid TEXT NOT NULL,
    change_id BIGINT NOT NULL,
    run_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    body TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    created_at BIGINT NOT NULL,
    retry_from BIGINT NOT NULL,
    next_attempt_at BIGINT NULL,
    lease_until BIGINT NULL,
    last_attempt_at BIGINT NULL,
    last_status INTEGER NULL,
    last_error TEXT NULL,
    last_latency_ms INTEGER NULL,
    last_response_excerpt TEXT NULL,
    delivered_at BIGINT NULL
  )`
  yield* sql`CREATE INDEX outbound_deliveries_due ON outbound_deliveries (next_attempt_at) WHERE state = 'pending'`
  yield* sql`CREATE INDEX outbound_deliveries_order ON outbound_deliveries (webhook_uid, run_id, change_id, seq)
    WHERE state = 'pending'`
  yield* sql`CREATE INDEX outbound_deliveries_log ON outbound_deliveries (webhook_uid, seq)`
  if (pg) {
    yield* sql.unsafe(PG_OUTBOX_FUNCTION)
    yield* sql`CREATE TRIGGER runs_outbox_insert AFTER INSERT ON runs FOR EACH ROW EXECUTE FUNCTION agent_runs_outbox()`
    yield* sql`CREATE TRIGGER runs_outbox_update AFTER UPDATE OF state ON runs FOR EACH ROW
      WHEN (OLD.state IS DISTINCT FROM NEW.state) EXECUTE FUNCTION agent_runs_outbox()`
  } else {
    yield* sql.unsafe(`CREATE TRIGGER runs_outbox_insert AFTER INSERT ON runs WHEN ${SQLITE_HAS_ENDPOINT}
      BEGIN ${SQLITE_CHANGE("NULL")} END`)
    yield* sql.unsafe(`CREATE TRIGGER runs_outbox_update AFTER UPDATE OF state ON runs
      WHEN OLD.state <> NEW.state AND ${SQLITE_HAS_ENDPOINT}
      BEGIN ${SQLITE_CHANGE("OLD.state")} END`)
  }
})
