/**
 * Port: webhooks, their secrets (encrypted at rest by the adapter), and their delivery log.
 * Accepted deliveries are logged by RunStore.create with a Delivery key, in the transaction that
 * creates their runs; every other outcome is logged here.
 */
import type { Effect, Option, Redacted } from "effect"
import { Context } from "effect"
import type { DeliveryId, PrincipalUid, TeamUid, WebhookUid } from "../Ids.js"
import type { Delivery, Webhook } from "../Webhook.js"
import type { WebhookState } from "../WebhookStateMachine.js"
import type { StaleWrite, StorageError } from "./Storage.js"

/**
 * A webhook as stored. `secret` is the current credential, the one the ingress checks; for a
 * `secret_name` webhook it is the team secret's value as the webhooks service last read it (at
 * creation and on re-enable). The service erases it (null) when the webhook is deleted.
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

export class WebhookStore extends Context.Tag("@agent-runs/core/WebhookStore")<WebhookStore, {
  /** Creates a webhook. */
  readonly create: (webhook: StoredWebhook) => Effect.Effect<void, StorageError>
  /** Reads a webhook that is not deleted, with its secret. */
  readonly get: (uid: WebhookUid) => Effect.Effect<Option.Option<StoredWebhook>, StorageError>
  /** A team's webhooks that are not deleted, by name. */
  readonly list: (team: TeamUid) => Effect.Effect<ReadonlyArray<StoredWebhook>, StorageError>
  /** Replaces a webhook (state, secret, fields) if its secret version is still `expectedSecretVersion`. */
  readonly update: (next: StoredWebhook, expectedSecretVersion: number) => Effect.Effect<void, StaleWrite | StorageError>
  /** Logs a delivery that started nothing (duplicate or rejected). */
  readonly logDelivery: (webhook: WebhookUid, delivery: Delivery) => Effect.Effect<void, StorageError>
  /** A page of a webhook's log, newest first, strictly older than `before` when given. */
  readonly deliveries: (
    webhook: WebhookUid,
    limit: number,
    before: { readonly received_at: number; readonly delivery_id: DeliveryId } | null
  ) => Effect.Effect<DeliveryPage, StorageError>
  /** One logged delivery. */
  readonly delivery: (webhook: WebhookUid, id: DeliveryId) => Effect.Effect<Option.Option<Delivery>, StorageError>
  /**
   * Prunes a webhook's log: removes exactly the deliveries that are neither among the newest `keep`
   * (by received_at, then delivery_id) nor received at or after `since`, with the de-duplication
   * identities they hold. Returns how many were removed.
   */
  readonly prune: (webhook: WebhookUid, keep: number, since: number) => Effect.Effect<number, StorageError>
}>() {}
