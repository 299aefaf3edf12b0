/**
 * WebhookStore over SqlClient. A webhook is one row with its state-machine status and secret
 * version; its secret (when it has its own) is sealed with AES-256-GCM and bound to (uid, secret
 * version), so neither another webhook's ciphertext nor an older one of its own opens there.
 * Deleted webhooks keep their row and are invisible. `update` is a compare-and-set on the secret
 * version and never revives a deleted webhook: of two rotations from the same version, one wins.
 *
 * The delivery log is paged newest first by (received_at, delivery_id); pruning ranks the entries
 * within ACCEPTED, within DUPLICATE and within the rejections (one window function), removes what
 * `LogRetention` does not keep, and with it the de-duplication identities those held (ON DELETE
 * CASCADE). Each logged delivery is counted per outcome (`delivery_counts`), in the transaction
 * that logs it; a rejected one may trim the webhook's rejected entries in that transaction too.
 *
 * `forDelivery` answers from a bounded in-memory cache (ReadCache.ts) while its entry is fresh; a
 * webhook's creation or update empties it, here at once and on every replica (CachedReads.ts).
 */
import * as TrustedCodec from "@agent-runs/core/domain/TrustedCodec"
import type { DeliveryId, WebhookUid } from "@agent-runs/core/domain/Ids"
import { PrincipalUid, TeamUid } from "@agent-runs/core/domain/Ids"
import { StaleWrite } from "@agent-runs/core/ports/Storage"
import { WebhookStore } from "@agent-runs/core/ports/WebhookStore"
import type { LogRetention, StoredWebhook } from "@agent-runs/core/ports/WebhookStore"
import { Delivery, Webhook } from "@agent-runs/core/domain/Webhook"
import type { DeliveryOutcome } from "@agent-runs/core/domain/Webhook"
import { WebhookStatus } from "@agent-runs/core/domain/WebhookStateMachine"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option, Schema } from "effect"
import { cachedRead, cacheSettings, invalidation } from "./CachedReads.js"
import * as Crypto from "./Crypto.js"
import { countDelivery, insertDelivery, REJECTED_OUTCOMES, trimRejected } from "./DeliveriesSql.js"
import { bool, Bytes, decodeRows, iso, JsonColumn, millis, operation } from "./internal/Catalog.js"
import * as ReadCache from "./ReadCache.js"
import * as Rows from "./Rows.js"
import { StorageKey } from "./StorageKey.js"

/** The row a webhook's secret is bound to: the webhook and the secret's version. */
export const rowAad = (uid: string, secretVersion: number) => Crypto.aad("webhook", uid, secretVersion)

const WebhookRow = Schema.Struct({
  uid: Schema.String,
  team_uid: TeamUid,
  creator_uid: PrincipalUid,
  name: Schema.String,
  auth_mode: Schema.String,
  signature_scheme: Schema.NullOr(Schema.String),
  secret_name: Schema.NullOr(Schema.String),
  delivery_id_header: Schema.NullOr(Schema.String),
  enabled: Rows.Bool,
  ingress_url: Schema.String,
  created_at: Rows.Millis,
  updated_at: Rows.Millis,
  status: WebhookStatus,
  secret_version: Schema.Number,
  secret: Schema.NullOr(Bytes)
})

const DeliveryRow = Schema.Struct({
  delivery_id: Schema.String,
  received_at: Rows.Millis,
  size_bytes: Schema.Number,
  identity: Schema.String,
  outcome: Schema.String,
  run_ids: JsonColumn,
  /** SQL NULL when absent; the text `null` when the payload is the JSON null. */
  payload: Schema.NullOr(Schema.String)
})

const parsePayload = Schema.decode(JsonColumn)

const CountRow = Schema.Struct({ outcome: Schema.String, count: Rows.Integer })

/** A logged delivery, decoded with the core Schema (`payload` present exactly when stored). */
const toDelivery = (row: typeof DeliveryRow.Type) =>
  Effect.flatMap(
    row.payload === null ? Effect.succeed({}) : Effect.map(parsePayload(row.payload), (payload) => ({ payload })),
    (payload) =>
      TrustedCodec.decoder(Delivery)({
        delivery_id: row.delivery_id,
        received_at: iso(row.received_at),
        size_bytes: row.size_bytes,
        identity: row.identity,
        outcome: row.outcome,
        run_ids: row.run_ids,
        ...payload
      })
  )
const decodeDeliveries = (rows: ReadonlyArray<unknown>) =>
  Effect.flatMap(decodeRows(DeliveryRow)(rows), Effect.forEach(toDelivery))

/** WebhookStore, needing `SqlClient`, `StorageKey` and `CacheChanges` (and `ReadCacheConfig` when not the default). */
export const layer = Layer.scoped(
  WebhookStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const ring = yield* StorageKey
    const key = ring.key
    const settings = yield* cacheSettings
    const cache = ReadCache.make<StoredWebhook>(settings)
    const { changing } = yield* invalidation([cache])

    /** The stored webhook of a row, its item decoded with the core Schema and its secret opened. */
    const fromRow = (row: typeof WebhookRow.Type) =>
      Effect.gen(function* () {
        const item = yield* TrustedCodec.decoder(Webhook)({
          uid: row.uid,
          name: row.name,
          auth_mode: row.auth_mode,
          signature_scheme: row.signature_scheme,
          ...(row.secret_name === null ? {} : { secret_name: row.secret_name }),
          ...(row.delivery_id_header === null ? {} : { delivery_id_header: row.delivery_id_header }),
          enabled: row.enabled,
          ingress_url: row.ingress_url,
          created_at: iso(row.created_at),
          updated_at: iso(row.updated_at)
        })
        const secret = row.secret === null ? null : yield* Crypto.openWith(ring, row.secret, rowAad(row.uid, row.secret_version))
        const stored: StoredWebhook = {
          item,
          team_uid: row.team_uid,
          creator_uid: row.creator_uid,
          state: { status: row.status, secretVersion: row.secret_version },
          secret
        }
        return stored
      })

    const decodeWebhooks = (rows: ReadonlyArray<unknown>) =>
      Effect.flatMap(decodeRows(WebhookRow)(rows), Effect.forEach(fromRow))

    /** Every column but the uid, the secret sealed for its version. */
    const columns = (w: StoredWebhook) =>
      Effect.gen(function* () {
        const item = yield* Schema.encode(Webhook)(w.item)
        const secret = w.secret === null ? null : yield* Crypto.seal(key, w.secret, rowAad(w.item.uid, w.state.secretVersion))
        return {
          team_uid: w.team_uid,
          creator_uid: w.creator_uid,
          name: item.name,
          auth_mode: item.auth_mode,
          signature_scheme: item.signature_scheme,
          secret_name: item.secret_name ?? null,
          delivery_id_header: item.delivery_id_header ?? null,
          enabled: bool(sql, item.enabled),
          ingress_url: item.ingress_url,
          created_at: millis(w.item.created_at),
          updated_at: millis(w.item.updated_at),
          status: w.state.status,
          secret_version: w.state.secretVersion,
          secret
        }
      })

    const create = Effect.fn("WebhookStore.create")(
      function* (webhook: StoredWebhook) {
        const row = yield* columns(webhook)
        yield* sql`INSERT INTO webhooks ${sql.insert({ uid: webhook.item.uid, ...row })}`
      },
      changing,
      operation("WebhookStore.create")
    )

    const get = Effect.fn("WebhookStore.get")(
      function* (uid: WebhookUid) {
        const rows = yield* sql`SELECT * FROM webhooks WHERE uid = ${uid} AND status <> 'deleted'`.pipe(
          Effect.flatMap(decodeWebhooks)
        )
        return Option.fromNullable(rows[0])
      },
      operation("WebhookStore.get")
    )
    const forDelivery = (uid: WebhookUid) => cachedRead(cache, uid, get(uid))

    const list = Effect.fn("WebhookStore.list")(
      function* (team: TeamUid) {
        return yield* sql`SELECT * FROM webhooks WHERE team_uid = ${team} AND status <> 'deleted'
          ORDER BY name, uid`.pipe(Effect.flatMap(decodeWebhooks))
      },
      operation("WebhookStore.list")
    )

    const update = Effect.fn("WebhookStore.update")(
      function* (next: StoredWebhook, expectedSecretVersion: number) {
        const row = yield* columns(next)
        const updated = yield* sql`UPDATE webhooks SET ${sql.update(row)}
          WHERE uid = ${next.item.uid} AND secret_version = ${expectedSecretVersion} AND status <> 'deleted'
          RETURNING uid`
        if (updated.length === 0) return yield* new StaleWrite({ what: `webhook ${next.item.uid}` })
      },
      changing,
      operation("WebhookStore.update")
    )

    const logDelivery = Effect.fn("WebhookStore.logDelivery")(
      function* (webhook: WebhookUid, delivery: Delivery, keepRejected?: number) {
        const rejected = (REJECTED_OUTCOMES as ReadonlyArray<string>).includes(delivery.outcome)
        yield* sql.withTransaction(
          Effect.gen(function* () {
            yield* insertDelivery(webhook, delivery)
            yield* countDelivery(webhook, delivery)
            if (rejected && keepRejected !== undefined) yield* trimRejected(webhook, keepRejected)
          })
        ).pipe(Effect.provideService(SqlClient.SqlClient, sql))
      },
      operation("WebhookStore.logDelivery")
    )

    const deliveryCounts = Effect.fn("WebhookStore.deliveryCounts")(
      function* (webhook: WebhookUid) {
        const rows = yield* sql`SELECT outcome, count FROM delivery_counts WHERE webhook_uid = ${webhook}`.pipe(
          Effect.flatMap(decodeRows(CountRow))
        )
        const counts: Record<DeliveryOutcome, number> = {
          ACCEPTED: 0,
          DUPLICATE: 0,
          REJECTED_AUTH: 0,
          REJECTED_INVALID_JSON: 0,
          REJECTED_TOO_LARGE: 0
        }
        for (const row of rows) if (row.outcome in counts) counts[row.outcome as DeliveryOutcome] = row.count
        return counts
      },
      operation("WebhookStore.deliveryCounts")
    )

    const deliveries = Effect.fn("WebhookStore.deliveries")(
      function* (
        webhook: WebhookUid,
        limit: number,
        before: { readonly received_at: number; readonly delivery_id: DeliveryId } | null
      ) {
        const size = Math.max(0, Math.floor(limit))
        const older = before === null
          ? sql``
          : sql`AND (received_at < ${before.received_at}
              OR (received_at = ${before.received_at} AND delivery_id < ${before.delivery_id}))`
        const rows = yield* sql`SELECT * FROM deliveries WHERE webhook_uid = ${webhook} ${older}
          ORDER BY received_at DESC, delivery_id DESC LIMIT ${size + 1}`.pipe(Effect.flatMap(decodeDeliveries))
        const page = rows.slice(0, size)
        return { deliveries: page, next: rows.length > size ? (page[page.length - 1] ?? null) : null }
      },
      operation("WebhookStore.deliveries")
    )

    const delivery = Effect.fn("WebhookStore.delivery")(
      function* (webhook: WebhookUid, id: DeliveryId) {
        const rows = yield* sql`SELECT * FROM deliveries WHERE webhook_uid = ${webhook} AND delivery_id = ${id}`.pipe(
          Effect.flatMap(decodeDeliveries)
        )
        return Option.fromNullable(rows[0])
      },
      operation("WebhookStore.delivery")
    )

    const prune = Effect.fn("WebhookStore.prune")(
      function* (webhook: WebhookUid, retention: LogRetention) {
        const whole = (n: number) => Math.max(0, Math.floor(n))
        // Ranked within ACCEPTED, within DUPLICATE, and within every rejection together.
        const removed = yield* sql`DELETE FROM deliveries WHERE delivery_id IN (
            SELECT delivery_id FROM (
              SELECT delivery_id, received_at, outcome, ROW_NUMBER() OVER (
                PARTITION BY CASE WHEN outcome IN ('ACCEPTED', 'DUPLICATE') THEN outcome ELSE 'REJECTED' END
                ORDER BY received_at DESC, delivery_id DESC
              ) AS position
              FROM deliveries WHERE webhook_uid = ${webhook}
            ) ranked
            WHERE CASE WHEN outcome IN ('ACCEPTED', 'DUPLICATE')
              THEN position > ${whole(retention.max)}
                OR (position > ${whole(retention.keep)} AND received_at < ${retention.since})
              ELSE position > ${whole(retention.rejected)} END
          )
          RETURNING delivery_id`
        return removed.length
      },
      operation("WebhookStore.prune")
    )

    return WebhookStore.of({ create, get, forDelivery, list, update, logDelivery, deliveryCounts, deliveries, delivery, prune })
  })
)
