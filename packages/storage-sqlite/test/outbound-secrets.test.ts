/**
 * An outbound webhook whose sealed signing secret does not open (a damaged row, another server key)
 * holds back its own deliveries only: a claim hands out the other endpoints' and leaves its
 * deliveries pending, untried, for a later claim.
 */
import type { OutboundDeliveryId, PrincipalUid, TeamUid } from "@agent-runs/core/domain/Ids"
import { OutboundWebhookStore } from "@agent-runs/core/ports/OutboundWebhookStore"
import { RunStore } from "@agent-runs/core/ports/RunStore"
import { creationEvents, makeRun, outboundEndpoint, uid } from "@agent-runs/core/testing"
import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Redacted } from "effect"
import { storageLayer } from "./harness.js"

const T0 = Date.UTC(2026, 11, 1)

const endpoint = (team: TeamUid) => outboundEndpoint(team, { events: ["run.created"] })

layer(storageLayer)("outbound webhooks: a secret that does not open", (it) => {
  it.effect("holds back that endpoint's deliveries only", () =>
    Effect.gen(function*() {
      const store = yield* OutboundWebhookStore
      const team = uid<TeamUid>()
      const [damaged, healthy] = [endpoint(team), endpoint(team)]
      for (const w of [damaged, healthy]) yield* store.create(w, Redacted.make(`whsec_${Buffer.from("k").toString("base64")}`))
      const run = makeRun({ team, creator: uid<PrincipalUid>(), state: "QUEUED", created_at: T0, updated_at: T0 })
      yield* (yield* RunStore).create([{ run, events: creationEvents(run) }])
      const [change] = yield* store.changes(10)
      const ids = [uid<OutboundDeliveryId>(), uid<OutboundDeliveryId>()]
      yield* store.fanOut(change!.change_id, [damaged, healthy].map((w, i) => ({
        delivery_id: ids[i]!,
        webhook_uid: w.item.uid,
        event_type: "run.created" as const,
        body: "{}"
      })), T0 + 1)
      const sql = yield* SqlClient.SqlClient
      yield* sql`UPDATE outbound_webhooks SET secret = ${new Uint8Array(40)} WHERE uid = ${damaged.item.uid}`

      const claimed = yield* store.claim(T0 + 2, T0 + 60_000, { limit: 10, perEndpoint: 10, perTeam: 10 })
      expect(claimed.map((d) => d.delivery_id)).toEqual([ids[1]])
      const log = yield* store.deliveries(team, damaged.item.uid, { limit: 10, after: null, state: undefined })
      expect(log.deliveries.map((d) => [d.state, d.attempts])).toEqual([["pending", 0]])
    }))
})
