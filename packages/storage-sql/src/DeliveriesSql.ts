/**
 * Writing a webhook's delivery log and its de-duplication identities. Shared by the webhook store
 * (rejected and duplicate deliveries) and the run store (an accepted delivery, written in the
 * transaction that creates its runs).
 */
import type { Delivery } from "@agent-runs/core/Webhook"
import type { WebhookUid } from "@agent-runs/core/Ids"
import { SqlClient } from "@effect/sql"
import { DateTime, Effect } from "effect"

/** Appends one entry to a webhook's delivery log. */
export const insertDelivery = (webhook: WebhookUid, delivery: Delivery) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
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
  )

/**
 * Takes a delivery identity for a webhook; false when it was already taken (a duplicate). The
 * identity lives as long as the delivery that took it stays in the log.
 */
export const claimIdentity = (webhook: WebhookUid, identity: string, deliveryId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ identity: string }>`INSERT INTO delivery_identities ${sql.insert({
      webhook_uid: webhook,
      identity,
      delivery_id: deliveryId
    })} ON CONFLICT DO NOTHING RETURNING identity`
  ).pipe(Effect.map((rows) => rows.length === 1))
