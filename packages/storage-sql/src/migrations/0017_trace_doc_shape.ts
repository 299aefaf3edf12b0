/**
 * Runs gained `trace_id` and `trace_span_id` (optional: absent on runs created before them). A
 * document stored under the shape before them (`8fbe392894560442`) is therefore exactly the
 * encoding of its run under the shape with them (`27b3a18994f17e18`): it is marked so, and lists
 * keep splicing it instead of decoding and encoding every older run (core's RunJson.ts). Both
 * values are written out: a later change of `RunItem` gets a migration of its own, or none.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export const BEFORE_TRACES = "8fbe392894560442"
export const WITH_TRACES = "27b3a18994f17e18"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`UPDATE runs SET doc_shape = ${WITH_TRACES} WHERE doc_shape = ${BEFORE_TRACES}`
})
