/**
 * A run's executions' conversations in their order (`conversations (run_id, ordinal)`): reads
 * that list them by `ordinal` walk the index instead of sorting the rows, which hold the kept
 * text of each execution (tens of megabytes for a large one): sorted, SQLite copied every such
 * row into a temporary B-tree (spilled to a file past its cache) at every read of the
 * conversation (docs/performance.md, "Reading a large conversation back").
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX conversations_order ON conversations (run_id, ordinal)`
})
