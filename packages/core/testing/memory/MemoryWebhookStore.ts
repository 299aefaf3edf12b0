/**
 * WebhookStore in memory, with the semantics of `WebhookStoreSql.ts`: a webhook's secret is held
 * sealed under (uid, secret version); deleted webhooks stay, invisible; `update` is a
 * compare-and-set on the secret version and never revives a deleted webhook (of two rotations
 * from the same version, one wins). The delivery log pages newest first by (received_at,
 * delivery_id); pruning ranks ACCEPTED, DUPLICATE and the rejections each apart.
 *
 * Sealing and opening are asynchronous (Web Crypto); a write seals first and then checks and
 * writes in one synchronous step, so the compare-and-set stays atomic.
 */
import type { Context } from "effect"
import { DateTime, Effect, Option } from "effect"
import type { DeliveryId, TeamUid, WebhookUid } from "../../src/domain/Ids.js"
import { compareCodePoints } from "../../src/domain/RunQuery.js"
import type { Delivery, DeliveryCounts } from "../../src/domain/Webhook.js"
import { StaleWrite, type StorageError } from "../../src/ports/Storage.js"
import { type DeliveryPage, type LogRetention, type StoredWebhook, WebhookStore } from "../../src/ports/WebhookStore.js"
import { aad, type Sealer } from "./MemoryCrypto.js"
import {
  countDelivery,
  insertDelivery,
  isLogged,
  isRejected,
  newestFirst,
  removeDeliveries,
  trimRejected
} from "./MemoryDeliveries.js"
import { type MemoryState, type SealedWebhook, storageError } from "./MemoryState.js"

/** The entry a webhook's secret is bound to: the webhook and the secret's version. */
const entryAad = (uid: WebhookUid, secretVersion: number) => aad("webhook", uid, secretVersion)

const whole = (n: number) => Math.max(0, Math.floor(n))

/** WebhookStore over the shared state, sealing secrets with `sealer`. */
export const makeMemoryWebhookStore = (state: MemoryState, sealer: Sealer): Context.Tag.Service<WebhookStore> => {
  /** The webhook as held, its secret sealed. */
  const seal = (webhook: StoredWebhook, operation: string) =>
    Effect.map(
      webhook.secret === null
        ? Effect.succeed(null)
        : Effect.mapError(
          sealer.seal(webhook.secret, entryAad(webhook.item.uid, webhook.state.secretVersion)),
          (cause) => storageError(operation, cause)
        ),
      (secret): SealedWebhook => ({
        item: webhook.item,
        team_uid: webhook.team_uid,
        creator_uid: webhook.creator_uid,
        state: { status: webhook.state.status, secretVersion: webhook.state.secretVersion },
        secret
      })
    )

  /** The webhook as given, its secret opened. */
  const open = (held: SealedWebhook, operation: string) =>
    Effect.map(
      held.secret === null
        ? Effect.succeed(null)
        : Effect.mapError(
          sealer.open(held.secret, entryAad(held.item.uid, held.state.secretVersion)),
          (cause) => storageError(operation, cause)
        ),
      (secret): StoredWebhook => ({
        item: held.item,
        team_uid: held.team_uid,
        creator_uid: held.creator_uid,
        state: held.state,
        secret
      })
    )

  /** A webhook that is not deleted. */
  const live = (uid: WebhookUid): SealedWebhook | undefined => {
    const found = state.webhooks.get(uid)
    return found === undefined || found.state.status === "deleted" ? undefined : found
  }

  const create = (webhook: StoredWebhook) =>
    Effect.flatMap(seal(webhook, "WebhookStore.create"), (held) =>
      Effect.suspend((): Effect.Effect<void, StorageError> => {
        if (state.webhooks.has(held.item.uid)) {
          return Effect.fail(storageError("WebhookStore.create", `webhook ${held.item.uid} exists already`))
        }
        state.webhooks.set(held.item.uid, held)
        return Effect.void
      }))

  const get = (uid: WebhookUid) =>
    Effect.suspend(() => {
      const held = live(uid)
      return held === undefined ? Effect.succeedNone : Effect.asSome(open(held, "WebhookStore.get"))
    })

  const list = (team: TeamUid) =>
    Effect.suspend(() =>
      Effect.forEach(
        [...state.webhooks.values()]
          .filter((w) => w.team_uid === team && w.state.status !== "deleted")
          .sort((a, b) => compareCodePoints(a.item.name, b.item.name) || compareCodePoints(a.item.uid, b.item.uid)),
        (held) => open(held, "WebhookStore.list")
      )
    )

  const update = (next: StoredWebhook, expectedSecretVersion: number) =>
    Effect.flatMap(seal(next, "WebhookStore.update"), (held) =>
      Effect.suspend((): Effect.Effect<void, StaleWrite> => {
        const stored = live(held.item.uid)
        if (stored === undefined || stored.state.secretVersion !== expectedSecretVersion) {
          return Effect.fail(new StaleWrite({ what: `webhook ${held.item.uid}` }))
        }
        state.webhooks.set(held.item.uid, held)
        return Effect.void
      }))

  const logDelivery = (webhook: WebhookUid, delivery: Delivery, keepRejected?: number) =>
    Effect.suspend((): Effect.Effect<void, StorageError> => {
      if (isLogged(state, delivery.delivery_id)) {
        return Effect.fail(storageError("WebhookStore.logDelivery", `delivery ${delivery.delivery_id} is logged already`))
      }
      insertDelivery(state, webhook, delivery)
      countDelivery(state, webhook, delivery)
      if (isRejected(delivery) && keepRejected !== undefined) trimRejected(state, webhook, keepRejected)
      return Effect.void
    })

  const deliveryCounts = (webhook: WebhookUid) =>
    Effect.sync((): DeliveryCounts => {
      const counts = state.deliveryLogs.get(webhook)?.counts
      const of = (outcome: Delivery["outcome"]) => counts?.get(outcome)?.count ?? 0
      return {
        ACCEPTED: of("ACCEPTED"),
        DUPLICATE: of("DUPLICATE"),
        REJECTED_AUTH: of("REJECTED_AUTH"),
        REJECTED_INVALID_JSON: of("REJECTED_INVALID_JSON"),
        REJECTED_TOO_LARGE: of("REJECTED_TOO_LARGE")
      }
    })

  /** A webhook's log, newest first. */
  const logNewestFirst = (webhook: WebhookUid): Array<Delivery> =>
    [...(state.deliveryLogs.get(webhook)?.entries.values() ?? [])].sort(newestFirst)

  const deliveries = (
    webhook: WebhookUid,
    limit: number,
    before: { readonly received_at: number; readonly delivery_id: DeliveryId } | null
  ) =>
    Effect.sync((): DeliveryPage => {
      const size = whole(limit)
      const older = before === null
        ? logNewestFirst(webhook)
        : logNewestFirst(webhook).filter((d) => {
          const received = DateTime.toEpochMillis(d.received_at)
          return received < before.received_at ||
            (received === before.received_at && compareCodePoints(d.delivery_id, before.delivery_id) < 0)
        })
      const page = older.slice(0, size)
      return { deliveries: page, next: older.length > size ? (page[page.length - 1] ?? null) : null }
    })

  const delivery = (webhook: WebhookUid, id: DeliveryId) =>
    Effect.sync(() => Option.fromNullable(state.deliveryLogs.get(webhook)?.entries.get(id)))

  const prune = (webhook: WebhookUid, retention: LogRetention) =>
    Effect.sync(() => {
      // Ranked newest first within ACCEPTED, within DUPLICATE, and within every rejection together.
      const positions = new Map<string, number>()
      const removed = new Set<DeliveryId>()
      for (const d of logNewestFirst(webhook)) {
        const kind = isRejected(d) ? "REJECTED" : d.outcome
        const position = (positions.get(kind) ?? 0) + 1
        positions.set(kind, position)
        const beyond = kind === "REJECTED"
          ? position > whole(retention.rejected)
          : position > whole(retention.max) ||
            (position > whole(retention.keep) && DateTime.toEpochMillis(d.received_at) < retention.since)
        if (beyond) removed.add(d.delivery_id)
      }
      return removeDeliveries(state, webhook, removed)
    })

  return WebhookStore.of({ create, get, forDelivery: get, list, update, logDelivery, deliveryCounts, deliveries, delivery, prune })
}
