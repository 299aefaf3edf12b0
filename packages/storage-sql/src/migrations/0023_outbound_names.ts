/**
 * Outbound webhooks get an optional name, unique in the team when set (definitions as code match
 * endpoints by it; the service checks it, and this index holds against two creates at once), and the
 * name of the team secret their signing secret was copied from (null when the service generated it).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE outbound_webhooks ADD COLUMN name TEXT`
  yield* sql`ALTER TABLE outbound_webhooks ADD COLUMN secret_name TEXT`
  yield* sql`CREATE UNIQUE INDEX outbound_webhooks_team_name ON outbound_webhooks (team_uid, name) WHERE name IS NOT NULL`
})
