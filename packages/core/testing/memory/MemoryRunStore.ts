/**
 * RunStore in memory, with the semantics of the SQL adapter (`RunStoreSql.ts`):
 *
 * - `create` checks its exactly-once key first (a taken key: DuplicateKey; a delivery id logged
 *   already: StorageError), then that no run id exists (StorageError), and only then writes the
 *   key, the runs and their first events: all or nothing.
 * - `update` and `recordFollowup` are guarded by the state and, when given, the lease holder (the
 *   fencing token); a guard that does not hold is a StaleWrite and writes nothing. Metadata,
 *   ancestors and artifacts stay as stored. A full follow-up inbox (`maxPending`) is counted after
 *   the guard and writes nothing either.
 * - Timeline sequences count from the run's last one, without gaps.
 * - `claim` takes the first QUEUED run (by priority, then created_at, then run id) of its worker
 *   host (and team, when given); the service's own executors' claim (no host, no team) first picks
 *   the team by fair share (FairShare.ts). A wake-up is signalled after a write that leaves a run
 *   QUEUED.
 * - The list is the reference evaluator `RunQuery.pageOf` over the runs the viewer may see, the
 *   counts by state `RunQuery.stateCountsOf`.
 *
 * Each operation runs in one synchronous step on the shared state, so it is atomic.
 */
import type { Context } from "effect"
import { DateTime, Effect, Option, Schema } from "effect"
import { canSee, type Shaper, type Viewer } from "../../src/domain/Access.js"
import { utf8Bytes } from "../../src/domain/Quotas.js"
import type { Artifact } from "../../src/domain/Artifact.js"
import { type ConversationPart, foldParts } from "../../src/domain/ConversationLog.js"
import type { ConversationId, ExecutionId, RunId, TeamUid } from "../../src/domain/Ids.js"
import { RunItem } from "../../src/domain/Run.js"
import { compareCodePoints, pageOf, type RunListQuery, stateCountsOf } from "../../src/domain/RunQuery.js"
import { isTerminal, type RunState } from "../../src/domain/RunState.js"
import { type Contender, nextTeam, shareAfter } from "../../src/domain/FairShare.js"
import { type Descendant, fitsInParent, MAX_DESCENDANTS } from "../../src/domain/BudgetTree.js"
import type { OverviewRun } from "../../src/domain/RunOverview.js"
import type { TimelineEvent } from "../../src/domain/Timeline.js"
import { ownedRunJson, storedRunJson } from "../../src/domain/RunRecords.js"
import {
  FollowupInboxFull,
  FollowupTotalSpent,
  type FollowupWrite,
  type ExecutionConversation,
  type LoggedPart,
  type Carve,
  type LogPosition,
  type NewRun,
  type NewTimelineEvent,
  type RenderedConversation,
  type RunGuard,
  runListRow,
  RunStore,
  type StoredFollowup,
  type StoredRun,
  type TickRuns,
  type TickWrite,
  type Updated
} from "../../src/ports/RunStore.js"
import { DuplicateKey, type ExactlyOnceKey, StaleWrite, type StorageError } from "../../src/ports/Storage.js"
import { claimIdentity, countDelivery, insertDelivery, isLogged, isTaken } from "./MemoryDeliveries.js"
import { recordChange } from "./MemoryOutboundWebhookStore.js"
import { entryOf, HOLDING_STATES, type MemoryState, type RunRecord, storageError, workerHostOf } from "./MemoryState.js"
import type { MemoryWakeups } from "./MemoryWakeups.js"

const millis = DateTime.toEpochMillis
const at = (ms: number): DateTime.Utc => DateTime.unsafeMake(ms)

/** A run as the store keeps and gives it: its fields in one order, its lease a copy. */
const canonical = (run: StoredRun, item: RunItem = run.item): StoredRun => ({
  item,
  team_uid: run.team_uid,
  lease: run.lease === null ? null : { execution_id: run.lease.execution_id, expires_at: run.lease.expires_at },
  at_capacity: run.at_capacity,
  sandbox_retained: run.sandbox_retained,
  has_conversation: run.has_conversation
})

/** `next` as it replaces `current`: its run id, metadata, ancestors and artifacts stay. */
const replacing = (current: StoredRun, next: StoredRun): StoredRun =>
  canonical(
    next,
    new RunItem({
      ...next.item,
      run_id: current.item.run_id,
      metadata: current.item.metadata,
      ancestor_run_ids: current.item.ancestor_run_ids,
      artifacts: current.item.artifacts
    })
  )

/** Oldest first: by `created_at`, then run id. */
const oldestFirst = (a: StoredRun, b: StoredRun): number =>
  millis(a.item.created_at) - millis(b.item.created_at) || compareCodePoints(a.item.run_id, b.item.run_id)

/** The order of claims within what a claim may take: higher priority first, then oldest. */
const claimOrder = (a: StoredRun, b: StoredRun): number =>
  (b.item.agent_config.priority ?? 0) - (a.item.agent_config.priority ?? 0) || oldestFirst(a, b)

const encodeItem = Schema.encodeSync(RunItem)

/** A run as JSON text, to compare two (everything `update` replaces, and what it keeps). */
const runText = (run: StoredRun) => JSON.stringify({ ...canonical(run), item: encodeItem(run.item) })

const guardHolds = (run: StoredRun, guard: RunGuard): boolean =>
  run.item.state === guard.state && (guard.execution_id === undefined || run.lease?.execution_id === guard.execution_id) &&
  (guard.expected === undefined || runText(replacing(run, guard.expected)) === runText(run))

const visibleTo = (viewer: Viewer, run: StoredRun): boolean =>
  canSee(viewer, { team_uid: run.team_uid, creator_uid: run.item.creator.uid, scope: run.item.scope })

/** The states of a run that hold its team's capacity. */
const ACTIVE: ReadonlyArray<RunState> = ["QUEUED", ...HOLDING_STATES]

/** RunStore over the shared state; signals `wakeups` when a run may have become claimable. */
export const makeMemoryRunStore = (state: MemoryState, wakeups: MemoryWakeups): Context.Tag.Service<RunStore> => {
  const idsIn = (s: RunState) => entryOf(state.runsByState, s, () => new Set<RunId>())
  const idsOf = (team: TeamUid) => entryOf(state.runsByTeam, team, () => new Set<RunId>())

  /** The runs in these states (the SQL adapter's partial indexes of the live states). */
  const runsIn = (...states: ReadonlyArray<RunState>): Array<StoredRun> =>
    states.flatMap((s) => [...(state.runsByState.get(s) ?? [])].map((id) => state.runs.get(id)!.run))

  const record = (runId: RunId): RunRecord | undefined => state.runs.get(runId)

  /** Writes a run into its record, keeping the indexes by state and team. */
  const write = (target: RunRecord, run: StoredRun): void => {
    const before = target.run
    const id = before.item.run_id
    target.run = run
    if (before.item.state !== run.item.state) {
      state.runsByState.get(before.item.state)?.delete(id)
      idsIn(run.item.state).add(id)
      recordChange(state.outbound, run, before.item.state)
    }
    if (before.team_uid !== run.team_uid) {
      state.runsByTeam.get(before.team_uid)?.delete(id)
      idsOf(run.team_uid).add(id)
    }
  }

  /** Appends timeline events after the run's last sequence. */
  const appendEvents = (target: RunRecord, events: ReadonlyArray<NewTimelineEvent>): void => {
    for (const e of events) {
      target.lastSequence += 1
      const event: TimelineEvent = {
        sequence: target.lastSequence,
        event_type: e.event_type,
        occurred_at: at(e.occurred_at),
        execution_id: e.execution_id,
        ...(e.message === undefined ? {} : { message: e.message }),
        ...(e.data === undefined ? {} : { data: e.data })
      }
      target.events.push(event)
    }
  }

  /** Why a key cannot be taken, or undefined when it can. */
  const keyProblem = (key: ExactlyOnceKey): DuplicateKey | StorageError | undefined => {
    switch (key._tag) {
      case "ScheduleTick":
        return state.scheduleTicks.get(key.schedule_id)?.has(key.scheduled_for) === true ? new DuplicateKey({ key }) : undefined
      case "Delivery": {
        if (isLogged(state, key.delivery.delivery_id)) {
          return storageError("RunStore.create", `delivery ${key.delivery.delivery_id} is logged already`)
        }
        const signed = key.content_key !== undefined && key.content_key !== key.identity ? key.content_key : undefined
        return isTaken(state, key.webhook_uid, key.identity) || (signed !== undefined && isTaken(state, key.webhook_uid, signed))
          ? new DuplicateKey({ key })
          : undefined
      }
    }
  }

  /** Takes a key that `keyProblem` found free. */
  const takeKey = (key: ExactlyOnceKey, runs: ReadonlyArray<NewRun>): void => {
    switch (key._tag) {
      case "ScheduleTick":
        entryOf(state.scheduleTicks, key.schedule_id, () => new Map()).set(key.scheduled_for, runs[0]?.run.item.run_id ?? "")
        return
      case "Delivery": {
        const id = key.delivery.delivery_id
        insertDelivery(state, key.webhook_uid, key.delivery)
        claimIdentity(state, key.webhook_uid, key.identity, id)
        if (key.content_key !== undefined && key.content_key !== key.identity) {
          claimIdentity(state, key.webhook_uid, key.content_key, id)
        }
        countDelivery(state, key.webhook_uid, key.delivery)
        return
      }
    }
  }

  const wakeIf = (queued: boolean): Effect.Effect<void> => (queued ? wakeups.notify : Effect.void)

  const create = (runs: ReadonlyArray<NewRun>, key?: ExactlyOnceKey) =>
    Effect.suspend((): Effect.Effect<void, DuplicateKey | StorageError> => {
      const problem = key === undefined ? undefined : keyProblem(key)
      if (problem !== undefined) return Effect.fail(problem)
      const ids = new Set<RunId>()
      for (const { run } of runs) {
        const id = run.item.run_id
        if (state.runs.has(id) || ids.has(id)) return Effect.fail(storageError("RunStore.create", `run ${id} exists already`))
        ids.add(id)
      }
      if (key !== undefined) takeKey(key, runs)
      return wakeIf(insertRuns(runs))
    })

  const createChild = (newRun: NewRun, carve: Carve) =>
    Effect.suspend((): Effect.Effect<void, StaleWrite | StorageError> => {
      const parent = state.runs.get(carve.parent_run_id)?.run.item
      const parentCost = parent === undefined ? 0 : parent.request_usage.inference_cost + parent.request_usage.compute_cost
      const asked = newRun.run.item.agent_config.max_cost_usd ?? 0
      if (!fitsInParent(carve.parent_run_id, carve.parent_max_cost_usd, parentCost, descendantsOf(carve.parent_run_id), asked)) {
        return Effect.fail(new StaleWrite({ what: `the budget of run ${carve.parent_run_id}` }))
      }
      return create([newRun]).pipe(Effect.catchTag("DuplicateKey", Effect.die))
    })

  /** Stores new runs with their events; whether one of them is QUEUED. */
  const insertRuns = (runs: ReadonlyArray<NewRun>): boolean => {
    let queued = false
    for (const { audit, events, run, shapers } of runs) {
      if (audit !== undefined) state.audit.set(audit.id, audit)
      const stored = canonical(run)
      const created: RunRecord = {
        run: stored,
        lastSequence: 0,
        events: [],
        inbox: [],
        conversations: [],
        shapers: [],
        followupTotals: { count: 0, bytes: 0 }
      }
      state.runs.set(stored.item.run_id, created)
      recordShapers(created, shapers ?? [])
      idsIn(stored.item.state).add(stored.item.run_id)
      idsOf(stored.team_uid).add(stored.item.run_id)
      appendEvents(created, events)
      recordChange(state.outbound, stored, null)
      queued ||= stored.item.state === "QUEUED"
    }
    return queued
  }

  const createTicks = (ticks: ReadonlyArray<TickRuns>) =>
    Effect.suspend((): Effect.Effect<ReadonlyArray<TickWrite>, StorageError> => {
      const seen = new Set<string>()
      const free = ticks.map(({ key }) => {
        const id = `${key.schedule_id} ${key.scheduled_for}`
        const ok = !seen.has(id) && keyProblem(key) === undefined
        seen.add(id)
        return ok
      })
      const ids = new Set<RunId>()
      for (const [i, { runs }] of ticks.entries()) {
        if (!free[i]) continue
        for (const { run } of runs) {
          const id = run.item.run_id
          if (state.runs.has(id) || ids.has(id)) return Effect.fail(storageError("RunStore.createTicks", `run ${id} exists already`))
          ids.add(id)
        }
      }
      // The holders of the keys taken before this call, read before it takes any.
      const written = ticks.map(({ key }, i): TickWrite => {
        if (free[i]) return { written: true }
        const holderId = state.scheduleTicks.get(key.schedule_id)?.get(key.scheduled_for)
        const holder = holderId === undefined || holderId === "" ? undefined : record(holderId)?.run
        return { written: false, holder: holder === undefined ? undefined : { run_id: holder.item.run_id, state: holder.item.state } }
      })
      let queued = false
      for (const [i, { key, runs }] of ticks.entries()) {
        if (!free[i]) continue
        takeKey(key, runs)
        queued = insertRuns(runs) || queued
      }
      return Effect.as(wakeIf(queued), written)
    })

  const get = (runId: RunId) => Effect.sync(() => Option.fromNullable(record(runId)?.run))

  const states = (runIds: ReadonlyArray<RunId>) =>
    Effect.sync(() => {
      const found = new Map<RunId, RunState>()
      for (const id of runIds) {
        const run = record(id)?.run
        if (run !== undefined) found.set(id, run.item.state)
      }
      return found as ReadonlyMap<RunId, RunState>
    })

  /** The runs the viewer may see, as the list query reads them. */
  const visibleRows = (viewer: Viewer) =>
    [...(state.runsByTeam.get(viewer.team_uid) ?? [])]
      .map((id) => state.runs.get(id)!.run)
      .filter((run) => visibleTo(viewer, run))
      .map((run) => ({ ...runListRow(run), stored: run }))

  const list = (query: RunListQuery, viewer: Viewer) =>
    Effect.sync(() => {
      const page = pageOf(visibleRows(viewer), query)
      return { rows: page.rows.map((row) => row.stored), page_info: page.page_info }
    })

  const getJson = (runId: RunId) => Effect.map(get(runId), Option.map(ownedRunJson))

  const listJson = (query: RunListQuery, viewer: Viewer) =>
    Effect.map(list(query, viewer), (page) => ({ rows: page.rows.map(storedRunJson), page_info: page.page_info }))

  const countByState = (query: RunListQuery, viewer: Viewer) => Effect.sync(() => stateCountsOf(visibleRows(viewer), query))

  const update = (runId: RunId, guard: RunGuard, next: StoredRun, events: ReadonlyArray<NewTimelineEvent>) =>
    Effect.suspend((): Effect.Effect<Updated, StaleWrite> => {
      const target = record(runId)
      if (target === undefined || !guardHolds(target.run, guard)) return Effect.fail(new StaleWrite({ what: `run ${runId}` }))
      write(target, replacing(target.run, next))
      appendEvents(target, events)
      const waiting = runsIn("PENDING").some((run) => run.team_uid === next.team_uid)
      return Effect.as(wakeIf(next.item.state === "QUEUED"), { waiting })
    })

  /** Records shapers of a run, each (principal, role) once. */
  const recordShapers = (target: RunRecord, shapers: ReadonlyArray<Shaper>): void => {
    for (const s of shapers) {
      if (!target.shapers.some((known) => known.uid === s.uid && known.role === s.role)) target.shapers.push({ uid: s.uid, role: s.role })
    }
  }

  /** Why the follow-up may not be stored (a full inbox, a spent total), or undefined. */
  const followupProblem = (target: RunRecord, followup: FollowupWrite): FollowupInboxFull | FollowupTotalSpent | undefined => {
    const pending = target.inbox.length
    if (followup.followup !== undefined && followup.maxPending !== undefined && pending >= followup.maxPending) {
      return new FollowupInboxFull({ pending })
    }
    const { bytes, count } = target.followupTotals
    const max = followup.maxTotal
    if (max !== undefined && (count + 1 > max.count || bytes + bytesOf(followup) > max.bytes)) {
      return new FollowupTotalSpent({ count, bytes })
    }
    return undefined
  }

  /** The bytes a follow-up write counts: its message's (none for an empty continuation). */
  const bytesOf = (followup: FollowupWrite): number => followup.followup === undefined ? 0 : utf8Bytes(followup.followup.message)

  const recordFollowup = (runId: RunId, guard: RunGuard, followup: FollowupWrite) =>
    Effect.suspend((): Effect.Effect<void, StaleWrite | FollowupInboxFull | FollowupTotalSpent> => {
      const target = record(runId)
      if (target === undefined || !guardHolds(target.run, guard)) return Effect.fail(new StaleWrite({ what: `run ${runId}` }))
      const problem = followupProblem(target, followup)
      if (problem !== undefined) return Effect.fail(problem)
      const current = target.run
      write(
        target,
        followup.next === undefined
          ? canonical(current, new RunItem({ ...current.item, updated_at: at(followup.at) }))
          : replacing(current, followup.next)
      )
      appendEvents(target, followup.events)
      if (followup.followup !== undefined) {
        state.followupCounter += 1
        target.inbox.push({ id: state.followupCounter, message: followup.followup.message, received_at: followup.followup.received_at })
      }
      if (followup.maxTotal !== undefined) {
        target.followupTotals.count += 1
        target.followupTotals.bytes += bytesOf(followup)
      }
      if (followup.shaper !== undefined) recordShapers(target, [followup.shaper])
      return wakeIf(followup.next?.item.state === "QUEUED")
    })

  const addShapers = (runId: RunId, shapers: ReadonlyArray<Shaper>) =>
    Effect.sync(() => {
      const target = record(runId)
      if (target !== undefined) recordShapers(target, shapers)
    })

  const shapersOf = (runIds: ReadonlyArray<RunId>) =>
    Effect.sync((): ReadonlyArray<Shaper> => {
      const found: Array<Shaper> = []
      for (const id of new Set(runIds)) {
        for (const s of record(id)?.shapers ?? []) {
          if (!found.some((known) => known.uid === s.uid && known.role === s.role)) found.push(s)
        }
      }
      return found
    })

  const takeFollowups = (runId: RunId) =>
    Effect.sync((): ReadonlyArray<StoredFollowup> => {
      const target = record(runId)
      if (target === undefined) return []
      const taken = target.inbox.splice(0, target.inbox.length)
      return taken
        .sort((a, b) => a.received_at - b.received_at || a.id - b.id)
        .map((entry) => ({ message: entry.message, received_at: entry.received_at }))
    })

  const takeHeldFollowups = (runId: RunId, executionId: ExecutionId) =>
    Effect.suspend(() => {
      const target = record(runId)
      const held = target !== undefined && target.run.lease?.execution_id === executionId &&
        HOLDING_STATES.includes(target.run.item.state)
      return held ? takeFollowups(runId) : Effect.fail(new StaleWrite({ what: `follow-ups of run ${runId}: not held by ${executionId}` }))
    })

  /** The teams with runs among `queued`, as fair share weighs them. */
  const contendersOf = (queued: ReadonlyArray<StoredRun>): Array<Contender> => {
    const oldest = new Map<TeamUid, number>()
    for (const run of queued) {
      const created = millis(run.item.created_at)
      oldest.set(run.team_uid, Math.min(created, oldest.get(run.team_uid) ?? created))
    }
    return [...oldest].map(([team, first]) => ({
      team,
      weight: state.teams.get(team)?.share_weight ?? 1,
      next: state.shares.next.get(team) ?? 0,
      oldest: first
    }))
  }

  const claim = (params: {
    readonly worker_host: string | null
    readonly team_uid?: TeamUid | undefined
    readonly execution_id: ExecutionId
    readonly now: number
    readonly lease_ms: number
  }) =>
    Effect.sync(() => {
      const host = params.worker_host === "" ? null : params.worker_host
      const candidates = runsIn("QUEUED").filter((run) =>
        workerHostOf(run) === host && (params.team_uid === undefined || run.team_uid === params.team_uid)
      )
      const contenders = host === null && params.team_uid === undefined ? contendersOf(candidates) : []
      const team = nextTeam(contenders, state.shares.vtime)
      const oldest = candidates
        .filter((run) => team === undefined || run.team_uid === team.team)
        .reduce<StoredRun | undefined>((best, run) => (best === undefined || claimOrder(run, best) < 0 ? run : best), undefined)
      if (oldest === undefined) return Option.none()
      const after = team === undefined ? undefined : shareAfter(contenders, team, state.shares.vtime)
      if (team !== undefined && after !== undefined) {
        state.shares.vtime = after.vtime
        state.shares.next.set(team.team, after.next)
      }
      const target = record(oldest.item.run_id)!
      write(
        target,
        canonical(
          { ...oldest, lease: { execution_id: params.execution_id, expires_at: params.now + params.lease_ms } },
          new RunItem({ ...oldest.item, state: "CLAIMED", updated_at: at(params.now) })
        )
      )
      appendEvents(target, [{ event_type: "run_claimed", occurred_at: params.now, execution_id: params.execution_id }])
      return Option.some(target.run)
    })

  const renewLease = (runId: RunId, execution_id: ExecutionId, expires_at: number) =>
    Effect.suspend((): Effect.Effect<void, StaleWrite> => {
      const target = record(runId)
      if (
        target === undefined ||
        target.run.lease?.execution_id !== execution_id ||
        !HOLDING_STATES.includes(target.run.item.state)
      ) {
        return Effect.fail(new StaleWrite({ what: `lease of run ${runId}` }))
      }
      write(target, canonical({ ...target.run, lease: { execution_id, expires_at } }))
      return Effect.void
    })

  const expiredLeases = (now: number, limit: number) =>
    Effect.sync(() =>
      runsIn(...HOLDING_STATES)
        .filter((run) => run.lease !== null && run.lease.expires_at <= now)
        .sort((a, b) => a.lease!.expires_at - b.lease!.expires_at || compareCodePoints(a.item.run_id, b.item.run_id))
        .slice(0, Math.max(0, limit))
    )

  const waitingForWorkers = (before: number, limit: number) =>
    Effect.sync(() =>
      runsIn("QUEUED")
        .filter((run) => {
          const host = workerHostOf(run)
          if (host === null || millis(run.item.created_at) > before) return false
          const worker = state.workers.get(run.team_uid)?.get(host)
          return worker === undefined || worker.last_heartbeat_at <= before
        })
        .sort(oldestFirst)
        .slice(0, Math.max(0, limit))
    )


  const admission = (team: TeamUid) =>
    Effect.sync(() => ({
      active: runsIn(...ACTIVE).filter((run) => run.team_uid === team).length,
      waiting: runsIn("PENDING").some((run) => run.team_uid === team)
    }))

  const waitingTeams = (limit: number) =>
    Effect.sync(() => [...new Set(runsIn("PENDING").map((run) => run.team_uid))].slice(0, Math.max(0, limit)))

  const pending = (team: TeamUid, limit: number) =>
    Effect.sync(() =>
      runsIn("PENDING")
        .filter((run) => run.team_uid === team)
        .sort(oldestFirst)
        .slice(0, Math.max(0, limit))
    )

  const timeline = (runId: RunId, after: number) =>
    Effect.sync((): ReadonlyArray<TimelineEvent> => (record(runId)?.events ?? []).filter((e) => e.sequence > after))

  const appendConversation = (runId: RunId, execution_id: ExecutionId, part: ConversationPart) =>
    Effect.suspend((): Effect.Effect<void, StorageError> => {
      const target = record(runId)
      if (target === undefined) return Effect.fail(storageError("RunStore.appendConversation", `no run ${runId}`))
      let execution = target.conversations.find((c) => c.execution_id === execution_id)
      if (execution === undefined) {
        // The first part of an execution places it after the run's other executions.
        execution = { execution_id, parts: new Map() }
        target.conversations.push(execution)
      }
      // A part stored already under its seq stays as it is.
      if (!execution.parts.has(part.seq)) execution.parts.set(part.seq, { seq: part.seq, ops: part.ops })
      return Effect.void
    })

  const conversation = (runId: RunId) =>
    Effect.sync(() => (record(runId)?.conversations ?? []).flatMap((c) => foldParts([...c.parts.values()])))

  const executionConversations = (runId: RunId) =>
    Effect.sync(() =>
      (record(runId)?.conversations ?? []).map((c): ExecutionConversation =>
        c.rendered !== undefined && c.rendered.parts === c.parts.size
          ? { _tag: "Rendered", json: c.rendered.json }
          : { _tag: "Folded", execution_id: c.execution_id, parts: c.parts.size, steps: foldParts([...c.parts.values()]) }
      )
    )

  const keepRendered = (runId: RunId, rendered: RenderedConversation) =>
    Effect.sync(() => {
      const execution = record(runId)?.conversations.find((c) => c.execution_id === rendered.execution_id)
      // Kept of exactly the parts the log has, and not again over a text of the same parts.
      if (execution !== undefined && execution.parts.size === rendered.parts && execution.rendered?.parts !== rendered.parts) {
        execution.rendered = { json: rendered.json, parts: rendered.parts }
      }
    })

  const conversationLog = (runId: RunId, after?: LogPosition) =>
    Effect.sync((): ReadonlyArray<LoggedPart> =>
      (record(runId)?.conversations ?? []).flatMap((c, i) =>
        [...c.parts.values()]
          .sort((a, b) => a.seq - b.seq)
          .map((p) => ({ ordinal: i + 1, execution_id: c.execution_id, seq: p.seq, ops: p.ops }))
          .filter((p) => after === undefined || p.ordinal > after.ordinal || (p.ordinal === after.ordinal && p.seq > after.seq))
      )
    )

  const addArtifact = (runId: RunId, artifact: Artifact) =>
    Effect.suspend((): Effect.Effect<void, StorageError> => {
      const target = record(runId)
      if (target === undefined) return Effect.fail(storageError("RunStore.addArtifact", `no run ${runId}`))
      const item = target.run.item
      write(target, canonical(target.run, new RunItem({ ...item, artifacts: [...item.artifacts, artifact] })))
      return Effect.void
    })

  const findByExternalReference = (url: string, viewer?: Viewer) =>
    Effect.sync(() => {
      // The latest report: by the artifact's created_at, then run id, both descending.
      let latest: { readonly run: StoredRun; readonly at: number } | undefined
      for (const { run } of state.runs.values()) {
        if (viewer !== undefined && !visibleTo(viewer, run)) continue
        for (const artifact of run.item.artifacts) {
          if (artifact.artifact_type !== "EXTERNAL_REFERENCE" || artifact.data.url !== url) continue
          const reported = millis(artifact.created_at)
          if (
            latest === undefined ||
            reported > latest.at ||
            (reported === latest.at && compareCodePoints(run.item.run_id, latest.run.item.run_id) > 0)
          ) {
            latest = { run, at: reported }
          }
        }
      }
      return Option.fromNullable(latest?.run)
    })

  const findByConversation = (conversationId: ConversationId) =>
    Effect.sync(() =>
      [...state.runs.values()]
        .map(({ run }) => run)
        .filter((run) => run.item.conversation_id === conversationId)
        .sort((a, b) =>
          DateTime.toEpochMillis(a.item.created_at) - DateTime.toEpochMillis(b.item.created_at) ||
          (a.item.run_id < b.item.run_id ? -1 : a.item.run_id > b.item.run_id ? 1 : 0)
        )
    )

  const descendantsOf = (runId: RunId): ReadonlyArray<Descendant> =>
    [...state.runs.values()]
        .filter(({ run }) => run.item.ancestor_run_ids.includes(runId))
        .slice(0, MAX_DESCENDANTS)
        .map(({ run }): Descendant => ({
          run_id: run.item.run_id,
          ancestor_run_ids: run.item.ancestor_run_ids,
          live: !isTerminal(run.item.state),
          cost: run.item.request_usage.inference_cost + run.item.request_usage.compute_cost,
          max_cost_usd: run.item.agent_config.max_cost_usd ?? null
        }))
  const descendants = (runId: RunId) => Effect.sync(() => descendantsOf(runId))

  const spendByDay = (team: TeamUid, since: number) =>
    Effect.sync(() => {
      const days = new Map<string, { runs: number; cost_usd: number; input_tokens: number; output_tokens: number }>()
      for (const { run } of state.runs.values()) {
        const created = DateTime.toEpochMillis(run.item.created_at)
        if (run.team_uid !== team || created < since) continue
        const day = DateTime.formatIsoDateUtc(run.item.created_at)
        const sum = days.get(day) ?? { runs: 0, cost_usd: 0, input_tokens: 0, output_tokens: 0 }
        const u = run.item.request_usage
        days.set(day, {
          runs: sum.runs + 1,
          cost_usd: sum.cost_usd + u.inference_cost + u.compute_cost,
          input_tokens: sum.input_tokens + u.input_tokens,
          output_tokens: sum.output_tokens + u.output_tokens
        })
      }
      return [...days.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([day, sum]) => ({ day, ...sum }))
    })

  const overviewRuns = (viewer: Viewer, since: number, limit: number) =>
    Effect.sync(() =>
      [...state.runs.values()]
        .map(({ run }) => run)
        .filter((run) => visibleTo(viewer, run) && millis(run.item.created_at) >= since)
        .sort((a, b) => millis(b.item.created_at) - millis(a.item.created_at) || compareCodePoints(b.item.run_id, a.item.run_id))
        .slice(0, limit)
        .map((run): OverviewRun => ({
          state: run.item.state,
          created_at: millis(run.item.created_at),
          started_at: run.item.started_at === null ? null : millis(run.item.started_at),
          ended_at: run.item.ended_at === null ? null : millis(run.item.ended_at)
        }))
    )

  return RunStore.of({
    create,
    createChild,
    createTicks,
    get,
    states,
    list,
    listJson,
    getJson,
    countByState,
    update,
    claim,
    renewLease,
    expiredLeases,
    waitingForWorkers,
    admission,
    waitingTeams,
    pending,
    timeline,
    appendConversation,
    conversation,
    executionConversations,
    keepRendered,
    conversationLog,
    recordFollowup,
    addShapers,
    shapers: shapersOf,
    takeFollowups,
    takeHeldFollowups,
    addArtifact,
    findByExternalReference,
    findByConversation,
    descendants,
    spendByDay,
    overviewRuns,
    wakeups: wakeups.signals
  })
}
