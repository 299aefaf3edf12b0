/**
 * OutboundWebhookStore over SqlClient: the endpoints (OutboundEndpointsSql.ts), and the outbox and
 * deliveries (OutboundDeliveriesSql.ts). The outbox itself is written by triggers on `runs`
 * (migration 0020), in the transaction of each write of a run.
 */
import { OutboundWebhookStore } from "@agent-runs/core/ports/OutboundWebhookStore"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { traced } from "./internal/Catalog.js"
import { deliveryOps } from "./OutboundDeliveriesSql.js"
import { endpointOps } from "./OutboundEndpointsSql.js"
import { StorageKey } from "./StorageKey.js"

const op = (name: string) => traced(`OutboundWebhookStore.${name}`)

/** OutboundWebhookStore, needing `SqlClient` and `StorageKey`. */
export const layer = Layer.effect(
  OutboundWebhookStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const e = endpointOps(sql, yield* StorageKey)
    const d = deliveryOps(sql, e)
    return OutboundWebhookStore.of({
      create: (webhook, secret) => op("create")(e.create(webhook, secret)),
      list: (team) => op("list")(e.list(team)),
      get: (team, uid) => op("get")(e.get(team, uid)),
      update: (next, reason) => op("update")(e.update(next, reason)),
      rotate: (next, secret, until) => op("rotate")(e.rotate(next, secret, until)),
      remove: (team, uid) => op("remove")(e.remove(team, uid)),
      changes: (limit) => op("changes")(d.changes(limit)),
      fanOut: (changeId, deliveries, now) => op("fanOut")(d.fanOut(changeId, deliveries, now)),
      claim: (now, leaseUntil, limits) => op("claim")(d.claim(now, leaseUntil, limits)),
      settle: (delivery, attempt, result, reason) => op("settle")(d.settle(delivery, attempt, result, reason)),
      deliveries: (team, uid, query) => op("deliveries")(d.deliveries(team, uid, query)),
      redeliver: (team, uid, id, now) => op("redeliver")(d.redeliver(team, uid, id, now)),
      redeliverFailed: (team, uid, since, now) => op("redeliverFailed")(d.redeliverFailed(team, uid, since, now)),
      health: (team, since) => op("health")(d.health(team, since)),
      prune: (before, limit) => op("prune")(d.prune(before, limit))
    })
  })
)
