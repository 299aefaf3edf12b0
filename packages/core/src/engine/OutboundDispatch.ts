/**
 * The outbound webhook dispatcher (docs/outbound-webhooks.md), one per replica, two loops: one hands
 * the outbox's changes out as deliveries; the other keeps up to `concurrency` tries running, signed
 * in the Standard Webhooks format, claiming more as tries end. Replicas share the work through the
 * store: a change is handed out once, a delivery is claimed by one replica for a lease (longer than a
 * try can take; each try starts as it is claimed), a run's deliveries to an endpoint go one at a
 * time in order, and no endpoint or team has more than `perEndpoint` or `perTeam` tries in flight
 * across replicas, so one team's slow receivers cannot take every try (OutboundWebhookStore.ts). A
 * replica that dies mid-try leaves its claim to expire and the delivery is tried again: delivery is
 * at least once, and receivers de-duplicate by `webhook-id`. A try whose outcome cannot be recorded
 * is logged and left to its lease; the other tries go on.
 *
 * A handed-out event carries the run as `GET /agent/runs/{id}` shows it at that moment (within a
 * pass of the change, unless the service was down); a run gone by then yields no delivery.
 * Supervised (Health.ts): a failing pass says so in `/readyz` and retries.
 */
import { Clock, Effect, FiberSet, Layer, Random, Redacted } from "effect"
import { Ids, OutboundDeliveryId } from "../domain/Ids.js"
import type { TeamUid } from "../domain/Ids.js"
import {
  DEFAULT_RETRY,
  eventBody,
  eventTypesOf,
  factsOf,
  retryAt,
  type RetryPolicy,
  wants
} from "../domain/OutboundWebhook.js"
import * as Signatures from "../domain/Signatures.js"
import { OutboundSender } from "../ports/OutboundSender.js"
import {
  type AttemptResult,
  type ClaimedDelivery,
  type NewDelivery,
  OutboundWebhookStore,
  type OutboxChange,
  type StoredOutboundWebhook,
  triesSince
} from "../ports/OutboundWebhookStore.js"
import { RunStore } from "../ports/RunStore.js"
import type { Health } from "./Health.js"
import { supervise } from "./Health.js"

/** How the dispatcher works (the server's settings). */
export interface DispatchSettings {
  /** The wait between passes when a pass found less than a batch to do. */
  readonly everyMs: number
  /** Changes handed out per pass. */
  readonly batch: number
  /** How long a claimed delivery is this replica's: longer than a try can take. */
  readonly leaseMs: number
  /** Tries running at once on this replica. */
  readonly concurrency: number
  /** Tries in flight at once to one endpoint, across replicas. */
  readonly perEndpoint: number
  /** Tries in flight at once to one team's endpoints, across replicas. */
  readonly perTeam: number
  readonly retry: RetryPolicy
}

export const DEFAULT_DISPATCH: DispatchSettings = {
  everyMs: 1_000,
  batch: 100,
  leaseMs: 60_000,
  concurrency: 32,
  perEndpoint: 4,
  perTeam: 8,
  retry: DEFAULT_RETRY
}

const encoder = new TextEncoder()

/** The Standard Webhooks headers of `body`, signed with each secret (newest first, space-separated). */
export const signedHeaders = (
  secrets: ReadonlyArray<Redacted.Redacted<string>>,
  id: string,
  now: number,
  body: string
) =>
  Effect.gen(function*() {
    const bytes = encoder.encode(body)
    const each = yield* Effect.forEach(secrets, (secret) =>
      Signatures.sign("standard_webhooks", { secret: Redacted.value(secret), body: bytes, now, id }))
    return {
      ...each[0]!,
      "webhook-signature": each.map((headers) => headers["webhook-signature"]).join(" "),
      "content-type": "application/json",
      "user-agent": "agent-runs-webhooks"
    }
  })

/** Why an endpoint was turned off by the dispatcher. */
export const disabledReason = (policy: RetryPolicy): string =>
  `every delivery failed for ${Math.round(policy.give_up_after_ms / 60_000)} minutes; ` +
  "turn the endpoint on again to resume, and redeliver what failed"

/** The deliveries of one change to the endpoints that want it. */
const deliveriesOf = (change: OutboxChange, endpoints: ReadonlyArray<StoredOutboundWebhook>, runJson: string) =>
  Effect.gen(function*() {
    const ids = yield* Ids
    const facts = factsOf(JSON.parse(runJson))
    const deliveries: Array<NewDelivery> = []
    for (const endpoint of endpoints) {
      for (const type of eventTypesOf(change)) {
        if (!wants(endpoint.item, type, facts)) continue
        deliveries.push({
          delivery_id: OutboundDeliveryId.make(yield* ids.uid22),
          webhook_uid: endpoint.item.uid,
          event_type: type,
          body: eventBody(type, change.occurred_at, change, runJson)
        })
      }
    }
    return deliveries
  })

/** Hands out the oldest changes; the wait before the next pass (none while there may be more). */
export const fanOutPass = (settings: DispatchSettings) =>
  Effect.gen(function*() {
    const store = yield* OutboundWebhookStore
    const runs = yield* RunStore
    const changes = yield* store.changes(settings.batch)
    const endpointsOf = new Map<TeamUid, ReadonlyArray<StoredOutboundWebhook>>()
    for (const change of changes) {
      let endpoints = endpointsOf.get(change.team_uid)
      if (endpoints === undefined) {
        endpoints = (yield* store.list(change.team_uid)).filter((e) => e.item.enabled)
        endpointsOf.set(change.team_uid, endpoints)
      }
      const run = endpoints.length === 0 ? undefined : yield* runs.getJson(change.run_id)
      const deliveries = run === undefined || run._tag === "None" ? [] : yield* deliveriesOf(change, endpoints, run.value.json)
      yield* store.fanOut(change.change_id, deliveries, yield* Clock.currentTimeMillis)
    }
    return changes.length === settings.batch ? 0 : settings.everyMs
  })

/** Where a try of `delivery` answered `status` (or reached nothing) leaves it. */
const resultOf = (settings: DispatchSettings, delivery: ClaimedDelivery, status: number | null, at: number) =>
  Effect.map(Random.next, (random): AttemptResult => {
    if (status !== null && status >= 200 && status < 300) return { _tag: "Delivered" }
    const next = retryAt(settings.retry, delivery.attempts + 1, triesSince(delivery, at), at, random)
    return next === undefined ? { _tag: "GiveUp" } : { _tag: "Retry", next_attempt_at: next }
  })

const statusError = (status: number): string | null =>
  status >= 200 && status < 300
    ? null
    : status >= 300 && status < 400
    ? `the endpoint answered ${status}; redirects are not followed`
    : `the endpoint answered ${status}`

/** One try of a claimed delivery, recorded. */
export const tryDelivery = (settings: DispatchSettings, delivery: ClaimedDelivery) =>
  Effect.gen(function*() {
    const sender = yield* OutboundSender
    const store = yield* OutboundWebhookStore
    const at = yield* Clock.currentTimeMillis
    const headers = yield* signedHeaders(delivery.secrets, delivery.delivery_id, at, delivery.body)
    const sent = yield* Effect.either(sender.send({ url: delivery.url, headers, body: delivery.body }))
    const latency = Math.max(0, (yield* Clock.currentTimeMillis) - at)
    const status = sent._tag === "Right" ? sent.right.status : null
    const attempt = {
      at,
      status,
      error: sent._tag === "Right" ? statusError(sent.right.status) : sent.left.message,
      latency_ms: latency,
      response_excerpt: sent._tag === "Right" ? sent.right.excerpt : null
    }
    const result = yield* resultOf(settings, delivery, status, at)
    yield* store.settle(delivery, attempt, result, disabledReason(settings.retry))
  }).pipe(
    Effect.catchAllCause((cause) =>
      Effect.logWarning(`outbound webhooks: a try of delivery ${delivery.delivery_id} could not be recorded; it is tried again`, cause)
    )
  )

/**
 * Claims what the free tries allow and starts them in `running`; the wait before the next pass
 * (none when every free try found a delivery).
 */
export const deliveryPass = (settings: DispatchSettings, running: FiberSet.FiberSet) =>
  Effect.gen(function*() {
    const free = settings.concurrency - (yield* FiberSet.size(running))
    if (free <= 0) return Math.min(settings.everyMs, 50)
    const store = yield* OutboundWebhookStore
    const now = yield* Clock.currentTimeMillis
    const claimed = yield* store.claim(now, now + settings.leaseMs, {
      limit: free,
      perEndpoint: settings.perEndpoint,
      perTeam: settings.perTeam
    })
    for (const delivery of claimed) yield* FiberSet.run(running, tryDelivery(settings, delivery))
    return claimed.length === free ? 0 : settings.everyMs
  })

/** The dispatcher, for the layer's lifetime. */
export const layer = (
  settings: DispatchSettings = DEFAULT_DISPATCH
): Layer.Layer<never, never, OutboundWebhookStore | RunStore | OutboundSender | Ids | Health> =>
  Layer.scopedDiscard(Effect.gen(function*() {
    const running = yield* FiberSet.make()
    yield* Effect.forkScoped(supervise("outbound webhook events", fanOutPass(settings), settings.everyMs))
    yield* Effect.forkScoped(supervise("outbound webhook deliveries", deliveryPass(settings, running), settings.everyMs))
  }))
