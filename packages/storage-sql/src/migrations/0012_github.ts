/**
 * A team's GitHub connection (docs/github.md): the host and the names of the secrets holding its
 * credential, as JSON; null while the team has none.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE teams ADD COLUMN github TEXT NULL`
})
