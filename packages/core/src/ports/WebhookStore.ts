/**
 * Port: webhooks, their secrets (encrypted at rest by the adapter), and their delivery log.
 * Accepted deliveries are logged by RunStore.create with a Delivery key, in the transaction that
 * creates their runs; every other outcome is logged here.
 */
import type { Effect, Option, Redacted } from "effect"
import { Context } from "effect"
import type { DeliveryId, PrincipalUid, TeamUid, WebhookUid } from "../domain/Ids.js"
import type { Delivery, DeliveryCounts, Webhook } from "../domain/Webhook.js"
import type { WebhookState } from "../domain/WebhookStateMachine.js"
import type { StaleWrite, StorageError } from "./Storage.js"

/**
 * A webhook as stored. `secret` is the current credential, the one the ingress checks; for a
 * `secret_name` webhook it is the team secret's value as the webhooks service last read it (at
 * creation and on re-enable), which the ingress checks only while the team secret is gone (it
 * reads the team secret's current value). The service erases it (null) when the webhook is deleted.
 */
export interface StoredWebhook {
  readonly item: Webhook
  readonly team_uid: TeamUid
  readonly creator_uid: PrincipalUid
  readonly state: WebhookState
  readonly secret: Redacted.Redacted<string> | null
}

/** A page of a webhook's delivery log, newest first. */
export interface DeliveryPage {
  readonly deliveries: ReadonlyArray<Delivery>
  /** The page's last delivery when older ones exist: its position is the next page's `before`. */
  readonly next: Delivery | null
}

/**
 * What a webhook's delivery log keeps. ACCEPTED and DUPLICATE entries are ranked each outcome apart:
 * an entry is kept while it is among the newest `max` of its outcome, and either among the newest
 * `keep` or received at or after `since`. Rejected entries (every REJECTED_* outcome together) are
 * kept while among the newest `rejected`, whatever their age.
 */
export interface LogRetention {
  readonly keep: number
  readonly since: number
  readonly max: number
  readonly rejected: number
}

export class WebhookStore extends Context.Tag("@agent-runs/core/WebhookStore")<WebhookStore, {
  /** Creates a webhook. */
  readonly create: (webhook: StoredWebhook) => Effect.Effect<void, StorageError>
  /** Reads a webhook that is not deleted, with its secret. */
  readonly get: (uid: WebhookUid) => Effect.Effect<Option.Option<StoredWebhook>, StorageError>
  /**
   * `get` for a delivery to the webhook: a store may answer from a cache of what it read at most
   * a few seconds ago, emptied on every replica at each change of a webhook (never for reads that
   * lead to a write).
   */
  readonly forDelivery: (uid: WebhookUid) => Effect.Effect<Option.Option<StoredWebhook>, StorageError>
  /** A team's webhooks that are not deleted, by name. */
  readonly list: (team: TeamUid) => Effect.Effect<ReadonlyArray<StoredWebhook>, StorageError>
  /** Replaces a webhook (state, secret, fields) if its secret version is still `expectedSecretVersion`. */
  readonly update: (next: StoredWebhook, expectedSecretVersion: number) => Effect.Effect<void, StaleWrite | StorageError>
  /**
   * Logs a delivery that started nothing (duplicate or rejected) and counts it under its outcome.
   * With `keepRejected`, a rejected delivery also trims the webhook's rejected entries to the newest
   * `keepRejected` (in the same transaction), so rejections never pile up between prunes.
   */
  readonly logDelivery: (webhook: WebhookUid, delivery: Delivery, keepRejected?: number) => Effect.Effect<void, StorageError>
  /** How many deliveries the webhook has logged, by outcome, including those pruned since. */
  readonly deliveryCounts: (webhook: WebhookUid) => Effect.Effect<DeliveryCounts, StorageError>
  /** A page of a webhook's log, newest first, strictly older than `before` when given. */
  readonly deliveries: (
    webhook: WebhookUid,
    limit: number,
    before: { readonly received_at: number; readonly delivery_id: DeliveryId } | null
  ) => Effect.Effect<DeliveryPage, StorageError>
  /** One logged delivery. */
  readonly delivery: (webhook: WebhookUid, id: DeliveryId) => Effect.Effect<Option.Option<Delivery>, StorageError>
  /**
   * Prunes a webhook's log as `retention` says (ranks by received_at, then delivery_id, newest
   * first), with the de-duplication identities the removed deliveries hold. Returns how many were
   * removed.
   */
  readonly prune: (webhook: WebhookUid, retention: LogRetention) => Effect.Effect<number, StorageError>
}>() {}
