/**
 * Runs found by their conversation id (`GET /agent/conversations/{id}`): the id as a column with
 * an index. Runs written before this migration keep NULL there (no deployment predates it).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE runs ADD COLUMN conversation_id TEXT NULL`
  yield* sql`CREATE INDEX runs_conversation ON runs (conversation_id)`
})
