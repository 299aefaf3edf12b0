/**
 * An ended execution's conversation kept rendered as its JSON (ConversationsSql.ts): the text, the
 * number of its log's parts it was rendered from and the shape it was rendered under
 * (`RENDERED_STEPS_SHAPE`). NULL until a read renders it; a rendering that is no longer current
 * is never served.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE conversations ADD COLUMN rendered TEXT NULL`
  yield* sql`ALTER TABLE conversations ADD COLUMN rendered_parts INTEGER NULL`
  yield* sql`ALTER TABLE conversations ADD COLUMN rendered_shape TEXT NULL`
})
