/**
 * RetentionStore in memory: what `RetentionStoreSql.ts` does. Removing a run drops its record
 * (which holds its timeline, conversation, follow-ups and shapers) and its indexes, its outbound
 * changes and deliveries, and queues its blobs; removing deliveries drops them from their logs
 * with their identities, and payloads from their record, queuing their blobs.
 */
import type { Context } from "effect"
import { Clock, DateTime, Effect } from "effect"
import { eventPayloadKey, runBlobKeys } from "../../src/domain/BlobKeys.js"
import type { DeliveryId, PrincipalUid, RunId, TeamUid } from "../../src/domain/Ids.js"
import { isTerminal } from "../../src/domain/RunState.js"
import type { RetentionStore } from "../../src/ports/RetentionStore.js"
import { StaleWrite } from "../../src/ports/Storage.js"
import { removeDeliveries } from "./MemoryDeliveries.js"
import type { MemoryState } from "./MemoryState.js"

const updatedAt = (state: MemoryState, id: RunId): number => DateTime.toEpochMillis(state.runs.get(id)!.run.item.updated_at)

/** Removes the runs named that are still ended and last changed before `before`; the ids removed, with the keys queued. */
export const removeRuns = (
  state: MemoryState,
  ids: ReadonlyArray<RunId>,
  before: number,
  now: number
): { readonly ids: ReadonlyArray<RunId>; readonly keys: ReadonlyArray<string> } => {
  const removed: Array<RunId> = []
  const keys: Array<string> = []
  for (const id of ids) {
    const record = state.runs.get(id)
    if (record === undefined || !isTerminal(record.run.item.state) || updatedAt(state, id) >= before) continue
    if (record.run.item.ancestor_run_ids.some((a) => state.runs.has(a))) continue
    state.runs.delete(id)
    state.runsByState.get(record.run.item.state)?.delete(id)
    state.runsByTeam.get(record.run.team_uid)?.delete(id)
    const executions = new Set(record.events.map((e) => e.execution_id as string).filter((e) => e !== ""))
    for (const key of runBlobKeys(id, executions)) {
      keys.push(key)
      if (!state.blobRemovals.has(key)) state.blobRemovals.set(key, now)
    }
    removed.push(id)
  }
  const gone = new Set<string>(removed)
  const outbound = state.outbound
  outbound.changes.splice(0, outbound.changes.length, ...outbound.changes.filter((c) => !gone.has(c.run_id)))
  outbound.deliveries.splice(0, outbound.deliveries.length, ...outbound.deliveries.filter((d) => !gone.has(d.run_id)))
  return { ids: removed, keys }
}

/** RetentionStore over the shared state. */
export const makeMemoryRetentionStore = (state: MemoryState): Context.Tag.Service<RetentionStore> => {
  /** Whether a run has an ancestor still kept (its spend counts in their budgets). */
  const hasKeptAncestor = (id: RunId): boolean => state.runs.get(id)!.run.item.ancestor_run_ids.some((a) => state.runs.has(a))

  /** Whether a live run started by the delivery still gets its payload. */
  const payloadInUse = (deliveryId: string, team: TeamUid): boolean =>
    [...state.runs.values()].some((r) =>
      !isTerminal(r.run.item.state) && r.run.item.source === "WEBHOOK" && r.run.team_uid === team &&
      r.run.item.metadata["delivery_id"] === deliveryId)

  const oldestFirst = (ids: Iterable<RunId>, before: number, limit: number): Array<RunId> =>
    [...ids]
      .filter((id) => isTerminal(state.runs.get(id)!.run.item.state) && updatedAt(state, id) < before && !hasKeptAncestor(id))
      .sort((a, b) => updatedAt(state, a) - updatedAt(state, b) || (a < b ? -1 : a > b ? 1 : 0))
      .slice(0, limit)

  const expireRuns = (team: TeamUid, before: number, limit: number) =>
    Effect.map(Clock.currentTimeMillis, (now) =>
      removeRuns(state, oldestFirst(state.runsByTeam.get(team) ?? [], before, limit), before, now).ids.length)

  const removeRun = (runId: RunId) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const removed = removeRuns(state, [runId], Number.POSITIVE_INFINITY, now)
      return removed.ids.length === 0 ? Effect.fail(new StaleWrite({ what: `run ${runId}` })) : Effect.succeed(removed.keys)
    })

  const expireDeliveries = (team: TeamUid, before: number, limit: number) =>
    Effect.map(Clock.currentTimeMillis, (now) => {
      let deliveries = 0
      for (const [uid, webhook] of state.webhooks) {
        if (webhook.team_uid !== team || deliveries >= limit) continue
        const log = state.deliveryLogs.get(uid)
        const old = [...(log?.entries.values() ?? [])]
          .filter((d) => DateTime.toEpochMillis(d.received_at) < before)
          .sort((a, b) => DateTime.toEpochMillis(a.received_at) - DateTime.toEpochMillis(b.received_at))
          .slice(0, limit - deliveries)
          .map((d) => d.delivery_id)
        deliveries += removeDeliveries(state, uid, new Set(old))
      }
      const payloads = [...state.webhookPayloads]
        .filter(([id, p]) => p.team_uid === team && p.received_at < before && !payloadInUse(id, team))
        .sort(([, a], [, b]) => a.received_at - b.received_at)
        .slice(0, limit)
      for (const [id] of payloads) {
        state.webhookPayloads.delete(id as DeliveryId)
        if (!state.blobRemovals.has(eventPayloadKey(id))) state.blobRemovals.set(eventPayloadKey(id), now)
      }
      return Math.max(deliveries, payloads.length)
    })

  const runsBy = (role: "creator" | "executor") => (principal: PrincipalUid, after: RunId | undefined, limit: number) =>
    Effect.sync(() =>
      [...state.runs.values()]
        .filter((r) => r.run.item[role].uid === principal && r.run.item.run_id > (after ?? ""))
        .map((r) => ({ run_id: r.run.item.run_id, state: r.run.item.state }))
        .sort((a, b) => (a.run_id < b.run_id ? -1 : a.run_id > b.run_id ? 1 : 0))
        .slice(0, limit))

  const blobsToRemove = (limit: number) => Effect.sync(() => [...state.blobRemovals.keys()].slice(0, limit))

  const blobsRemoved = (keys: ReadonlyArray<string>) =>
    Effect.sync(() => {
      for (const key of keys) state.blobRemovals.delete(key)
    })

  const blobsDeferred = (keys: ReadonlyArray<string>) =>
    Effect.map(Clock.currentTimeMillis, (now) => {
      for (const key of keys) {
        state.blobRemovals.delete(key)
        state.blobRemovals.set(key, now)
      }
    })

  return { expireRuns, removeRun, expireDeliveries, runsCreatedBy: runsBy("creator"), runsExecutedBy: runsBy("executor"), blobsToRemove, blobsRemoved, blobsDeferred }
}
