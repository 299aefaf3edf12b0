/**
 * Budgets (core's Budget.ts): teams keep their default budgets and ceilings (`budgets`, JSON; null
 * for none), and runs' configurations gained `max_cost_usd` and `max_turns` (optional: absent on
 * runs created before them). A document stored under an earlier shape that differs only by optional
 * fields since (`8fbe392894560442` before traces, `27b3a18994f17e18` with them) is therefore exactly
 * the encoding of its run under the shape with budgets: it is marked so, and lists keep splicing it
 * (core's RunJson.ts) instead of decoding and encoding every older run.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { BEFORE_TRACES, WITH_TRACES } from "./0017_trace_doc_shape.js"

export const WITH_BUDGETS = "7e39992cf19b3a5c"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE teams ADD COLUMN budgets TEXT NULL`
  yield* sql`UPDATE runs SET doc_shape = ${WITH_BUDGETS} WHERE doc_shape IN (${BEFORE_TRACES}, ${WITH_TRACES})`
})
