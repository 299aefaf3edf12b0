/**
 * Conversations written incrementally (ConversationLog.ts): each execution's operations in
 * numbered parts, appended as the agent prints, never rewritten. The execution keeps its row in
 * `conversations` (its order among the run's executions; `steps` stays `[]` for new executions,
 * while executions saved whole before this migration keep theirs and read as before).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE conversation_parts (
    run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    execution_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    ops TEXT NOT NULL,
    PRIMARY KEY (run_id, execution_id, seq)
  )`
})
