/**
 * The outbound webhooks' delivery health (`GET /agent/team/outbound-webhook-health`) counts a team's
 * deliveries created since a time: it reads them by (team, creation time).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX outbound_deliveries_team_created ON outbound_deliveries (team_uid, created_at)`
})
