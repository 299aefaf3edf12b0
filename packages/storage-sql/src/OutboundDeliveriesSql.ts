/**
 * The outbox and deliveries of OutboundWebhookStoreSql.ts (migrations 0020, 0021). A change is
 * handed out by the transaction that deletes it: of two dispatchers handing out one change, the one
 * whose DELETE returned it writes the deliveries (to endpoints still enabled then). A claim takes
 * due pending deliveries of enabled endpoints whose run has no earlier pending delivery to the same
 * endpoint and no earlier change still in the outbox, keeping each endpoint and each team within
 * their tries in flight, and leases them; a try is recorded only under the lease that claimed it.
 * Delivered and failed deliveries are pruned by age.
 */
import type { OutboundDeliveryId, OutboundWebhookUid, RunId, TeamUid } from "@agent-runs/core/domain/Ids"
import { OutboundDelivery, type OutboundDeliveryState } from "@agent-runs/core/domain/OutboundWebhook"
import type { RunState } from "@agent-runs/core/domain/RunState"
import * as TrustedCodec from "@agent-runs/core/domain/TrustedCodec"
import {
  type Attempt,
  type AttemptResult,
  type ClaimedDelivery,
  type ClaimLimits,
  type DeliveryCount,
  type NewDelivery,
  type OutboxChange,
  triesSince
} from "@agent-runs/core/ports/OutboundWebhookStore"
import type { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { decodeRows, iso } from "./internal/Catalog.js"
import type { endpointOps } from "./OutboundEndpointsSql.js"
import { SecretsRow } from "./OutboundEndpointsSql.js"
import * as Rows from "./Rows.js"

/** Candidates read per delivery a claim may take (the caps per endpoint and team choose among them). */
const CANDIDATES_PER_CLAIM = 10

const ChangeRow = Schema.Struct({
  change_id: Rows.Integer,
  run_id: Schema.String,
  team_uid: Schema.String,
  previous_state: Schema.NullOr(Schema.String),
  state: Schema.String,
  occurred_at: Rows.Millis
})

const ClaimRow = Schema.Struct({
  seq: Rows.Integer,
  delivery_id: Schema.String,
  webhook_uid: Schema.String,
  team_uid: Schema.String,
  run_id: Schema.String,
  body: Schema.String,
  attempts: Rows.Integer,
  retry_from: Rows.Millis
})

const EndpointSecretsRow = Schema.Struct({ uid: Schema.String, url: Schema.String, ...SecretsRow.fields })

const LogRow = Schema.Struct({
  seq: Rows.Integer,
  delivery_id: Schema.String,
  event_type: Schema.String,
  run_id: Schema.String,
  state: Schema.String,
  attempts: Rows.Integer,
  created_at: Rows.Millis,
  next_attempt_at: Schema.NullOr(Rows.Millis),
  last_attempt_at: Schema.NullOr(Rows.Millis),
  last_status: Schema.NullOr(Rows.Integer),
  last_error: Schema.NullOr(Schema.String),
  last_latency_ms: Schema.NullOr(Rows.Integer),
  last_response_excerpt: Schema.NullOr(Schema.String),
  delivered_at: Schema.NullOr(Rows.Millis)
})

const CountRow = Schema.Struct({ webhook_uid: Schema.String, state: Schema.String, count: Rows.Integer })

const decodeDelivery = TrustedCodec.decoder(OutboundDelivery)
const isoOrNull = (ms: number | null) => (ms === null ? null : iso(ms))

const toDelivery = (row: typeof LogRow.Type) =>
  decodeDelivery({
    ...row,
    created_at: iso(row.created_at),
    next_attempt_at: isoOrNull(row.next_attempt_at),
    last_attempt_at: isoOrNull(row.last_attempt_at),
    delivered_at: isoOrNull(row.delivered_at)
  })

const LOG_COLUMNS = `seq, delivery_id, event_type, run_id, state, attempts, created_at, next_attempt_at, last_attempt_at,
  last_status, last_error, last_latency_ms, last_response_excerpt, delivered_at`

/** The outbox and delivery operations over `sql`, with the endpoints' (`endpoints`). */
export const deliveryOps = (sql: SqlClient.SqlClient, endpoints: ReturnType<typeof endpointOps>) => {
  const changes = (limit: number) =>
    sql`SELECT change_id, run_id, team_uid, previous_state, state, occurred_at FROM outbound_changes
      ORDER BY change_id LIMIT ${limit}`.pipe(
      Effect.flatMap(decodeRows(ChangeRow)),
      Effect.map((rows) =>
        rows.map((r): OutboxChange => ({
          change_id: r.change_id,
          run_id: r.run_id as RunId,
          team_uid: r.team_uid as TeamUid,
          previous_state: r.previous_state as RunState | null,
          state: r.state as RunState,
          occurred_at: r.occurred_at
        }))
      )
    )

  /**
   * Which of these endpoints are enabled, read under a share lock on PostgreSQL: an endpoint being
   * turned off or deleted meanwhile waits for the hand-out, then fails or deletes what it wrote.
   */
  const stillEnabled = (uids: ReadonlyArray<string>) =>
    uids.length === 0
      ? Effect.succeed(new Set<string>())
      : sql`SELECT uid FROM outbound_webhooks WHERE ${sql.in("uid", uids)} AND enabled = ${enabled}${
        sql.literal(sql.onDialectOrElse({ pg: () => " FOR SHARE", orElse: () => "" }))
      }`.pipe(Effect.map((rows) => new Set(rows.map((r) => String(r["uid"])))))

  const fanOut = (changeId: number, deliveries: ReadonlyArray<NewDelivery>, now: number) =>
    sql.withTransaction(Effect.gen(function* () {
      const taken = yield* sql`DELETE FROM outbound_changes WHERE change_id = ${changeId} RETURNING run_id, team_uid`
      const change = taken[0] as { run_id: string; team_uid: string } | undefined
      if (change === undefined) return false
      const open = yield* stillEnabled([...new Set(deliveries.map((d) => d.webhook_uid))])
      const kept = deliveries.filter((d) => open.has(d.webhook_uid))
      if (kept.length === 0) return true
      yield* sql`INSERT INTO outbound_deliveries ${
        sql.insert(kept.map((d) => ({
          delivery_id: d.delivery_id,
          webhook_uid: d.webhook_uid,
          team_uid: change.team_uid,
          change_id: changeId,
          run_id: change.run_id,
          event_type: d.event_type,
          body: d.body,
          state: "pending",
          attempts: 0,
          created_at: now,
          retry_from: now,
          next_attempt_at: now
        })))
      }`
      return true
    }))

  const enabled = sql.onDialectOrElse({ pg: () => true, orElse: () => 1 })

  /** Deliveries leased at `now` of the candidate's endpoint (`webhook_uid`) or team (`team_uid`). */
  const inFlight = (column: "webhook_uid" | "team_uid", now: number) =>
    sql`(SELECT count(*) FROM outbound_deliveries l WHERE l.${sql(column)} = d.${sql(column)} AND l.lease_until > ${now})`

  /**
   * The pending deliveries a claim may take at `now`: due, of an enabled endpoint and a team both
   * below their caps of tries in flight (so those at their caps do not fill the window), not leased,
   * and first of their run to their endpoint; the first `window` of them by due time.
   */
  const candidates = (now: number, limits: ClaimLimits) =>
    sql`SELECT d.seq, d.webhook_uid, d.team_uid, d.next_attempt_at FROM outbound_deliveries d
      JOIN outbound_webhooks w ON w.uid = d.webhook_uid
      WHERE d.state = 'pending' AND d.next_attempt_at <= ${now} AND (d.lease_until IS NULL OR d.lease_until <= ${now})
        AND w.enabled = ${enabled}
        AND ${inFlight("webhook_uid", now)} < ${limits.perEndpoint} AND ${inFlight("team_uid", now)} < ${limits.perTeam}
        AND NOT EXISTS (SELECT 1 FROM outbound_deliveries p WHERE p.webhook_uid = d.webhook_uid AND p.run_id = d.run_id
          AND p.state = 'pending' AND (p.change_id < d.change_id OR (p.change_id = d.change_id AND p.seq < d.seq)))
        AND NOT EXISTS (SELECT 1 FROM outbound_changes c WHERE c.run_id = d.run_id AND c.change_id < d.change_id)
      ORDER BY d.next_attempt_at, d.seq LIMIT ${limits.limit * CANDIDATES_PER_CLAIM}`

  /**
   * Of the candidates, those that keep each endpoint within its tries in flight (leased now, on any
   * replica, plus those taken before it here), then of those, the ones that keep each team within
   * its own; first due first.
   */
  const withinLimits = (now: number, limits: ClaimLimits) =>
    sql`WITH c AS (${candidates(now, limits)}),
      per_endpoint AS (
        SELECT c.seq, c.team_uid, c.next_attempt_at,
          ROW_NUMBER() OVER (PARTITION BY c.webhook_uid ORDER BY c.next_attempt_at, c.seq)
            + (SELECT count(*) FROM outbound_deliveries l WHERE l.webhook_uid = c.webhook_uid AND l.lease_until > ${now}) AS load
        FROM c
      ),
      per_team AS (
        SELECT e.seq, e.next_attempt_at,
          ROW_NUMBER() OVER (PARTITION BY e.team_uid ORDER BY e.next_attempt_at, e.seq)
            + (SELECT count(*) FROM outbound_deliveries l WHERE l.team_uid = e.team_uid AND l.lease_until > ${now}) AS load
        FROM per_endpoint e WHERE e.load <= ${limits.perEndpoint}
      )
      SELECT seq FROM per_team WHERE load <= ${limits.perTeam} ORDER BY next_attempt_at, seq LIMIT ${limits.limit}`

  /**
   * Where the claimed deliveries go, and their signing secrets. An endpoint whose secret does not
   * open (another server key, a damaged row) is left out, with a warning: its deliveries stay
   * leased, untried, and are claimed again when the lease ends; the other endpoints' go out.
   */
  const destinations = (uids: ReadonlyArray<string>, now: number) =>
    Effect.gen(function* () {
      const rows = yield* sql`SELECT uid, url, secret, previous_secret, previous_secret_until FROM outbound_webhooks
        WHERE ${sql.in("uid", uids)}`.pipe(Effect.flatMap(decodeRows(EndpointSecretsRow)))
      const byUid = new Map<string, { url: string; secrets: ClaimedDelivery["secrets"] }>()
      for (const row of rows) {
        const secrets = yield* Effect.either(endpoints.secretsOf(row, row.uid, now))
        if (secrets._tag === "Right") byUid.set(row.uid, { url: row.url, secrets: secrets.right })
        else {
          yield* Effect.logWarning("an outbound webhook's signing secret does not open; its deliveries wait").pipe(
            Effect.annotateLogs({ webhook_uid: row.uid, reason: secrets.left.message })
          )
        }
      }
      return byUid
    })

  // A replica claiming at the same moment waits for the row's lock and then finds it leased (the
  // UPDATE checks the row again): each delivery is leased once.
  const claim = (now: number, leaseUntil: number, limits: ClaimLimits) =>
    Effect.gen(function* () {
      const claimed = yield* sql.withTransaction(
        sql`UPDATE outbound_deliveries SET lease_until = ${leaseUntil}
          WHERE seq IN (${withinLimits(now, limits)})
            AND state = 'pending' AND (lease_until IS NULL OR lease_until <= ${now})
          RETURNING seq, delivery_id, webhook_uid, team_uid, run_id, body, attempts, retry_from`.pipe(
          Effect.flatMap(decodeRows(ClaimRow))
        )
      )
      if (claimed.length === 0) return []
      const where = yield* destinations([...new Set(claimed.map((c) => c.webhook_uid))], now)
      return claimed.flatMap((c): Array<ClaimedDelivery> => {
        const to = where.get(c.webhook_uid)
        if (to === undefined) return []
        return [{
          seq: c.seq,
          delivery_id: c.delivery_id as OutboundDeliveryId,
          webhook_uid: c.webhook_uid as OutboundWebhookUid,
          team_uid: c.team_uid as TeamUid,
          run_id: c.run_id as RunId,
          url: to.url,
          body: c.body,
          attempts: c.attempts,
          retry_from: c.retry_from,
          secrets: to.secrets,
          lease_until: leaseUntil
        }]
      }).sort((a, b) => a.seq - b.seq)
    })

  /** The columns a try writes, by where it leaves the delivery. */
  const afterTry = (attempt: Attempt, result: AttemptResult) => ({
    state: result._tag === "Delivered" ? "delivered" : result._tag === "Retry" ? "pending" : "failed",
    next_attempt_at: result._tag === "Retry" ? result.next_attempt_at : null,
    delivered_at: result._tag === "Delivered" ? attempt.at : null,
    lease_until: null,
    last_attempt_at: attempt.at,
    last_status: attempt.status,
    last_error: attempt.error,
    last_latency_ms: attempt.latency_ms,
    last_response_excerpt: attempt.response_excerpt
  })

  /** Turns off an endpoint that delivered nothing since `since`, failing its pending deliveries. */
  const disableIfSilent = (uid: string, since: number, at: number, reason: string) =>
    Effect.gen(function* () {
      const disabled = yield* sql`UPDATE outbound_webhooks SET enabled = ${sql.onDialectOrElse({ pg: () => false, orElse: () => 0 })},
        disabled_reason = ${reason}, disabled_at = ${at}, updated_at = ${at}
        WHERE uid = ${uid} AND (last_success_at IS NULL OR last_success_at < ${since}) RETURNING uid`
      if (disabled.length > 0) yield* endpoints.failPending(uid, reason)
    })

  // The endpoint's row is locked first, as turning it off does (then its deliveries): two such
  // transactions never wait on each other in opposite orders.
  const settle = (delivery: ClaimedDelivery, attempt: Attempt, result: AttemptResult, reason: string) =>
    sql.withTransaction(Effect.gen(function* () {
      yield* sql.onDialectOrElse({
        pg: () => sql`SELECT uid FROM outbound_webhooks WHERE uid = ${delivery.webhook_uid} FOR UPDATE`,
        orElse: () => Effect.void
      })
      const written = yield* sql`UPDATE outbound_deliveries SET ${sql.update(afterTry(attempt, result))},
        retry_from = CASE WHEN attempts = 0 THEN ${attempt.at} ELSE retry_from END, attempts = attempts + 1
        WHERE seq = ${delivery.seq} AND state = 'pending' AND lease_until = ${delivery.lease_until} RETURNING seq`
      if (written.length === 0) return
      if (result._tag === "Delivered") {
        yield* sql`UPDATE outbound_webhooks SET last_success_at = ${attempt.at} WHERE uid = ${delivery.webhook_uid}`
      }
      if (result._tag === "GiveUp") yield* disableIfSilent(delivery.webhook_uid, triesSince(delivery, attempt.at), attempt.at, reason)
    }))

  const deliveries = (
    team: TeamUid,
    uid: OutboundWebhookUid,
    query: { readonly limit: number; readonly after: number | null; readonly state: OutboundDeliveryState | undefined }
  ) =>
    Effect.gen(function* () {
      const rows = yield* sql`SELECT ${sql.literal(LOG_COLUMNS)} FROM outbound_deliveries
        WHERE webhook_uid = ${uid} AND team_uid = ${team}
          ${query.state === undefined ? sql`` : sql`AND state = ${query.state}`}
          ${query.after === null ? sql`` : sql`AND seq < ${query.after}`}
        ORDER BY seq DESC LIMIT ${query.limit + 1}`.pipe(Effect.flatMap(decodeRows(LogRow)))
      const page = rows.slice(0, query.limit)
      return {
        deliveries: yield* Effect.forEach(page, toDelivery),
        next: rows.length > query.limit ? page[page.length - 1]!.seq : null
      }
    })

  /** The columns that queue a delivery again at `now`. */
  const queued = (now: number) => ({
    state: "pending",
    attempts: 0,
    retry_from: now,
    next_attempt_at: now,
    lease_until: null,
    delivered_at: null
  })

  const redeliver = (team: TeamUid, uid: OutboundWebhookUid, id: OutboundDeliveryId, now: number) =>
    Effect.gen(function* () {
      const found = yield* sql`SELECT state FROM outbound_deliveries
        WHERE delivery_id = ${id} AND webhook_uid = ${uid} AND team_uid = ${team}`
      if (found.length === 0) return "missing" as const
      const requeued = yield* sql`UPDATE outbound_deliveries SET ${sql.update(queued(now))}
        WHERE delivery_id = ${id} AND webhook_uid = ${uid} AND state <> 'pending' RETURNING seq`
      return requeued.length > 0 ? "queued" as const : "pending" as const
    })

  const redeliverFailed = (team: TeamUid, uid: OutboundWebhookUid, since: number, now: number) =>
    sql`UPDATE outbound_deliveries SET ${sql.update(queued(now))}
      WHERE webhook_uid = ${uid} AND team_uid = ${team} AND state = 'failed' AND created_at >= ${since}
      RETURNING seq`.pipe(Effect.map((rows) => rows.length))

  const health = (team: TeamUid, since: number) =>
    sql`SELECT webhook_uid, state, count(*) AS count FROM outbound_deliveries
      WHERE team_uid = ${team} AND created_at >= ${since} GROUP BY webhook_uid, state`.pipe(
      Effect.flatMap(decodeRows(CountRow)),
      Effect.map((rows) => rows.map((r): DeliveryCount => ({
        webhook_uid: r.webhook_uid as OutboundWebhookUid,
        state: r.state as OutboundDeliveryState,
        count: r.count
      })))
    )

  const prune = (before: number, limit: number) =>
    sql`DELETE FROM outbound_deliveries WHERE seq IN (
      SELECT seq FROM outbound_deliveries WHERE state <> 'pending' AND created_at < ${before} ORDER BY seq LIMIT ${limit}
    ) RETURNING seq`.pipe(Effect.map((rows) => rows.length))

  return { changes, fanOut, claim, settle, deliveries, redeliver, redeliverFailed, health, prune } as const
}
