/**
 * Writing a webhook's delivery log, its de-duplication identities and its counts per outcome.
 * Shared by the webhook store (rejected and duplicate deliveries) and the run store (an accepted
 * delivery, written in the transaction that creates its runs).
 *
 * Every delivery logged adds one to its webhook's count of its outcome (`delivery_counts`, one row
 * per webhook and outcome), so the counts stay true after the log itself is pruned or trimmed.
 */
import type { Delivery } from "@agent-runs/core/domain/Webhook"
import type { WebhookUid } from "@agent-runs/core/domain/Ids"
import { SqlClient } from "@effect/sql"
import { DateTime, Effect } from "effect"

/** The outcomes that are rejections: kept only in a small window, counted always. */
export const REJECTED_OUTCOMES = ["REJECTED_AUTH", "REJECTED_INVALID_JSON", "REJECTED_TOO_LARGE"] as const

/**
 * Appends one entry to a webhook's delivery log; an accepted one's payload is recorded with its
 * team for its retention (`webhook_payloads`: the log may drop the entry earlier).
 */
export const insertDelivery = (webhook: WebhookUid, delivery: Delivery) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    delivery.outcome === "ACCEPTED"
      ? Effect.zipRight(insertEntry(sql, webhook, delivery), recordPayload(sql, webhook, delivery))
      : insertEntry(sql, webhook, delivery)
  )

const recordPayload = (sql: SqlClient.SqlClient, webhook: WebhookUid, delivery: Delivery) =>
  sql`INSERT INTO webhook_payloads (delivery_id, team_uid, received_at)
    SELECT CAST(${delivery.delivery_id} AS TEXT), team_uid, CAST(${DateTime.toEpochMillis(delivery.received_at)} AS BIGINT)
    FROM webhooks WHERE uid = ${webhook}`

const insertEntry = (sql: SqlClient.SqlClient, webhook: WebhookUid, delivery: Delivery) =>
  sql`INSERT INTO deliveries ${sql.insert({
    delivery_id: delivery.delivery_id,
    webhook_uid: webhook,
    received_at: DateTime.toEpochMillis(delivery.received_at),
    size_bytes: delivery.size_bytes,
    identity: delivery.identity,
    outcome: delivery.outcome,
    run_ids: JSON.stringify(delivery.run_ids),
    payload: delivery.payload === undefined ? null : JSON.stringify(delivery.payload)
  })}`

/** Adds one to a webhook's count of a delivery's outcome (and moves its latest time forward). */
export const countDelivery = (webhook: WebhookUid, delivery: Delivery) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`INSERT INTO delivery_counts ${sql.insert({
      webhook_uid: webhook,
      outcome: delivery.outcome,
      count: 1,
      last_received_at: DateTime.toEpochMillis(delivery.received_at)
    })} ON CONFLICT (webhook_uid, outcome) DO UPDATE SET
      count = delivery_counts.count + 1,
      last_received_at = CASE WHEN excluded.last_received_at > delivery_counts.last_received_at
        THEN excluded.last_received_at ELSE delivery_counts.last_received_at END`
  )

/** Removes a webhook's rejected entries beyond the newest `keep` (with nothing to free: they claim no identity). */
export const trimRejected = (webhook: WebhookUid, keep: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`DELETE FROM deliveries
      WHERE webhook_uid = ${webhook} AND outcome IN ${sql.in(REJECTED_OUTCOMES)}
        AND delivery_id NOT IN (
          SELECT delivery_id FROM deliveries
          WHERE webhook_uid = ${webhook} AND outcome IN ${sql.in(REJECTED_OUTCOMES)}
          ORDER BY received_at DESC, delivery_id DESC LIMIT ${Math.max(0, Math.floor(keep))}
        )`
  )

/**
 * Takes delivery identities for a webhook in one statement; false when one of them was already
 * taken (a duplicate: the caller's transaction is then rolled back, with what this took). An
 * identity lives as long as the delivery that took it stays in the log.
 */
export const claimIdentities = (webhook: WebhookUid, identities: ReadonlyArray<string>, deliveryId: string) => {
  const distinct = [...new Set(identities)]
  return Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ identity: string }>`INSERT INTO delivery_identities ${
      sql.insert(distinct.map((identity) => ({ webhook_uid: webhook, identity, delivery_id: deliveryId })))
    } ON CONFLICT DO NOTHING RETURNING identity`).pipe(Effect.map((rows) => rows.length === distinct.length))
}
