/**
 * A connected worker's release and the worker protocol agreed with it, from its latest heartbeat
 * (null for a heartbeat a server of release 0.1 recorded), so that operators see which workers an
 * upgrade still has to reach.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE workers ADD COLUMN version TEXT`
  yield* sql`ALTER TABLE workers ADD COLUMN protocol INTEGER`
})
