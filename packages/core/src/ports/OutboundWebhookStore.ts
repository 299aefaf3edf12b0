/**
 * Port: outbound webhooks (domain/OutboundWebhook.ts), their signing secrets (sealed at rest by the
 * adapter), the outbox of run changes and the deliveries made from it.
 *
 * The outbox: the store that writes runs records a change (a run created, a run's state changed)
 * in the same transaction as the write, for a team with at least one enabled endpoint; a change is
 * then handed out once (`fanOut`: the change leaves the outbox as its deliveries are written). A
 * delivery is claimed by one dispatcher at a time for a lease; it is claimable only when no earlier
 * delivery to the same endpoint about the same run is pending and no earlier change of that run is
 * still in the outbox, so each endpoint hears of a run's changes in order.
 */
import type { Effect, Option, Redacted } from "effect"
import { Context } from "effect"
import type { OutboundDeliveryId, OutboundWebhookUid, PrincipalUid, RunId, TeamUid } from "../domain/Ids.js"
import type { OutboundDelivery, OutboundDeliveryState, OutboundEventType, OutboundWebhook } from "../domain/OutboundWebhook.js"
import type { RunState } from "../domain/RunState.js"
import type { StorageError } from "./Storage.js"

/** An endpoint as stored, without its secrets. */
export interface StoredOutboundWebhook {
  readonly item: OutboundWebhook
  readonly team_uid: TeamUid
  readonly creator_uid: PrincipalUid
}

/** A change of a run waiting in the outbox. */
export interface OutboxChange {
  readonly change_id: number
  readonly run_id: RunId
  readonly team_uid: TeamUid
  readonly previous_state: RunState | null
  readonly state: RunState
  readonly occurred_at: number
}

/** A delivery to write when a change is handed out. */
export interface NewDelivery {
  readonly delivery_id: OutboundDeliveryId
  readonly webhook_uid: OutboundWebhookUid
  readonly event_type: OutboundEventType
  readonly body: string
}

/** A delivery claimed for a try: where it goes, what it says, and the secrets that sign it (newest first). */
export interface ClaimedDelivery {
  readonly seq: number
  readonly delivery_id: OutboundDeliveryId
  readonly webhook_uid: OutboundWebhookUid
  readonly team_uid: TeamUid
  readonly run_id: RunId
  readonly url: string
  readonly body: string
  /** Failed tries so far. */
  readonly attempts: number
  /** When its first try (since it was queued, or queued again) was made; the retry period counts from there. */
  readonly retry_from: number
  readonly secrets: ReadonlyArray<Redacted.Redacted<string>>
  /** The claim's lease: a try is recorded only while the delivery is still claimed under it. */
  readonly lease_until: number
}

/** What one try found. */
export interface Attempt {
  readonly at: number
  readonly status: number | null
  readonly error: string | null
  readonly latency_ms: number
  readonly response_excerpt: string | null
}

/** Where a try leaves its delivery. */
export type AttemptResult =
  | { readonly _tag: "Delivered" }
  | { readonly _tag: "Retry"; readonly next_attempt_at: number }
  | { readonly _tag: "GiveUp" }

/** When the tries of `delivery` began, for a try made `at`: this one when it is the first. */
export const triesSince = (delivery: ClaimedDelivery, at: number): number => (delivery.attempts === 0 ? at : delivery.retry_from)

/** How much a claim may take: at most `limit`, keeping each endpoint's and each team's tries in flight within their caps. */
export interface ClaimLimits {
  readonly limit: number
  readonly perEndpoint: number
  readonly perTeam: number
}

/** How many deliveries of an endpoint are in a state. */
export interface DeliveryCount {
  readonly webhook_uid: OutboundWebhookUid
  readonly state: OutboundDeliveryState
  readonly count: number
}

/** A page of an endpoint's deliveries, newest first. */
export interface OutboundDeliveryPage {
  readonly deliveries: ReadonlyArray<OutboundDelivery>
  /** The position after the page's last delivery when older ones exist. */
  readonly next: number | null
}

export class OutboundWebhookStore extends Context.Tag("@agent-runs/core/OutboundWebhookStore")<OutboundWebhookStore, {
  /** Creates an endpoint with its secret. */
  readonly create: (webhook: StoredOutboundWebhook, secret: Redacted.Redacted<string>) => Effect.Effect<void, StorageError>
  /** A team's endpoints, oldest first. */
  readonly list: (team: TeamUid) => Effect.Effect<ReadonlyArray<StoredOutboundWebhook>, StorageError>
  /** One endpoint of the team. */
  readonly get: (team: TeamUid, uid: OutboundWebhookUid) => Effect.Effect<Option.Option<StoredOutboundWebhook>, StorageError>
  /**
   * Replaces an endpoint's fields (not its secrets). Turning it off fails its pending deliveries
   * with `reason` (they can be redelivered once it is on again). False when it is gone.
   */
  readonly update: (next: StoredOutboundWebhook, reason: string) => Effect.Effect<boolean, StorageError>
  /** Replaces the secret; the old one keeps signing until `previousUntil` (epoch ms). False when it is gone. */
  readonly rotate: (
    next: StoredOutboundWebhook,
    secret: Redacted.Redacted<string>,
    previousUntil: number
  ) => Effect.Effect<boolean, StorageError>
  /** Deletes an endpoint and its deliveries. False when it was gone. */
  readonly remove: (team: TeamUid, uid: OutboundWebhookUid) => Effect.Effect<boolean, StorageError>

  /** The oldest changes in the outbox. */
  readonly changes: (limit: number) => Effect.Effect<ReadonlyArray<OutboxChange>, StorageError>
  /**
   * Hands a change out: removes it from the outbox and writes its deliveries to the endpoints still
   * enabled, at once. False (and nothing written) when it had been handed out already.
   */
  readonly fanOut: (changeId: number, deliveries: ReadonlyArray<NewDelivery>, now: number) => Effect.Effect<boolean, StorageError>
  /**
   * Claims deliveries due at `now` to enabled endpoints, each until `leaseUntil`, first due first,
   * within `limits`: an endpoint's (a team's) deliveries leased at `now` count against its cap.
   */
  readonly claim: (now: number, leaseUntil: number, limits: ClaimLimits) => Effect.Effect<ReadonlyArray<ClaimedDelivery>, StorageError>
  /**
   * Records a try of a claimed delivery and where it leaves it (a first try also marks when its tries
   * began). A delivery given up for good disables its endpoint with `reason` when the endpoint
   * delivered nothing since the delivery was first tried.
   */
  readonly settle: (
    delivery: ClaimedDelivery,
    attempt: Attempt,
    result: AttemptResult,
    reason: string
  ) => Effect.Effect<void, StorageError>
  /** A page of an endpoint's deliveries, newest first, after position `after` when given. */
  readonly deliveries: (
    team: TeamUid,
    uid: OutboundWebhookUid,
    query: { readonly limit: number; readonly after: number | null; readonly state: OutboundDeliveryState | undefined }
  ) => Effect.Effect<OutboundDeliveryPage, StorageError>
  /**
   * Queues a delivery of the endpoint again (due at `now`, its retry period afresh): `queued`, or
   * `pending` when it still was (left as it is), or `missing`.
   */
  readonly redeliver: (
    team: TeamUid,
    uid: OutboundWebhookUid,
    id: OutboundDeliveryId,
    now: number
  ) => Effect.Effect<"queued" | "pending" | "missing", StorageError>
  /** Queues again every failed delivery of the endpoint created at or after `since`; how many. */
  readonly redeliverFailed: (
    team: TeamUid,
    uid: OutboundWebhookUid,
    since: number,
    now: number
  ) => Effect.Effect<number, StorageError>
  /** How many of the team's deliveries created at or after `since` are in each state now, by endpoint. */
  readonly health: (team: TeamUid, since: number) => Effect.Effect<ReadonlyArray<DeliveryCount>, StorageError>
  /** Removes at most `limit` delivered or failed deliveries created before `before`; how many. */
  readonly prune: (before: number, limit: number) => Effect.Effect<number, StorageError>
}>() {}
