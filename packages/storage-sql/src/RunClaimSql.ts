/**
 * Claims in SQL (RunStore.claim): which QUEUED run an executor takes next, with its lease and its
 * `run_claimed` event.
 *
 * Decisions:
 * - Within what a claim may take, runs go by `priority` (higher first), then `created_at`, then
 *   `run_id`, read from the partial index `runs_claim`. The claim is one statement on PostgreSQL:
 *   `UPDATE runs ... WHERE run_id = (SELECT ... FOR UPDATE SKIP LOCKED)` with its event in a
 *   data-modifying WITH (concurrent claimers skip each other's row); on SQLite (one writer at a
 *   time) the same without the locking clause, and the event, in a transaction.
 * - A self-hosted worker's claim takes its team's runs for its host, in that order.
 * - The service's own executors' claim (no worker host) first picks the team by fair share (core's
 *   FairShare.ts), in a transaction that holds the pool's clock row (`share_clock`): claims by
 *   share are one at a time across replicas, so two replicas cannot both spend one team's turn.
 *   The teams with runs waiting are one grouped read of the index (a row per team); the team's
 *   next start and the clock are written in the same transaction as the claim. On PostgreSQL that
 *   is one call of a function (migration 0019: the lock, then FairShare.ts's choice in SQL), so the
 *   lock is held only while it runs, for no round trip; on SQLite, steps in TypeScript.
 * - When the chosen team's run is taken between the read and the claim (locked by another writer),
 *   the claim finds none this time; the dispatcher claims again at its next poll.
 */
import { type Contender, nextTeam, shareAfter } from "@agent-runs/core/domain/FairShare"
import { type ExecutionId, RunId, type TeamUid } from "@agent-runs/core/domain/Ids"
import * as TrustedCodec from "@agent-runs/core/domain/TrustedCodec"
import type { SqlClient, Statement } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import * as Rows from "./Rows.js"
import { RUN_COLUMNS } from "./RunRowsSql.js"
import type { runWrites } from "./RunWritesSql.js"

const Int = Schema.Int
const decodeClaimed = TrustedCodec.decoder(Schema.Array(Schema.Struct({ run_id: RunId, last_sequence: Int })))
/** A number as a driver returns it (PostgreSQL sends BIGINT aggregates as strings). */
const Numeric = Schema.Union(Schema.Number, Schema.NumberFromString)
const decodeWaiting = TrustedCodec.decoder(Schema.Array(Schema.Struct({ first_team: Schema.NullOr(Schema.String), more: Rows.Bool })))
const decodeClock = TrustedCodec.decoder(Schema.Array(Schema.Struct({ vtime: Numeric })))
const decodeContenders = TrustedCodec.decoder(Schema.Array(Schema.Struct({
  team_uid: Schema.String,
  oldest: Rows.Millis,
  weight: Numeric,
  next_start: Numeric
})))

/** Where and when a claim takes a run, and the lease it takes it under. */
export interface ClaimParams {
  readonly worker_host: string | null
  readonly team_uid?: TeamUid | undefined
  readonly execution_id: ExecutionId
  readonly now: number
  readonly lease_ms: number
}

/** How a claim writes its event. */
type EventWrites = Pick<ReturnType<typeof runWrites>, "insertAll" | "eventRows">

export const runClaimSql = (sql: SqlClient.SqlClient, writes: EventWrites) => {
  const columns = sql.literal(RUN_COLUMNS)
  const skipLocked = sql.onDialectOrElse({
    pg: () => sql.literal("FOR UPDATE SKIP LOCKED"),
    orElse: () => sql.literal("")
  })

  /** The claim of the run `pick` (a SELECT of one run id) names, while it is QUEUED. */
  const claiming = (pick: Statement.Fragment, params: ClaimParams) =>
    sql`UPDATE runs SET state = 'CLAIMED', updated_at = ${params.now},
        lease_execution_id = ${params.execution_id}, lease_expires_at = ${params.now + params.lease_ms},
        last_sequence = last_sequence + 1
      WHERE run_id = (${pick}) AND state = 'QUEUED'
      RETURNING ${columns}, runs.last_sequence`

  /** The `run_claimed` event of the claim `u` (a WITH's name) returns, as a data-modifying WITH. */
  const claimedEvent = (params: ClaimParams) =>
    sql`e AS (
      INSERT INTO timeline_events (run_id, sequence, event_type, occurred_at, execution_id)
      SELECT u.run_id, u.last_sequence, 'run_claimed', ${params.now}::bigint, ${params.execution_id} FROM u
    )`

  /** Claims the first QUEUED run `where` allows (by priority, then age); its row, or none. */
  const claimWhere = (where: Statement.Fragment, params: ClaimParams) => {
    // 'QUEUED' is written literally so that SQLite can use the partial index runs_claim.
    const update = claiming(
      sql`SELECT run_id FROM runs WHERE state = 'QUEUED' AND ${where} ORDER BY priority DESC, created_at, run_id LIMIT 1 ${skipLocked}`,
      params
    )
    return sql.onDialectOrElse({
      // One statement: the claim and its event (a data-modifying WITH), atomic without a transaction.
      pg: () => Effect.map(sql`WITH u AS (${update}), ${claimedEvent(params)} SELECT * FROM u`, (rows) => Option.fromNullable(rows[0])),
      orElse: () =>
        sql.withTransaction(Effect.gen(function* () {
          const rows = yield* update
          const row = rows[0]
          if (row === undefined) return Option.none()
          const { last_sequence, run_id } = (yield* decodeClaimed(rows))[0]!
          yield* writes.insertAll(
            "timeline_events",
            writes.eventRows(run_id, last_sequence, [
              { event_type: "run_claimed", occurred_at: params.now, execution_id: params.execution_id }
            ])
          )
          return Option.some(row)
        }))
    })
  }

  const readClock = sql`SELECT vtime FROM share_clock WHERE pool = ''`.pipe(
    Effect.flatMap(decodeClock),
    Effect.map((rows) => rows[0]?.vtime ?? 0)
  )

  /** The teams with runs waiting for the service's own executors, with their weights and next starts. */
  const contenders = sql`SELECT q.team_uid, q.oldest, COALESCE(t.share_weight, 1) AS weight, COALESCE(s.next_start, 0) AS next_start
      FROM (SELECT team_uid, MIN(created_at) AS oldest FROM runs WHERE state = 'QUEUED' AND worker_host IS NULL GROUP BY team_uid) q
      LEFT JOIN teams t ON t.uid = q.team_uid
      LEFT JOIN team_shares s ON s.team_uid = q.team_uid`.pipe(
    Effect.flatMap(decodeContenders),
    Effect.map((rows) =>
      rows.map((r): Contender => ({ team: r.team_uid as TeamUid, weight: r.weight, next: r.next_start, oldest: r.oldest }))
    )
  )

  /** The smallest id of a team with runs waiting for the service's own executors, and whether another team has some. */
  const waitingTeams = sql`SELECT m.first_team, EXISTS (
      SELECT 1 FROM runs WHERE state = 'QUEUED' AND worker_host IS NULL AND team_uid > m.first_team
    ) AS more
    FROM (SELECT MIN(team_uid) AS first_team FROM runs WHERE state = 'QUEUED' AND worker_host IS NULL) m`.pipe(
    Effect.flatMap(decodeWaiting),
    Effect.map((rows) => rows[0] ?? { first_team: null, more: false })
  )

  /**
   * The service's own executors' claim on SQLite: with one team waiting, its first run; with more,
   * the team by fair share (FairShare.ts), then its first run, the team's next start and the clock,
   * in one transaction (SQLite's write lock orders claims).
   */
  const fairClaimInSteps = (params: ClaimParams) =>
    sql.withTransaction(Effect.gen(function* () {
      const { first_team, more } = yield* waitingTeams
      if (first_team === null) return Option.none()
      if (!more) return yield* claimWhere(sql`worker_host IS NULL AND team_uid = ${first_team}`, params)
      const vtime = yield* readClock
      const waiting = yield* contenders
      const team = nextTeam(waiting, vtime)
      if (team === undefined) return Option.none()
      const claimed = yield* claimWhere(sql`worker_host IS NULL AND team_uid = ${team.team}`, params)
      const after = shareAfter(waiting, team, vtime)
      if (Option.isNone(claimed) || after === undefined) return claimed
      yield* sql`INSERT INTO team_shares (team_uid, next_start) VALUES (${team.team}, ${after.next})
        ON CONFLICT (team_uid) DO UPDATE SET next_start = excluded.next_start`
      yield* sql`INSERT INTO share_clock (pool, vtime) VALUES ('', ${after.vtime})
        ON CONFLICT (pool) DO UPDATE SET vtime = excluded.vtime`
      return claimed
    }))

  /** The same on PostgreSQL in one call of `agent_runs_fair_claim` (migration 0019). */
  const fairClaimAtOnce = (params: ClaimParams) =>
    Effect.map(
      sql`SELECT ${columns}, runs.last_sequence
        FROM agent_runs_fair_claim(${params.now}, ${params.execution_id}, ${params.now + params.lease_ms}) AS runs`,
      (rows) => Option.fromNullable(rows[0])
    )

  const fairClaim = sql.onDialectOrElse({ pg: () => fairClaimAtOnce, orElse: () => fairClaimInSteps })

  /** The row of the run claimed, or none: one team's runs when it is named, else the host's, by share when that is the service's own. */
  const claim = (params: ClaimParams) => {
    const host = params.worker_host === null || params.worker_host === "" ? null : params.worker_host
    const hostIs = host === null ? sql`worker_host IS NULL` : sql`worker_host = ${host}`
    if (params.team_uid !== undefined) return claimWhere(sql`${hostIs} AND team_uid = ${params.team_uid}`, params)
    return host === null ? fairClaim(params) : claimWhere(hostIs, params)
  }

  return { claim }
}
