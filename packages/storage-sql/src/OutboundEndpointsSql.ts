/**
 * The endpoints of OutboundWebhookStoreSql.ts: one row of `outbound_webhooks` each (migration
 * 0020), its current and rotated-out secrets sealed under the server key and bound to the endpoint
 * (the two slots share the binding: a rotation moves the current ciphertext to `previous_secret`
 * as is). Turning an endpoint off fails its pending deliveries in the same transaction.
 */
import type { OutboundWebhookUid, TeamUid } from "@agent-runs/core/domain/Ids"
import { PrincipalUid, TeamUid as TeamUidSchema } from "@agent-runs/core/domain/Ids"
import { OutboundWebhook } from "@agent-runs/core/domain/OutboundWebhook"
import type { StoredOutboundWebhook } from "@agent-runs/core/ports/OutboundWebhookStore"
import * as TrustedCodec from "@agent-runs/core/domain/TrustedCodec"
import type { SqlClient } from "@effect/sql"
import type { Redacted } from "effect"
import { Effect, Option, Schema } from "effect"
import * as Crypto from "./Crypto.js"
import { bool, Bytes, decodeRows, iso, json, millis } from "./internal/Catalog.js"
import * as Rows from "./Rows.js"

/** The row an endpoint's secrets are bound to. */
export const secretAad = (uid: string) => Crypto.aad("outbound-webhook", uid)

const EndpointRow = Schema.Struct({
  uid: Schema.String,
  team_uid: TeamUidSchema,
  creator_uid: PrincipalUid,
  name: Schema.NullOr(Schema.String),
  url: Schema.String,
  description: Schema.String,
  events: Schema.String,
  filters: Schema.String,
  enabled: Rows.Bool,
  disabled_reason: Schema.NullOr(Schema.String),
  disabled_at: Schema.NullOr(Rows.Millis),
  previous_secret_until: Schema.NullOr(Rows.Millis),
  secret_name: Schema.NullOr(Schema.String),
  created_at: Rows.Millis,
  updated_at: Rows.Millis
})

const decodeEndpoint = TrustedCodec.decoder(OutboundWebhook)

const fromRow = (row: typeof EndpointRow.Type) =>
  Effect.map(
    decodeEndpoint({
      uid: row.uid,
      name: row.name,
      url: row.url,
      description: row.description,
      events: JSON.parse(row.events),
      filters: JSON.parse(row.filters),
      enabled: row.enabled,
      disabled_reason: row.disabled_reason,
      disabled_at: row.disabled_at === null ? null : iso(row.disabled_at),
      previous_secret_expires_at: row.previous_secret_until === null ? null : iso(row.previous_secret_until),
      secret_name: row.secret_name,
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at)
    }),
    (item): StoredOutboundWebhook => ({ item, team_uid: row.team_uid, creator_uid: row.creator_uid })
  )

const ENDPOINT_COLUMNS = `uid, team_uid, creator_uid, name, url, description, events, filters, enabled, disabled_reason,
  disabled_at, previous_secret_until, secret_name, created_at, updated_at`

/** The secrets that sign a delivery: the current one, then the rotated-out one while it overlaps. */
export const SecretsRow = Schema.Struct({
  secret: Bytes,
  previous_secret: Schema.NullOr(Bytes),
  previous_secret_until: Schema.NullOr(Rows.Millis)
})

/** The endpoint operations over `sql`, sealing with the ring's current key, opening with any. */
export const endpointOps = (sql: SqlClient.SqlClient, ring: Crypto.KeyRing) => {
  const key = ring.key
  const decode = (rows: ReadonlyArray<unknown>) => Effect.flatMap(decodeRows(EndpointRow)(rows), Effect.forEach(fromRow))

  /** The columns an update writes. */
  const fields = (w: StoredOutboundWebhook) => ({
    name: w.item.name,
    url: w.item.url,
    description: w.item.description,
    events: json(w.item.events),
    filters: json(w.item.filters),
    enabled: bool(sql, w.item.enabled),
    disabled_reason: w.item.disabled_reason,
    disabled_at: w.item.disabled_at === null ? null : millis(w.item.disabled_at),
    updated_at: millis(w.item.updated_at)
  })

  const create = (w: StoredOutboundWebhook, secret: Redacted.Redacted<string>) =>
    Effect.gen(function* () {
      const sealed = yield* Crypto.seal(key, secret, secretAad(w.item.uid))
      yield* sql`INSERT INTO outbound_webhooks ${
        sql.insert({
          uid: w.item.uid,
          team_uid: w.team_uid,
          creator_uid: w.creator_uid,
          ...fields(w),
          secret: sealed,
          previous_secret: null,
          previous_secret_until: null,
          secret_name: w.item.secret_name,
          last_success_at: null,
          created_at: millis(w.item.created_at)
        })
      }`
    })

  const list = (team: TeamUid) =>
    sql`SELECT ${sql.literal(ENDPOINT_COLUMNS)} FROM outbound_webhooks WHERE team_uid = ${team}
      ORDER BY created_at, uid`.pipe(Effect.flatMap(decode))

  const get = (team: TeamUid, uid: OutboundWebhookUid) =>
    sql`SELECT ${sql.literal(ENDPOINT_COLUMNS)} FROM outbound_webhooks WHERE team_uid = ${team} AND uid = ${uid}`.pipe(
      Effect.flatMap(decode),
      Effect.map((rows) => Option.fromNullable(rows[0]))
    )

  /** Fails the endpoint's pending deliveries with `reason` (it was turned off). */
  const failPending = (uid: string, reason: string) =>
    sql`UPDATE outbound_deliveries SET state = 'failed', last_error = ${reason}, next_attempt_at = NULL, lease_until = NULL
      WHERE webhook_uid = ${uid} AND state = 'pending'`

  const update = (next: StoredOutboundWebhook, reason: string) =>
    sql.withTransaction(Effect.gen(function* () {
      const updated = yield* sql`UPDATE outbound_webhooks SET ${sql.update(fields(next))}
        WHERE team_uid = ${next.team_uid} AND uid = ${next.item.uid} RETURNING uid`
      if (updated.length === 0) return false
      if (!next.item.enabled) yield* failPending(next.item.uid, reason)
      return true
    }))

  const rotate = (next: StoredOutboundWebhook, secret: Redacted.Redacted<string>, previousUntil: number) =>
    Effect.gen(function* () {
      const sealed = yield* Crypto.seal(key, secret, secretAad(next.item.uid))
      const updated = yield* sql`UPDATE outbound_webhooks SET previous_secret = secret, secret = ${sealed},
        previous_secret_until = ${previousUntil}, secret_name = ${next.item.secret_name},
        updated_at = ${millis(next.item.updated_at)}
        WHERE team_uid = ${next.team_uid} AND uid = ${next.item.uid} RETURNING uid`
      return updated.length > 0
    })

  const remove = (team: TeamUid, uid: OutboundWebhookUid) =>
    sql.withTransaction(Effect.gen(function* () {
      const removed = yield* sql`DELETE FROM outbound_webhooks WHERE team_uid = ${team} AND uid = ${uid} RETURNING uid`
      if (removed.length === 0) return false
      yield* sql`DELETE FROM outbound_deliveries WHERE webhook_uid = ${uid}`
      return true
    }))

  /** The opened secrets of an endpoint's row that sign at `now`, newest first. */
  const secretsOf = (row: typeof SecretsRow.Type, uid: string, now: number) =>
    Effect.gen(function* () {
      const current = yield* Crypto.openWith(ring, row.secret, secretAad(uid))
      if (row.previous_secret === null || row.previous_secret_until === null || row.previous_secret_until <= now) return [current]
      return [current, yield* Crypto.openWith(ring, row.previous_secret, secretAad(uid))]
    })

  return { create, list, get, update, rotate, remove, failPending, secretsOf } as const
}
