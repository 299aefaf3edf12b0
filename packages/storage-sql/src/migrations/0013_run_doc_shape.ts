/**
 * The shape of a run's stored document (core's RunJson.ts): the fingerprint of the `RunItem`
 * encoding it was written under; a list splices the documents of the current shape into its
 * response and decodes any other. Null for runs written before: they are decoded until written again.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE runs ADD COLUMN doc_shape TEXT NULL`
})
