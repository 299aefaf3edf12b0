/**
 * Fair share across teams (core's FairShare.ts): a team's weight (`teams.share_weight`, 1 by
 * default), the pool's virtual clock (`share_clock`, one row: its lock orders claims by share
 * across replicas) and each team's next virtual start (`team_shares`); runs' `priority`
 * (`config.priority`, 0 when absent) with the index claims read (QUEUED runs by worker host, team,
 * priority, then age).
 *
 * Runs' configurations gained `priority` (optional: absent on runs created before it), so a
 * document stored under the shape with budgets is exactly its run's encoding under the shape with
 * priorities: it is marked so, and lists keep splicing it (core's RunJson.ts).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { WITH_BUDGETS } from "./0018_budgets.js"

export const WITH_PRIORITY = "f7c400e1bdf65ebe"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const real = sql.literal(sql.onDialectOrElse({ pg: () => "DOUBLE PRECISION", orElse: () => "REAL" }))
  yield* sql`ALTER TABLE teams ADD COLUMN share_weight INTEGER NOT NULL DEFAULT 1`
  yield* sql`CREATE TABLE share_clock (pool TEXT PRIMARY KEY, vtime ${real} NOT NULL)`
  yield* sql`INSERT INTO share_clock (pool, vtime) VALUES ('', 0)`
  yield* sql`CREATE TABLE team_shares (team_uid TEXT PRIMARY KEY, next_start ${real} NOT NULL)`
  yield* sql`ALTER TABLE runs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0`
  yield* sql`CREATE INDEX runs_claim ON runs (worker_host, team_uid, priority DESC, created_at, run_id) WHERE state = 'QUEUED'`
  yield* sql`UPDATE runs SET doc_shape = ${WITH_PRIORITY} WHERE doc_shape = ${WITH_BUDGETS}`
})
