/**
 * OutboundWebhookStore in memory (the SQL adapter's OutboundWebhookStoreSql.ts): endpoints with
 * their secrets sealed, the outbox that the memory run store appends to as the SQL adapter's
 * triggers do (`recordChange`), and the deliveries. Claims follow the SQL adapter's order rule.
 */
import { DateTime, Effect, Option } from "effect"
import type { Redacted } from "effect"
import type { OutboundDeliveryId, OutboundWebhookUid, TeamUid } from "../../src/domain/Ids.js"
import {
  OutboundDelivery,
  type OutboundDeliveryState,
  type OutboundEventType,
  OutboundWebhook
} from "../../src/domain/OutboundWebhook.js"
import type { RunState } from "../../src/domain/RunState.js"
import type {
  Attempt,
  AttemptResult,
  ClaimedDelivery,
  NewDelivery,
  OutboxChange,
  StoredOutboundWebhook
} from "../../src/ports/OutboundWebhookStore.js"
import { type ClaimLimits, type DeliveryCount, OutboundWebhookStore, triesSince } from "../../src/ports/OutboundWebhookStore.js"

/** Candidates read per delivery a claim may take (the SQL adapter's). */
const CANDIDATES_PER_CLAIM = 10
import type { StoredRun } from "../../src/ports/RunStore.js"
import type { Sealer } from "./MemoryCrypto.js"
import { aad } from "./MemoryCrypto.js"
import type { MemoryState } from "./MemoryState.js"

/** An endpoint as held: its secrets sealed under its uid. */
export interface SealedOutboundWebhook {
  stored: StoredOutboundWebhook
  secret: Uint8Array
  previous: Uint8Array | null
  previousUntil: number | null
  lastSuccessAt: number | null
}

/** A delivery as held (the SQL adapter's `outbound_deliveries` row). */
export interface OutboundDeliveryRecord {
  readonly seq: number
  readonly delivery_id: OutboundDeliveryId
  readonly webhook_uid: OutboundWebhookUid
  readonly team_uid: TeamUid
  readonly change_id: number
  readonly run_id: OutboxChange["run_id"]
  readonly event_type: OutboundEventType
  readonly body: string
  readonly created_at: number
  state: OutboundDeliveryState
  attempts: number
  retry_from: number
  next_attempt_at: number | null
  lease_until: number | null
  last_attempt_at: number | null
  last_status: number | null
  last_error: string | null
  last_latency_ms: number | null
  last_response_excerpt: string | null
  delivered_at: number | null
}

/** The endpoints, the outbox and the deliveries. */
export interface MemoryOutbound {
  readonly webhooks: Map<OutboundWebhookUid, SealedOutboundWebhook>
  readonly changes: Array<OutboxChange>
  lastChange: number
  readonly deliveries: Array<OutboundDeliveryRecord>
  lastSeq: number
}

export const makeMemoryOutbound = (): MemoryOutbound => ({ webhooks: new Map(), changes: [], lastChange: 0, deliveries: [], lastSeq: 0 })

/** Records a change of `run` in the outbox when its team has an enabled endpoint (the SQL triggers). */
export const recordChange = (outbound: MemoryOutbound, run: StoredRun, previous: RunState | null): void => {
  const listening = [...outbound.webhooks.values()].some((w) => w.stored.team_uid === run.team_uid && w.stored.item.enabled)
  if (!listening) return
  outbound.lastChange += 1
  outbound.changes.push({
    change_id: outbound.lastChange,
    run_id: run.item.run_id,
    team_uid: run.team_uid,
    previous_state: previous,
    state: run.item.state,
    occurred_at: run.item.updated_at.epochMillis
  })
}

const utc = (ms: number) => DateTime.unsafeMake(ms)
const utcOrNull = (ms: number | null) => (ms === null ? null : utc(ms))

const toDelivery = (d: OutboundDeliveryRecord): OutboundDelivery =>
  new OutboundDelivery({
    delivery_id: d.delivery_id,
    event_type: d.event_type,
    run_id: d.run_id,
    state: d.state,
    attempts: d.attempts,
    created_at: utc(d.created_at),
    next_attempt_at: utcOrNull(d.next_attempt_at),
    last_attempt_at: utcOrNull(d.last_attempt_at),
    last_status: d.last_status,
    last_error: d.last_error,
    last_latency_ms: d.last_latency_ms,
    last_response_excerpt: d.last_response_excerpt,
    delivered_at: utcOrNull(d.delivered_at)
  })

/** The columns that queue a delivery again at `now`. */
const requeue = (d: OutboundDeliveryRecord, now: number) =>
  Object.assign(d, { state: "pending", attempts: 0, retry_from: now, next_attempt_at: now, lease_until: null, delivered_at: null })

/** OutboundWebhookStore over the shared state. */
export const makeMemoryOutboundWebhookStore = (state: MemoryState, sealer: Sealer) => {
  const o = state.outbound
  const owned = (team: TeamUid, uid: OutboundWebhookUid) => {
    const found = o.webhooks.get(uid)
    return found !== undefined && found.stored.team_uid === team ? found : undefined
  }
  const failPending = (uid: OutboundWebhookUid, reason: string) => {
    for (const d of o.deliveries) {
      if (d.webhook_uid !== uid || d.state !== "pending") continue
      Object.assign(d, { state: "failed", last_error: reason, next_attempt_at: null, lease_until: null })
    }
  }
  const seal = (secret: Redacted.Redacted<string>, uid: OutboundWebhookUid) => sealer.seal(secret, aad("outbound-webhook", uid))
  const open = (sealed: Uint8Array, uid: OutboundWebhookUid) => sealer.open(sealed, aad("outbound-webhook", uid))

  const create = (stored: StoredOutboundWebhook, secret: Redacted.Redacted<string>) =>
    Effect.map(Effect.orDie(seal(secret, stored.item.uid)), (sealed) => {
      o.webhooks.set(stored.item.uid, { stored, secret: sealed, previous: null, previousUntil: null, lastSuccessAt: null })
    })

  const list = (team: TeamUid) =>
    Effect.sync(() => [...o.webhooks.values()].filter((w) => w.stored.team_uid === team).map((w) => w.stored))

  const get = (team: TeamUid, uid: OutboundWebhookUid) => Effect.sync(() => Option.fromNullable(owned(team, uid)?.stored))

  const update = (next: StoredOutboundWebhook, reason: string) =>
    Effect.sync(() => {
      const found = owned(next.team_uid, next.item.uid)
      if (found === undefined) return false
      found.stored = { ...found.stored, item: next.item }
      if (!next.item.enabled) failPending(next.item.uid, reason)
      return true
    })

  const rotate = (next: StoredOutboundWebhook, secret: Redacted.Redacted<string>, previousUntil: number) =>
    Effect.map(Effect.orDie(seal(secret, next.item.uid)), (sealed) => {
      const found = owned(next.team_uid, next.item.uid)
      if (found === undefined) return false
      Object.assign(found, { previous: found.secret, previousUntil, secret: sealed })
      found.stored = { ...found.stored, item: next.item }
      return true
    })

  const remove = (team: TeamUid, uid: OutboundWebhookUid) =>
    Effect.sync(() => {
      if (owned(team, uid) === undefined) return false
      o.webhooks.delete(uid)
      const kept = o.deliveries.filter((d) => d.webhook_uid !== uid)
      o.deliveries.splice(0, o.deliveries.length, ...kept)
      return true
    })

  const changes = (limit: number) => Effect.sync(() => o.changes.slice(0, limit))

  const fanOut = (changeId: number, deliveries: ReadonlyArray<NewDelivery>, now: number) =>
    Effect.sync(() => {
      const at = o.changes.findIndex((c) => c.change_id === changeId)
      if (at < 0) return false
      const [change] = o.changes.splice(at, 1)
      for (const d of deliveries) {
        if (o.webhooks.get(d.webhook_uid)?.stored.item.enabled !== true) continue
        o.lastSeq += 1
        o.deliveries.push({
          ...d,
          seq: o.lastSeq,
          team_uid: change!.team_uid,
          change_id: changeId,
          run_id: change!.run_id,
          created_at: now,
          state: "pending",
          attempts: 0,
          retry_from: now,
          next_attempt_at: now,
          lease_until: null,
          last_attempt_at: null,
          last_status: null,
          last_error: null,
          last_latency_ms: null,
          last_response_excerpt: null,
          delivered_at: null
        })
      }
      return true
    })

  /** Whether a delivery waits behind an earlier one of its run (to its endpoint, or still in the outbox). */
  const blocked = (d: OutboundDeliveryRecord) =>
    o.deliveries.some((p) =>
      p.webhook_uid === d.webhook_uid && p.run_id === d.run_id && p.state === "pending" &&
      (p.change_id < d.change_id || (p.change_id === d.change_id && p.seq < d.seq))
    ) || o.changes.some((c) => c.run_id === d.run_id && c.change_id < d.change_id)

  const secretsOf = (w: SealedOutboundWebhook, now: number) =>
    Effect.gen(function* () {
      const uid = w.stored.item.uid
      const current = yield* open(w.secret, uid)
      if (w.previous === null || w.previousUntil === null || w.previousUntil <= now) return [current]
      return [current, yield* open(w.previous, uid)]
    }).pipe(Effect.orDie)

  /** Deliveries leased at `now`, by endpoint and by team. */
  const inFlight = (now: number) => {
    const endpoints = new Map<string, number>()
    const teams = new Map<string, number>()
    for (const d of o.deliveries) {
      if (d.lease_until === null || d.lease_until <= now) continue
      endpoints.set(d.webhook_uid, (endpoints.get(d.webhook_uid) ?? 0) + 1)
      teams.set(d.team_uid, (teams.get(d.team_uid) ?? 0) + 1)
    }
    return { endpoints, teams }
  }

  /** Counts up one per item by key, starting from `start`; keeps the items whose count stays within `cap`. */
  const capped = <A>(items: ReadonlyArray<A>, keyOf: (a: A) => string, start: Map<string, number>, cap: number) =>
    items.filter((item) => {
      const load = (start.get(keyOf(item)) ?? 0) + 1
      start.set(keyOf(item), load)
      return load <= cap
    })

  /** The SQL adapter's claim: the first candidates by due time within each endpoint's cap, then each team's. */
  const withinLimits = (candidates: ReadonlyArray<OutboundDeliveryRecord>, now: number, limits: ClaimLimits) => {
    const { endpoints, teams } = inFlight(now)
    const perEndpoint = capped(candidates, (d) => d.webhook_uid, endpoints, limits.perEndpoint)
    return capped(perEndpoint, (d) => d.team_uid, teams, limits.perTeam).slice(0, limits.limit)
  }

  const claim = (now: number, leaseUntil: number, limits: ClaimLimits) =>
    Effect.gen(function* () {
      const busy = inFlight(now)
      const candidates = o.deliveries
        .filter((d) =>
          (busy.endpoints.get(d.webhook_uid) ?? 0) < limits.perEndpoint && (busy.teams.get(d.team_uid) ?? 0) < limits.perTeam &&
          d.state === "pending" && d.next_attempt_at !== null && d.next_attempt_at <= now &&
          (d.lease_until === null || d.lease_until <= now) && o.webhooks.get(d.webhook_uid)?.stored.item.enabled === true &&
          !blocked(d)
        )
        .sort((a, b) => a.next_attempt_at! - b.next_attempt_at! || a.seq - b.seq)
        .slice(0, limits.limit * CANDIDATES_PER_CLAIM)
      const due = withinLimits(candidates, now, limits)
      for (const d of due) d.lease_until = leaseUntil
      const claimed: Array<ClaimedDelivery> = []
      for (const d of due.sort((a, b) => a.seq - b.seq)) {
        const w = o.webhooks.get(d.webhook_uid)!
        claimed.push({
          seq: d.seq,
          delivery_id: d.delivery_id,
          webhook_uid: d.webhook_uid,
          team_uid: d.team_uid,
          run_id: d.run_id,
          url: w.stored.item.url,
          body: d.body,
          attempts: d.attempts,
          retry_from: d.retry_from,
          secrets: yield* secretsOf(w, now),
          lease_until: leaseUntil
        })
      }
      return claimed
    })

  const settle = (delivery: ClaimedDelivery, attempt: Attempt, result: AttemptResult, reason: string) =>
    Effect.sync(() => {
      const d = o.deliveries.find((x) => x.seq === delivery.seq)
      if (d === undefined || d.state !== "pending" || d.lease_until !== delivery.lease_until) return
      Object.assign(d, {
        state: result._tag === "Delivered" ? "delivered" : result._tag === "Retry" ? "pending" : "failed",
        next_attempt_at: result._tag === "Retry" ? result.next_attempt_at : null,
        delivered_at: result._tag === "Delivered" ? attempt.at : null,
        lease_until: null,
        retry_from: triesSince(delivery, attempt.at),
        attempts: d.attempts + 1,
        last_attempt_at: attempt.at,
        last_status: attempt.status,
        last_error: attempt.error,
        last_latency_ms: attempt.latency_ms,
        last_response_excerpt: attempt.response_excerpt
      })
      const w = o.webhooks.get(d.webhook_uid)
      if (w === undefined) return
      if (result._tag === "Delivered") w.lastSuccessAt = attempt.at
      if (result._tag === "GiveUp" && (w.lastSuccessAt === null || w.lastSuccessAt < triesSince(delivery, attempt.at))) {
        const item = new OutboundWebhook({
          ...w.stored.item,
          enabled: false,
          disabled_reason: reason,
          disabled_at: utc(attempt.at),
          updated_at: utc(attempt.at)
        })
        w.stored = { ...w.stored, item }
        failPending(d.webhook_uid, reason)
      }
    })

  const deliveries = (
    team: TeamUid,
    uid: OutboundWebhookUid,
    query: { readonly limit: number; readonly after: number | null; readonly state: OutboundDeliveryState | undefined }
  ) =>
    Effect.sync(() => {
      const rows = o.deliveries
        .filter((d) =>
          d.webhook_uid === uid && d.team_uid === team && (query.state === undefined || d.state === query.state) &&
          (query.after === null || d.seq < query.after)
        )
        .sort((a, b) => b.seq - a.seq)
      const page = rows.slice(0, query.limit)
      return { deliveries: page.map(toDelivery), next: rows.length > query.limit ? page[page.length - 1]!.seq : null }
    })

  const redeliver = (team: TeamUid, uid: OutboundWebhookUid, id: OutboundDeliveryId, now: number) =>
    Effect.sync(() => {
      const d = o.deliveries.find((x) => x.delivery_id === id && x.webhook_uid === uid && x.team_uid === team)
      if (d === undefined) return "missing" as const
      if (d.state === "pending") return "pending" as const
      requeue(d, now)
      return "queued" as const
    })

  const redeliverFailed = (team: TeamUid, uid: OutboundWebhookUid, since: number, now: number) =>
    Effect.sync(() => {
      const failed = o.deliveries.filter((d) =>
        d.webhook_uid === uid && d.team_uid === team && d.state === "failed" && d.created_at >= since
      )
      for (const d of failed) requeue(d, now)
      return failed.length
    })

  const health = (team: TeamUid, since: number) =>
    Effect.sync(() => {
      const counts = new Map<string, DeliveryCount>()
      for (const d of o.deliveries) {
        if (d.team_uid !== team || d.created_at < since) continue
        const key = `${d.webhook_uid} ${d.state}`
        counts.set(key, { webhook_uid: d.webhook_uid, state: d.state, count: (counts.get(key)?.count ?? 0) + 1 })
      }
      return [...counts.values()]
    })

  const prune = (before: number, limit: number) =>
    Effect.sync(() => {
      const old = o.deliveries.filter((d) => d.state !== "pending" && d.created_at < before).slice(0, limit)
      const gone = new Set(old.map((d) => d.seq))
      o.deliveries.splice(0, o.deliveries.length, ...o.deliveries.filter((d) => !gone.has(d.seq)))
      return old.length
    })

  return OutboundWebhookStore.of({
    create,
    list,
    get,
    update,
    rotate,
    remove,
    changes,
    fanOut,
    claim,
    settle,
    deliveries,
    redeliver,
    redeliverFailed,
    health,
    prune
  })
}
