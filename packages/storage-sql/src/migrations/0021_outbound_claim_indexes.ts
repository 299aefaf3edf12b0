/**
 * Outbound webhooks' claims keep each endpoint and each team within their tries in flight
 * (OutboundDeliveriesSql.ts): they count the leased deliveries of an endpoint and of a team. A
 * delivery is leased only while a try of it runs (a try's end clears the lease), so these partial
 * indexes hold the deliveries in flight and little else.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX outbound_deliveries_leased_endpoint ON outbound_deliveries (webhook_uid, lease_until)
    WHERE lease_until IS NOT NULL`
  yield* sql`CREATE INDEX outbound_deliveries_leased_team ON outbound_deliveries (team_uid, lease_until)
    WHERE lease_until IS NOT NULL`
})
