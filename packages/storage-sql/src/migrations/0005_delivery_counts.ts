/**
 * Bounded webhook delivery logs (issue 15, finding 9): every delivery is counted per webhook and
 * outcome in `delivery_counts`, so that rejected deliveries need not be kept one by one (only the
 * newest few are), and `deliveries_by_outcome` lets the log be trimmed per outcome without scanning
 * a webhook's whole log. The counts start from what the log holds at the upgrade.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE delivery_counts (
    webhook_uid TEXT NOT NULL,
    outcome TEXT NOT NULL,
    count BIGINT NOT NULL,
    last_received_at BIGINT NOT NULL,
    PRIMARY KEY (webhook_uid, outcome)
  )`
  yield* sql`INSERT INTO delivery_counts (webhook_uid, outcome, count, last_received_at)
    SELECT webhook_uid, outcome, COUNT(*), MAX(received_at) FROM deliveries GROUP BY webhook_uid, outcome`
  yield* sql`CREATE INDEX deliveries_by_outcome ON deliveries (webhook_uid, outcome, received_at, delivery_id)`
})
