/**
 * The OutboundWebhookStore conformance suite: endpoints are the team's own and their secrets sealed
 * at rest; every write of a run of a team with an enabled endpoint leaves its change in the outbox
 * (created, then each change of state) and nothing for other teams; a change is handed out once;
 * a claim takes a run's deliveries to an endpoint in order, one at a time, never behind a change
 * not yet handed out, and a try is recorded only under its claim's lease; a delivery given up
 * disables an endpoint that delivered nothing meanwhile; the log pages newest first; deliveries
 * are queued again one by one or all failed since a time; a rotated-out secret signs until its
 * overlap ends.
 *
 * Claims and the outbox are global across teams: each case reads only its own team's.
 */
import { expect, layer } from "@effect/vitest"
import { DateTime, Effect, Option, Redacted } from "effect"
import type { Layer } from "effect"
import type { OutboundDeliveryId, OutboundWebhookUid, PrincipalUid, TeamUid } from "../src/domain/Ids.js"
import { OutboundWebhook, type OutboundEventType } from "../src/domain/OutboundWebhook.js"
import { RunItem } from "../src/domain/Run.js"
import type { RunState } from "../src/domain/RunState.js"
import { SecretName } from "../src/domain/Secret.js"
import { type Attempt, type ClaimedDelivery, OutboundWebhookStore, type StoredOutboundWebhook } from "../src/ports/OutboundWebhookStore.js"
import { RunStore, type StoredRun } from "../src/ports/RunStore.js"
import { creationEvents, makeRun, uid } from "./RunStoreConformance.js"
import { RawStorage, type Stores } from "./Stores.js"

const T0 = Date.UTC(2026, 10, 1)
const HOUR = 3_600_000

/** An endpoint of the team (its settings as `overrides` say), created at T0 by a new principal. */
export const endpoint = (team: TeamUid, overrides: Partial<ConstructorParameters<typeof OutboundWebhook>[0]> = {}): StoredOutboundWebhook => ({
  item: new OutboundWebhook({
    uid: uid<OutboundWebhookUid>(),
    name: null,
    url: "https://hooks.example.com/agent-runs",
    description: "",
    events: ["run.created", "run.state_changed", "run.succeeded"],
    filters: {},
    enabled: true,
    disabled_reason: null,
    disabled_at: null,
    previous_secret_expires_at: null,
    secret_name: null,
    created_at: DateTime.unsafeMake(T0),
    updated_at: DateTime.unsafeMake(T0),
    ...overrides
  }),
  team_uid: team,
  creator_uid: uid<PrincipalUid>()
})

const secret = (name: string) => Redacted.make(`whsec_${Buffer.from(`${name}-${Math.random()}`).toString("base64")}`)

/** A fresh team with one endpoint. */
const teamWithEndpoint = (overrides: Partial<ConstructorParameters<typeof OutboundWebhook>[0]> = {}) =>
  Effect.gen(function*() {
    const team = uid<TeamUid>()
    const webhook = endpoint(team, overrides)
    const key = secret("first")
    yield* (yield* OutboundWebhookStore).create(webhook, key)
    return { team, webhook, key }
  })

/** Creates a QUEUED run of the team. */
const createRun = (team: TeamUid) =>
  Effect.gen(function*() {
    const run = makeRun({ team, creator: uid<PrincipalUid>(), state: "QUEUED", created_at: T0, updated_at: T0 })
    yield* (yield* RunStore).create([{ run, events: creationEvents(run) }])
    return run
  })

/** Moves a run to `state` (a plain guarded update). */
const move = (run: StoredRun, state: RunState, at: number) =>
  Effect.gen(function*() {
    const moved: StoredRun = { ...run, item: new RunItem({ ...run.item, state, updated_at: DateTime.unsafeMake(at) }) }
    yield* (yield* RunStore).update(run.item.run_id, { state: run.item.state }, moved, [])
    return moved
  })

/** The team's changes in the outbox. */
const changesOf = (team: TeamUid) =>
  Effect.map(Effect.flatMap(OutboundWebhookStore, (s) => s.changes(10_000)), (all) => all.filter((c) => c.team_uid === team))

/** Hands out the team's changes: one delivery per change to `to`, typed by the change. */
const fanOutAll = (team: TeamUid, to: OutboundWebhookUid, now: number) =>
  Effect.gen(function*() {
    const store = yield* OutboundWebhookStore
    const ids: Array<OutboundDeliveryId> = []
    for (const change of yield* changesOf(team)) {
      const type: OutboundEventType = change.previous_state === null ? "run.created" : "run.state_changed"
      const id = uid<OutboundDeliveryId>()
      ids.push(id)
      expect(yield* store.fanOut(change.change_id, [{ delivery_id: id, webhook_uid: to, event_type: type, body: `{"state":"${change.state}"}` }], now)).toBe(true)
    }
    return ids
  })

/** Claims what is due at `now` and keeps the team's. */
const claimOf = (team: TeamUid, now: number) =>
  Effect.map(
    Effect.flatMap(OutboundWebhookStore, (s) => s.claim(now, now + 60_000, { limit: 1_000, perEndpoint: 1_000, perTeam: 1_000 })),
    (all) => all.filter((d) => d.team_uid === team)
  )

const attempt = (at: number, status: number | null): Attempt => ({
  at,
  status,
  error: status === null ? "connection refused" : null,
  latency_ms: 12,
  response_excerpt: status === null ? null : "ok"
})

const deliver = (d: ClaimedDelivery, at: number) =>
  Effect.flatMap(OutboundWebhookStore, (s) => s.settle(d, attempt(at, 204), { _tag: "Delivered" }, "unused"))

/** A team's endpoint with two deliveries of one run (its creation, then a change), the first claimed. */
const firstOfTwo = Effect.gen(function*() {
  const store = yield* OutboundWebhookStore
  const { team, webhook } = yield* teamWithEndpoint()
  const run = yield* createRun(team)
  yield* move(run, "CLAIMED", T0 + 1)
  const [created, changed] = yield* fanOutAll(team, webhook.item.uid, T0 + 10)
  const [d] = yield* claimOf(team, T0 + 20)
  return { store, team, webhook, created: created!, changed: changed!, d: d! }
})

/** Registers the suite against one adapter's stores. */
export const outboundWebhookConformance = <E>(storeLayer: Layer.Layer<Stores | RawStorage, E>): void => {
  layer(storeLayer, { excludeTestServices: true, timeout: "60 seconds" })("OutboundWebhookStore", (it) => {
    it.effect("endpoints are their team's own; updates, rotations and removals apply; secrets are sealed at rest", () =>
      Effect.gen(function*() {
        const store = yield* OutboundWebhookStore
        const { key, team, webhook } = yield* teamWithEndpoint()
        const other = uid<TeamUid>()
        expect(Option.getOrThrow(yield* store.get(team, webhook.item.uid)).item).toEqual(webhook.item)
        expect(yield* store.get(other, webhook.item.uid)).toEqual(Option.none())
        expect((yield* store.list(team)).map((w) => w.item.uid)).toEqual([webhook.item.uid])
        expect(yield* store.list(other)).toEqual([])
        expect(yield* (yield* RawStorage).contains(Redacted.value(key))).toBe(false)

        const changed = {
          ...webhook,
          item: new OutboundWebhook({ ...webhook.item, name: "alerts", url: "https://other.example.com/x", events: ["run.failed"] })
        }
        expect(yield* store.update(changed, "off")).toBe(true)
        expect(yield* store.update({ ...changed, team_uid: other }, "off")).toBe(false)
        expect(Option.getOrThrow(yield* store.get(team, webhook.item.uid)).item).toEqual(changed.item)

        const rotated = secret("second")
        const fromTeamSecret = { ...changed, item: new OutboundWebhook({ ...changed.item, secret_name: SecretName.make("OUT_SIGNING") }) }
        expect(yield* store.rotate(fromTeamSecret, rotated, T0 + HOUR)).toBe(true)
        expect(yield* (yield* RawStorage).contains(Redacted.value(rotated))).toBe(false)
        expect(Option.getOrThrow(yield* store.get(team, webhook.item.uid)).item.secret_name).toBe("OUT_SIGNING")
        expect(yield* store.remove(other, webhook.item.uid)).toBe(false)
        expect(yield* store.remove(team, webhook.item.uid)).toBe(true)
        expect(yield* store.get(team, webhook.item.uid)).toEqual(Option.none())
        expect(yield* store.remove(team, webhook.item.uid)).toBe(false)
      }))

    it.effect("writes of a run leave its changes in the outbox for teams with an enabled endpoint only", () =>
      Effect.gen(function*() {
        const { team } = yield* teamWithEndpoint()
        const run = yield* createRun(team)
        const claimed = yield* move(run, "CLAIMED", T0 + 1)
        yield* move(claimed, "INPROGRESS", T0 + 2)
        expect((yield* changesOf(team)).map((c) => [c.run_id, c.previous_state, c.state, c.occurred_at])).toEqual([
          [run.item.run_id, null, "QUEUED", T0],
          [run.item.run_id, "QUEUED", "CLAIMED", T0 + 1],
          [run.item.run_id, "CLAIMED", "INPROGRESS", T0 + 2]
        ])
        const quiet = uid<TeamUid>()
        yield* createRun(quiet)
        const off = yield* teamWithEndpoint({ enabled: false })
        yield* createRun(off.team)
        expect(yield* changesOf(quiet)).toEqual([])
        expect(yield* changesOf(off.team)).toEqual([])
      }))

    it.effect("a change is handed out once; a run's deliveries are claimed in order, one at a time", () =>
      Effect.gen(function*() {
        const store = yield* OutboundWebhookStore
        const { team, webhook } = yield* teamWithEndpoint()
        const run = yield* createRun(team)
        const first = (yield* changesOf(team))[0]!
        const [created] = yield* fanOutAll(team, webhook.item.uid, T0 + 10)
        expect(yield* store.fanOut(first.change_id, [], T0 + 10)).toBe(false)
        yield* move(run, "CLAIMED", T0 + 11)
        // The second change is still in the outbox; the first delivery alone is claimable.
        const one = yield* claimOf(team, T0 + 20)
        expect(one.map((d) => d.delivery_id)).toEqual([created])
        expect(one[0]).toMatchObject({ url: webhook.item.url, run_id: run.item.run_id, attempts: 0, retry_from: T0 + 10 })
        expect(one[0]!.secrets).toHaveLength(1)
        const [changedId] = yield* fanOutAll(team, webhook.item.uid, T0 + 21)
        // Leased, and the next waits behind it.
        expect(yield* claimOf(team, T0 + 22)).toEqual([])
        yield* deliver(one[0]!, T0 + 23)
        expect((yield* claimOf(team, T0 + 24)).map((d) => d.delivery_id)).toEqual([changedId])
      }))

    it.effect("a retried delivery waits for its time and holds back the run's next; a stale lease records nothing", () =>
      Effect.gen(function*() {
        const { changed, created, d, store, team, webhook } = yield* firstOfTwo
        yield* store.settle(d, attempt(T0 + 21, 500), { _tag: "Retry", next_attempt_at: T0 + 1_000 }, "unused")
        expect(yield* claimOf(team, T0 + 999)).toEqual([])
        // The lease expired and another dispatcher took it; the first one's late report is ignored.
        const [again] = yield* claimOf(team, T0 + 1_000)
        expect(again!.delivery_id).toBe(created)
        expect(again!.attempts).toBe(1)
        yield* store.settle(d, attempt(T0 + 1_001, 204), { _tag: "Delivered" }, "unused")
        const page = yield* store.deliveries(team, webhook.item.uid, { limit: 10, after: null, state: undefined })
        expect(page.deliveries.map((x) => [x.delivery_id, x.state, x.attempts, x.last_status])).toEqual([
          [changed, "pending", 0, null],
          [created, "pending", 1, 500]
        ])
        yield* deliver(again!, T0 + 1_002)
        expect((yield* claimOf(team, T0 + 1_003)).map((x) => x.delivery_id)).toEqual([changed])
      }))

    it.effect("giving up disables an endpoint that delivered nothing meanwhile, failing what was pending", () =>
      Effect.gen(function*() {
        const { changed, created, d, store, team, webhook } = yield* firstOfTwo
        yield* store.settle(d, attempt(T0 + 21, null), { _tag: "GiveUp" }, "failing for a day")
        const off = Option.getOrThrow(yield* store.get(team, webhook.item.uid)).item
        expect(off).toMatchObject({ enabled: false, disabled_reason: "failing for a day" })
        expect(DateTime.toEpochMillis(off.disabled_at!)).toBe(T0 + 21)
        const page = yield* store.deliveries(team, webhook.item.uid, { limit: 10, after: null, state: "failed" })
        expect(page.deliveries.map((x) => [x.delivery_id, x.last_error])).toEqual([
          [changed, "failing for a day"],
          [created, "connection refused"]
        ])
        expect(yield* claimOf(team, T0 + 30)).toEqual([])

        // Turned on again and the failed redelivered, in order.
        yield* store.update({ ...webhook, item: new OutboundWebhook({ ...off, enabled: true, disabled_reason: null, disabled_at: null }) }, "")
        expect(yield* store.redeliverFailed(team, webhook.item.uid, T0 + 10, T0 + 40)).toBe(2)
        const [first] = yield* claimOf(team, T0 + 40)
        expect(first!.delivery_id).toBe(created)
        expect(first!.retry_from).toBe(T0 + 40)
        yield* store.settle(first!, attempt(T0 + 41, 503), { _tag: "Retry", next_attempt_at: T0 + 45 }, "unused")
        // Another run's delivery succeeds after the first try: giving the delivery up leaves the endpoint on.
        yield* createRun(team)
        const [otherId] = yield* fanOutAll(team, webhook.item.uid, T0 + 42)
        const [other] = yield* claimOf(team, T0 + 43)
        expect(other!.delivery_id).toBe(otherId)
        yield* deliver(other!, T0 + 44)
        const [again] = yield* claimOf(team, T0 + 45)
        expect(again).toMatchObject({ delivery_id: created, attempts: 1, retry_from: T0 + 41 })
        yield* store.settle(again!, attempt(T0 + 46, 503), { _tag: "GiveUp" }, "failing")
        expect(Option.getOrThrow(yield* store.get(team, webhook.item.uid)).item.enabled).toBe(true)
        // Queued again by id: due at once, and still ahead of the run's next.
        expect(yield* store.redeliver(team, webhook.item.uid, created, T0 + 50)).toBe("queued")
        expect(yield* store.redeliver(team, webhook.item.uid, created, T0 + 50)).toBe("pending")
        expect(yield* store.redeliver(uid<TeamUid>(), webhook.item.uid, created, T0 + 50)).toBe("missing")
        const [redelivered] = yield* claimOf(team, T0 + 50)
        expect(redelivered!.delivery_id).toBe(created)
        yield* deliver(redelivered!, T0 + 51)
        expect((yield* claimOf(team, T0 + 52)).map((x) => x.delivery_id)).toEqual([changed])
      }))

    it.effect("a claim keeps each endpoint and each team within their tries in flight, first due first", () =>
      Effect.gen(function*() {
        // A day before the other cases' times: only this case's deliveries are due.
        const B = T0 - 24 * HOUR
        const store = yield* OutboundWebhookStore
        const { team, webhook } = yield* teamWithEndpoint()
        const second = endpoint(team)
        yield* store.create(second, secret("second"))
        for (let i = 0; i < 4; i++) yield* createRun(team)
        const toFirst = yield* fanOutAll(team, webhook.item.uid, B + 10)
        // Four runs' deliveries to the first endpoint, then two more runs' to the second.
        for (let i = 0; i < 2; i++) yield* createRun(team)
        const toSecond = yield* fanOutAll(team, second.item.uid, B + 20)
        const take = (now: number) =>
          Effect.map(store.claim(now, now + 60_000, { limit: 10, perEndpoint: 2, perTeam: 3 }), (all) => all.filter((d) => d.team_uid === team))
        const ids = (claimed: ReadonlyArray<ClaimedDelivery>) => claimed.map((d) => d.delivery_id)
        const taken = yield* take(B + 30)
        expect(ids(taken)).toEqual([toFirst[0], toFirst[1], toSecond[0]])
        // Three in flight: the team is at its cap.
        expect(yield* take(B + 31)).toEqual([])
        // One try ended: room for one more of the team, and the first endpoint has room again.
        yield* deliver(taken[0]!, B + 32)
        expect(ids(yield* take(B + 33))).toEqual([toFirst[2]])
      }))

    it.effect("an endpoint at its cap with a long backlog does not hold back another team's deliveries", () =>
      Effect.gen(function*() {
        // Two days before the other cases' times: only this case's deliveries are due.
        const B = T0 - 48 * HOUR
        const store = yield* OutboundWebhookStore
        const busy = yield* teamWithEndpoint()
        for (let i = 0; i < 15; i++) yield* createRun(busy.team)
        yield* fanOutAll(busy.team, busy.webhook.item.uid, B + 10)
        const other = yield* teamWithEndpoint()
        yield* createRun(other.team)
        const [theirs] = yield* fanOutAll(other.team, other.webhook.item.uid, B + 20)
        const limits = { limit: 1, perEndpoint: 1, perTeam: 1 }
        const first = yield* store.claim(B + 30, B + 30 + 60_000, limits)
        expect(first.map((d) => d.team_uid)).toEqual([busy.team])
        // The busy endpoint is at its cap; its 14 due deliveries, older, fill no window.
        const second = yield* store.claim(B + 31, B + 31 + 60_000, limits)
        expect(second.map((d) => d.delivery_id)).toEqual([theirs])
      }))

    it.effect("a change is handed to endpoints still enabled; old delivered and failed deliveries are pruned, pending kept", () =>
      Effect.gen(function*() {
        const store = yield* OutboundWebhookStore
        const { team, webhook } = yield* teamWithEndpoint()
        yield* createRun(team)
        yield* store.update({ ...webhook, item: new OutboundWebhook({ ...webhook.item, enabled: false }) }, "off")
        // The change was recorded while it was on; handed out after, it yields nothing for it.
        yield* fanOutAll(team, webhook.item.uid, T0 + 10)
        expect((yield* store.deliveries(team, webhook.item.uid, { limit: 10, after: null, state: undefined })).deliveries).toEqual([])

        const live = yield* teamWithEndpoint()
        for (let i = 0; i < 3; i++) yield* createRun(live.team)
        const [done, failed, waiting] = yield* fanOutAll(live.team, live.webhook.item.uid, T0 + 10)
        const claimed = yield* claimOf(live.team, T0 + 20)
        const byId = (id: OutboundDeliveryId | undefined) => claimed.find((d) => d.delivery_id === id)!
        yield* deliver(byId(done), T0 + 21)
        yield* store.settle(byId(failed), attempt(T0 + 21, 500), { _tag: "GiveUp" }, "unused")
        yield* store.settle(byId(waiting), attempt(T0 + 21, 500), { _tag: "Retry", next_attempt_at: T0 + HOUR }, "unused")
        // Other teams' old deliveries may go too: only this team's are checked.
        yield* store.prune(T0 + 11, 1_000_000)
        const left = yield* store.deliveries(live.team, live.webhook.item.uid, { limit: 10, after: null, state: undefined })
        expect(left.deliveries.map((d) => d.delivery_id)).toEqual([waiting])
      }))

    it.effect("the log pages newest first; a rotated-out secret signs until its overlap ends", () =>
      Effect.gen(function*() {
        const store = yield* OutboundWebhookStore
        const { team, webhook } = yield* teamWithEndpoint()
        for (let i = 0; i < 3; i++) yield* createRun(team)
        const ids = yield* fanOutAll(team, webhook.item.uid, T0 + 10)
        const first = yield* store.deliveries(team, webhook.item.uid, { limit: 2, after: null, state: undefined })
        expect(first.deliveries.map((d) => d.delivery_id)).toEqual([ids[2], ids[1]])
        expect(yield* store.health(team, T0 + 10)).toEqual([{ webhook_uid: webhook.item.uid, state: "pending", count: 3 }])
        expect(yield* store.health(team, T0 + 11)).toEqual([])
        const rest = yield* store.deliveries(team, webhook.item.uid, { limit: 2, after: first.next, state: undefined })
        expect(rest.deliveries.map((d) => d.delivery_id)).toEqual([ids[0]])
        expect(rest.next).toBeNull()
        expect((yield* store.deliveries(uid<TeamUid>(), webhook.item.uid, { limit: 2, after: null, state: undefined })).deliveries).toEqual([])

        yield* store.rotate(webhook, secret("next"), T0 + HOUR)
        const during = yield* claimOf(team, T0 + 20)
        expect(during.map((d) => d.secrets.length)).toEqual([2, 2, 2])
        const after = yield* claimOf(team, T0 + HOUR + 60_000)
        expect(after.map((d) => d.secrets.length)).toEqual([1, 1, 1])
        expect(Redacted.value(after[0]!.secrets[0]!)).toBe(Redacted.value(during[0]!.secrets[0]!))
      }))
  })
}
