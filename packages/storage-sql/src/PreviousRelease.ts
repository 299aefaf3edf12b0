/**
 * What replicas of the previous release (0.1) write without the bookkeeping this release keeps,
 * caught up at each start (Migrations.migrate), since they keep writing during a rolling deploy
 * and after a rollback: the payloads of the webhook deliveries they accepted, tracked for
 * retention in `webhook_payloads` (migration 0024's backfill, again; a no-op once caught up). The
 * release after next drops this.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export const catchUp = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql`INSERT INTO webhook_payloads (delivery_id, team_uid, received_at)
    SELECT d.delivery_id, w.team_uid, d.received_at FROM deliveries d JOIN webhooks w ON w.uid = d.webhook_uid
    WHERE d.outcome = 'ACCEPTED' AND NOT EXISTS (SELECT 1 FROM webhook_payloads p WHERE p.delivery_id = d.delivery_id)
    ON CONFLICT (delivery_id) DO NOTHING`.pipe(Effect.asVoid))
