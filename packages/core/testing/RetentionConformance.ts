/**
 * The RetentionStore conformance suite: ended runs past the time go, oldest first and a batch at
 * most, with everything the store holds of them, and their blobs queued; live, newer and other
 * teams' runs stay; a team's deliveries and payloads past the time go, their identities freed and
 * payload blobs queued; queued keys are forgotten once removed.
 *
 * The blob queue is global across teams: each case reads only its own keys.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Option } from "effect"
import type { Layer } from "effect"
import { agentStateKey, agentStateUploadKey, eventPayloadKey, runImagesKey, transcriptKey } from "../src/domain/BlobKeys.js"
import type { PrincipalUid, TeamUid } from "../src/domain/Ids.js"
import { Delivery } from "../src/domain/Webhook.js"
import type { RunState } from "../src/domain/RunState.js"
import { RetentionStore } from "../src/ports/RetentionStore.js"
import { RunStore, type StoredRun } from "../src/ports/RunStore.js"
import { WebhookStore } from "../src/ports/WebhookStore.js"
import { makeDelivery, makeWebhook } from "./CatalogConformance.js"
import { creationEvents, makeRun, uid } from "./RunStoreConformance.js"
import type { Stores } from "./Stores.js"

const T0 = Date.UTC(2026, 10, 1)
const DAY = 86_400_000

/** Creates a run of the team in `state`, last changed `daysAgo` days before T0; its creation events. */
const runOf = (team: TeamUid, state: RunState, daysAgo: number) =>
  Effect.gen(function*() {
    const at = T0 - daysAgo * DAY
    const run = makeRun({ team, creator: uid<PrincipalUid>(), state, created_at: at - 1000, updated_at: at })
    const events = creationEvents(run)
    yield* (yield* RunStore).create([{ run, events }])
    return { run, executions: events.map((e) => e.execution_id) }
  })

const exists = (run: StoredRun) => Effect.map(Effect.flatMap(RunStore, (s) => s.get(run.item.run_id)), Option.isSome)

/** The queued keys among `keys`. */
const queued = (keys: ReadonlyArray<string>) =>
  Effect.map(Effect.flatMap(RetentionStore, (s) => s.blobsToRemove(100_000)), (all) => keys.filter((k) => all.includes(k)))

export const retentionConformance = <E>(storeLayer: Layer.Layer<Stores, E>) => {
  layer(storeLayer, { excludeTestServices: true, timeout: "60 seconds" })("RetentionStore", (it) => {
    it.effect("removes a team's ended runs past the time, oldest first, a batch at most, and queues their blobs", () =>
      Effect.gen(function*() {
        const store = yield* RetentionStore
        const team = uid<TeamUid>()
        const oldest = yield* runOf(team, "SUCCEEDED", 10)
        const failed = yield* runOf(team, "FAILED", 9)
        const cancelled = yield* runOf(team, "CANCELLED", 8)
        const live = yield* runOf(team, "INPROGRESS", 20)
        const queuedRun = yield* runOf(team, "QUEUED", 30)
        const recent = yield* runOf(team, "SUCCEEDED", 1)
        const other = yield* runOf(uid<TeamUid>(), "SUCCEEDED", 10)
        const before = T0 - 7 * DAY

        expect(yield* store.expireRuns(team, before, 2)).toBe(2)
        expect(yield* exists(oldest.run)).toBe(false)
        expect(yield* exists(failed.run)).toBe(false)
        expect(yield* exists(cancelled.run)).toBe(true)
        expect(yield* store.expireRuns(team, before, 2)).toBe(1)
        expect(yield* store.expireRuns(team, before, 2)).toBe(0)
        for (const kept of [live, queuedRun, recent, other]) expect(yield* exists(kept.run)).toBe(true)
        expect(yield* (yield* RunStore).timeline(oldest.run.item.run_id, 0)).toEqual([])

        const id = oldest.run.item.run_id
        const keys = [transcriptKey(id), agentStateKey(id), runImagesKey(id), ...oldest.executions.map((e) => agentStateUploadKey(id, e))]
        expect(yield* queued(keys)).toEqual(keys)
        expect(yield* queued([transcriptKey(live.run.item.run_id), transcriptKey(other.run.item.run_id)])).toEqual([])
        yield* store.blobsRemoved(keys)
        expect(yield* queued(keys)).toEqual([])
      }))

    it.effect("a run whose parent is still kept stays; it goes once the parent is gone", () =>
      Effect.gen(function*() {
        const store = yield* RetentionStore
        const team = uid<TeamUid>()
        const parent = yield* runOf(team, "SUCCEEDED", 10)
        const at = T0 - 20 * DAY
        const child = makeRun({ team, creator: uid<PrincipalUid>(), state: "SUCCEEDED", created_at: at - 1000, updated_at: at, parent: parent.run })
        yield* (yield* RunStore).create([{ run: child, events: creationEvents(child) }])
        // Only the parent goes in the first batch, though the child is older.
        expect(yield* store.expireRuns(team, T0 - 7 * DAY, 10)).toBe(1)
        expect(yield* exists(parent.run)).toBe(false)
        expect(yield* exists(child)).toBe(true)
        expect(yield* store.expireRuns(team, T0 - 7 * DAY, 10)).toBe(1)
        expect(yield* exists(child)).toBe(false)
        yield* store.blobsRemoved(yield* store.blobsToRemove(100_000))
      }))

    it.effect("removes one ended run now, whatever its age; not a live one, nor one under a kept run; queued keys forgotten or deferred", () =>
      Effect.gen(function*() {
        const store = yield* RetentionStore
        const team = uid<TeamUid>()
        const ended = yield* runOf(team, "FAILED", 0)
        const live = yield* runOf(team, "QUEUED", 0)
        const keys = yield* store.removeRun(ended.run.item.run_id)
        expect(keys).toContain(transcriptKey(ended.run.item.run_id))
        expect(yield* exists(ended.run)).toBe(false)
        expect((yield* Effect.flip(store.removeRun(ended.run.item.run_id)))._tag).toBe("StaleWrite")
        expect((yield* Effect.flip(store.removeRun(live.run.item.run_id)))._tag).toBe("StaleWrite")
        expect(yield* exists(live.run)).toBe(true)
        // Nor one under a run that is kept.
        const child = makeRun({ team, creator: uid<PrincipalUid>(), state: "SUCCEEDED", parent: ended.run })
        const parent = yield* runOf(team, "SUCCEEDED", 0)
        const under = makeRun({ team, creator: uid<PrincipalUid>(), state: "SUCCEEDED", parent: parent.run })
        yield* (yield* RunStore).create([child, under].map((run) => ({ run, events: creationEvents(run) })))
        expect((yield* Effect.flip(store.removeRun(under.item.run_id)))._tag).toBe("StaleWrite")
        expect(yield* exists(under)).toBe(true)
        yield* store.removeRun(child.item.run_id)
        yield* store.blobsRemoved(yield* store.blobsToRemove(100_000))
      }))

    it.effect("removes a team's deliveries and payloads past the time, freeing their identities, and queues the payloads' blobs", () =>
      Effect.gen(function*() {
        const store = yield* RetentionStore
        const runs = yield* RunStore
        const webhooks = yield* WebhookStore
        const team = uid<TeamUid>()
        const webhook = makeWebhook({ team })
        const otherWebhook = makeWebhook({ team: uid<TeamUid>() })
        yield* webhooks.create(webhook)
        yield* webhooks.create(otherWebhook)
        const accept = (hook: typeof webhook, daysAgo: number) =>
          Effect.gen(function*() {
            const delivery = makeDelivery(T0 - daysAgo * DAY, "ACCEPTED")
            yield* runs.create([], { _tag: "Delivery", webhook_uid: hook.item.uid, identity: delivery.identity, delivery })
            return delivery
          })
        const old = yield* accept(webhook, 40)
        // A payload a live run still gets stays.
        const inUse = yield* accept(webhook, 40)
        const waiting = makeRun({ team, creator: uid<PrincipalUid>(), state: "QUEUED", source: "WEBHOOK", metadata: { delivery_id: inUse.delivery_id } })
        yield* runs.create([{ run: waiting, events: creationEvents(waiting) }])
        const rejected = makeDelivery(T0 - 35 * DAY)
        yield* webhooks.logDelivery(webhook.item.uid, rejected)
        const fresh = yield* accept(webhook, 2)
        const others = yield* accept(otherWebhook, 40)
        const logged = (hook: typeof webhook, d: Delivery) => Effect.map(webhooks.delivery(hook.item.uid, d.delivery_id), Option.isSome)

        expect(yield* store.expireDeliveries(team, T0 - 30 * DAY, 10)).toBe(3)
        expect(yield* logged(webhook, old)).toBe(false)
        expect(yield* logged(webhook, rejected)).toBe(false)
        expect(yield* logged(webhook, fresh)).toBe(true)
        expect(yield* logged(otherWebhook, others)).toBe(true)
        expect(yield* queued([old, inUse, fresh, others].map((d) => eventPayloadKey(d.delivery_id))))
          .toEqual([eventPayloadKey(old.delivery_id)])
        // Its identity is free again: the same delivery sent again is new.
        const again = new Delivery({ ...makeDelivery(T0, "ACCEPTED"), identity: old.identity })
        yield* runs.create([], { _tag: "Delivery", webhook_uid: webhook.item.uid, identity: old.identity, delivery: again })
        expect(yield* logged(webhook, again)).toBe(true)
        yield* store.blobsRemoved([eventPayloadKey(old.delivery_id)])
      }))

    it.effect("a payload outlives its log entry until its own time", () =>
      Effect.gen(function*() {
        const store = yield* RetentionStore
        const webhooks = yield* WebhookStore
        const team = uid<TeamUid>()
        const webhook = makeWebhook({ team })
        yield* webhooks.create(webhook)
        const delivery = makeDelivery(T0 - 10 * DAY, "ACCEPTED")
        yield* (yield* RunStore).create([], { _tag: "Delivery", webhook_uid: webhook.item.uid, identity: delivery.identity, delivery })
        // The log's own bounds drop the entry; the payload stays recorded.
        yield* webhooks.prune(webhook.item.uid, { keep: 0, since: T0, max: 10, rejected: 0 })
        expect(yield* store.expireDeliveries(team, T0 - 20 * DAY, 10)).toBe(0)
        expect(yield* store.expireDeliveries(team, T0 - 5 * DAY, 10)).toBe(1)
        const key = eventPayloadKey(delivery.delivery_id)
        expect(yield* queued([key])).toEqual([key])
        yield* store.blobsRemoved([key])
      }))
  })
}
