/**
 * Writing a webhook's delivery log, its de-duplication identities and its counts per outcome, in
 * memory. Shared by the webhook store (rejected and duplicate deliveries, retention) and the run
 * store (an accepted delivery, logged with the runs it creates), as `DeliveriesSql.ts` is by the
 * SQL stores.
 *
 * Every delivery logged adds one to its webhook's count of its outcome, so the counts stay true
 * after the log itself is pruned or trimmed. An identity lives as long as the delivery that took
 * it: removing a delivery frees its identities.
 */
import { DateTime } from "effect"
import type { DeliveryId, WebhookUid } from "../../src/domain/Ids.js"
import { compareCodePoints } from "../../src/domain/RunQuery.js"
import type { Delivery } from "../../src/domain/Webhook.js"
import { type DeliveryLog, entryOf, type MemoryState } from "./MemoryState.js"

/** The outcomes that are rejections: kept only in a small window, counted always. */
export const REJECTED_OUTCOMES: ReadonlyArray<string> = ["REJECTED_AUTH", "REJECTED_INVALID_JSON", "REJECTED_TOO_LARGE"]

/** Whether a delivery's outcome is a rejection. */
export const isRejected = (delivery: Delivery): boolean => REJECTED_OUTCOMES.includes(delivery.outcome)

/** A webhook's log, created empty when missing. */
export const logOf = (state: MemoryState, webhook: WebhookUid): DeliveryLog =>
  entryOf(state.deliveryLogs, webhook, () => ({ entries: new Map(), identities: new Map(), counts: new Map() }))

/** Newest first: by `received_at`, then delivery id (code points), both descending. */
export const newestFirst = (a: Delivery, b: Delivery): number =>
  DateTime.toEpochMillis(b.received_at) - DateTime.toEpochMillis(a.received_at) ||
  compareCodePoints(b.delivery_id, a.delivery_id)

/** Whether a delivery id is logged already (under any webhook). */
export const isLogged = (state: MemoryState, id: DeliveryId): boolean => state.deliveryOwners.has(id)

/** Whether a webhook's identity is taken by a delivery still in its log. */
export const isTaken = (state: MemoryState, webhook: WebhookUid, identity: string): boolean =>
  state.deliveryLogs.get(webhook)?.identities.has(identity) ?? false

/**
 * Appends one entry to a webhook's log (the caller checked that its id is not logged yet); an
 * accepted one's payload is recorded with its team for its retention.
 */
export const insertDelivery = (state: MemoryState, webhook: WebhookUid, delivery: Delivery): void => {
  logOf(state, webhook).entries.set(delivery.delivery_id, delivery)
  state.deliveryOwners.set(delivery.delivery_id, webhook)
  const team = state.webhooks.get(webhook)?.team_uid
  if (delivery.outcome === "ACCEPTED" && team !== undefined) {
    state.webhookPayloads.set(delivery.delivery_id, { team_uid: team, received_at: DateTime.toEpochMillis(delivery.received_at) })
  }
}

/** Takes an identity for a logged delivery (the caller checked that it is free). */
export const claimIdentity = (state: MemoryState, webhook: WebhookUid, identity: string, id: DeliveryId): void => {
  logOf(state, webhook).identities.set(identity, id)
}

/** Adds one to a webhook's count of a delivery's outcome (and moves its latest time forwards). */
export const countDelivery = (state: MemoryState, webhook: WebhookUid, delivery: Delivery): void => {
  const counts = logOf(state, webhook).counts
  const at = DateTime.toEpochMillis(delivery.received_at)
  const counted = counts.get(delivery.outcome)
  counts.set(
    delivery.outcome,
    counted === undefined ? { count: 1, last_received_at: at } : { count: counted.count + 1, last_received_at: Math.max(counted.last_received_at, at) }
  )
}

/** Removes deliveries from a webhook's log, with the identities they hold; returns how many were removed. */
export const removeDeliveries = (state: MemoryState, webhook: WebhookUid, ids: ReadonlySet<DeliveryId>): number => {
  const log = state.deliveryLogs.get(webhook)
  if (log === undefined || ids.size === 0) return 0
  let removed = 0
  for (const id of ids) {
    if (log.entries.delete(id)) {
      state.deliveryOwners.delete(id)
      removed++
    }
  }
  for (const [identity, holder] of log.identities) if (ids.has(holder)) log.identities.delete(identity)
  return removed
}

/** Removes a webhook's rejected entries beyond the newest `keep`. */
export const trimRejected = (state: MemoryState, webhook: WebhookUid, keep: number): void => {
  const log = state.deliveryLogs.get(webhook)
  if (log === undefined) return
  const rejected = [...log.entries.values()].filter(isRejected).sort(newestFirst)
  const beyond = rejected.slice(Math.max(0, Math.floor(keep))).map((d) => d.delivery_id)
  removeDeliveries(state, webhook, new Set(beyond))
}
