/**
 * The shape of an artifact's stored document: the `RUN_DOC_SHAPE` it was written under (an
 * artifact's encoding is part of `RunItem`'s). A run is spliced from its stored JSON only when its
 * document and every artifact of it have the current shape; null for artifacts written before,
 * whose runs are decoded (core's RunJson.ts).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE run_artifacts ADD COLUMN doc_shape TEXT NULL`
})
