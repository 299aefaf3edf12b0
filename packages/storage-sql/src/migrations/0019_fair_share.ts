/**
 * Fair share across teams (core's FairShare.ts): a team's weight (`teams.share_weight`, 1 by
 * default), the pool's virtual clock (`share_clock`, one row: its lock orders claims by share
 * across replicas) and each team's next virtual start (`team_shares`); runs' `priority`
 * (`config.priority`, 0 when absent) with the index claims read (QUEUED runs by worker host, team,
 * priority, then age).
 *
 * On PostgreSQL, `agent_runs_fair_claim(now, execution_id, lease_expires_at)` is the service's own
 * executors' claim (RunClaimSql.ts) in one call. With one team's runs waiting (two index probes
 * tell: the smallest team id, and whether a larger one waits) it claims that team's first run by
 * priority and age. With two or more it locks the clock's row; then, in a statement whose snapshot
 * is taken once the lock is held (the function is VOLATILE; this needs READ COMMITTED,
 * PostgreSQL's default), it ranks the teams as FairShare.ts does (ties by team id in code-point
 * order, `COLLATE "C"`), claims the first run no other writer has locked by the teams' rank, then
 * priority and age (`FOR UPDATE SKIP LOCKED`: a run locked by a cancel does not make the claim
 * come back empty), writes its `run_claimed` event, and charges the team claimed from (its next
 * start, the clock: a missing clock row is written again). It returns the claimed run's row. One
 * round trip; with one team waiting, no lock and no write beyond the claim's.
 *
 * The ranges of `share_weight` (1 to 100) and `priority` (-10 to 10) are also CHECK constraints: a
 * weight of 0 written around the API would otherwise stop every claim by share.
 *
 * Runs' configurations gained `priority` (optional: absent on runs created before it), so a
 * document stored under the shape with budgets is exactly its run's encoding under the shape with
 * priorities: it is marked so, and lists keep splicing it (core's RunJson.ts).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { WITH_BUDGETS } from "./0018_budgets.js"

export const WITH_PRIORITY = "f7c400e1bdf65ebe"

const FAIR_CLAIM_FUNCTION = `CREATE FUNCTION agent_runs_fair_claim(p_now BIGINT, p_execution_id TEXT, p_expires_at BIGINT)
RETURNS SETOF runs LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  first_team TEXT;
  contended BOOLEAN;
BEGIN
  SELECT MIN(team_uid) INTO first_team FROM runs WHERE state = 'QUEUED' AND worker_host IS NULL;
  IF first_team IS NULL THEN
    RETURN;
  END IF;
  contended := EXISTS (SELECT 1 FROM runs WHERE state = 'QUEUED' AND worker_host IS NULL AND team_uid > first_team);
  IF NOT contended THEN
    RETURN QUERY
    WITH u AS (
      UPDATE runs SET state = 'CLAIMED', updated_at = p_now, lease_execution_id = p_execution_id,
        lease_expires_at = p_expires_at, last_sequence = runs.last_sequence + 1
      WHERE runs.run_id = (
        SELECT r.run_id FROM runs r WHERE r.state = 'QUEUED' AND r.worker_host IS NULL AND r.team_uid = first_team
        ORDER BY r.priority DESC, r.created_at, r.run_id LIMIT 1 FOR UPDATE SKIP LOCKED
      ) AND runs.state = 'QUEUED'
      RETURNING runs.*
    ),
    e AS (
      INSERT INTO timeline_events (run_id, sequence, event_type, occurred_at, execution_id)
      SELECT u.run_id, u.last_sequence, 'run_claimed', p_now, p_execution_id FROM u
    )
    SELECT * FROM u;
    RETURN;
  END IF;
  PERFORM 1 FROM share_clock WHERE pool = '' FOR UPDATE;
  RETURN QUERY
  WITH clock AS (SELECT COALESCE((SELECT vtime FROM share_clock WHERE pool = ''), 0) AS vtime),
  q AS (SELECT team_uid, MIN(created_at) AS oldest FROM runs WHERE state = 'QUEUED' AND worker_host IS NULL GROUP BY team_uid),
  c AS (
    SELECT q.team_uid, GREATEST(clock.vtime, COALESCE(s.next_start, 0)) AS start, GREATEST(COALESCE(t.share_weight, 1), 1) AS weight,
      ROW_NUMBER() OVER (ORDER BY GREATEST(clock.vtime, COALESCE(s.next_start, 0)), q.oldest, q.team_uid COLLATE "C") AS rank
    FROM q CROSS JOIN clock LEFT JOIN teams t ON t.uid = q.team_uid LEFT JOIN team_shares s ON s.team_uid = q.team_uid
  ),
  u AS (
    UPDATE runs SET state = 'CLAIMED', updated_at = p_now, lease_execution_id = p_execution_id,
      lease_expires_at = p_expires_at, last_sequence = runs.last_sequence + 1
    WHERE runs.run_id = (
      SELECT r.run_id FROM runs r JOIN c ON r.team_uid = c.team_uid
      WHERE r.state = 'QUEUED' AND r.worker_host IS NULL
      ORDER BY c.rank, r.priority DESC, r.created_at, r.run_id LIMIT 1 FOR UPDATE OF r SKIP LOCKED
    ) AND runs.state = 'QUEUED'
    RETURNING runs.*
  ),
  e AS (
    INSERT INTO timeline_events (run_id, sequence, event_type, occurred_at, execution_id)
    SELECT u.run_id, u.last_sequence, 'run_claimed', p_now, p_execution_id FROM u
  ),
  charged AS (SELECT c.* FROM c JOIN u ON u.team_uid = c.team_uid WHERE (SELECT COUNT(*) FROM q) > 1),
  shares AS (
    INSERT INTO team_shares (team_uid, next_start) SELECT charged.team_uid, charged.start + 1.0 / charged.weight FROM charged
    ON CONFLICT (team_uid) DO UPDATE SET next_start = excluded.next_start
  ),
  moved AS (
    INSERT INTO share_clock (pool, vtime) SELECT '', charged.start FROM charged
    ON CONFLICT (pool) DO UPDATE SET vtime = excluded.vtime
  )
  SELECT * FROM u;
END
$$`

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const real = sql.literal(sql.onDialectOrElse({ pg: () => "DOUBLE PRECISION", orElse: () => "REAL" }))
  yield* sql`ALTER TABLE teams ADD COLUMN share_weight INTEGER NOT NULL DEFAULT 1 CHECK (share_weight BETWEEN 1 AND 100)`
  yield* sql`CREATE TABLE share_clock (pool TEXT PRIMARY KEY, vtime ${real} NOT NULL)`
  yield* sql`INSERT INTO share_clock (pool, vtime) VALUES ('', 0)`
  yield* sql`CREATE TABLE team_shares (team_uid TEXT PRIMARY KEY, next_start ${real} NOT NULL)`
  yield* sql`ALTER TABLE runs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0 CHECK (priority BETWEEN -10 AND 10)`
  yield* sql`CREATE INDEX runs_claim ON runs (worker_host, team_uid, priority DESC, created_at, run_id) WHERE state = 'QUEUED'`
  yield* sql.onDialectOrElse({ pg: () => sql.unsafe(FAIR_CLAIM_FUNCTION), orElse: () => Effect.void })
  yield* sql`UPDATE runs SET doc_shape = ${WITH_PRIORITY} WHERE doc_shape = ${WITH_BUDGETS}`
})
