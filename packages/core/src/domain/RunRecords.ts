/**
 * Run records: what every part of core that reads or writes stored runs shares (the services, the
 * dispatcher, follow-ups, workers): the state machine's view of a stored run, a transition applied
 * to it, the item shown to callers, the events of a transition, the execution events carry.
 */
import { DateTime, Effect, Either, Option, Schema } from "effect"
import { canSee } from "./Access.js"
import type { Owned, Viewer } from "./Access.js"
import { InvalidRequest, ResourceNotFound } from "./Errors.js"
import type { ExecutionId, Ids } from "./Ids.js"
import { RunId } from "./Ids.js"
import { runListRow } from "../ports/RunStore.js"
import type { NewTimelineEvent, OwnedRunJson, RunGuard, RunJson, RunStore, StoredRun } from "../ports/RunStore.js"
import type { WorkerStore } from "../ports/WorkerStore.js"
import { RunItem } from "./Run.js"
import { isTerminal } from "./RunState.js"
import { runFlags, runItemJson, type RunFlagInputs } from "./RunJson.js"
import type { RunSnapshot, Transition } from "./RunStateMachine.js"
import type { TimelineEventType } from "./Timeline.js"
import { waitingForWorkerMessage } from "./Worker.js"

/** What access decisions read of a stored run. */
export const runOwnership = (run: StoredRun): Owned => ({
  team_uid: run.team_uid,
  creator_uid: run.item.creator.uid,
  scope: run.item.scope
})

/** The state machine's view of a stored run. */
export const runSnapshot = (run: StoredRun): RunSnapshot => ({
  state: run.item.state,
  attempt: run.item.attempt,
  execution_count: run.item.execution_count,
  has_conversation: run.has_conversation,
  sandbox_retained: run.sandbox_retained,
  execution_location: run.item.execution_location,
  source: run.item.source,
  worker_host: run.item.agent_config.worker_host,
  lease: run.lease ?? undefined,
  status_message: run.item.status_message === null
    ? undefined
    : {
      message: run.item.status_message.message,
      error_code: run.item.status_message.error_code,
      retryable: run.item.status_message.retryable ?? false,
      session_debug_until: run.item.status_message.session_debug_until === undefined
        ? undefined
        : DateTime.toEpochMillis(run.item.status_message.session_debug_until)
    }
})

/** The inputs of a stored run's computed flags. */
export const runFlagInputs = (run: StoredRun): RunFlagInputs => ({
  state: run.item.state,
  sandbox_retained: run.sandbox_retained,
  source: run.item.source,
  execution_location: run.item.execution_location
})

/**
 * The RunItem shown to callers: the stored item with its computed flags (RunJson.ts; the stored
 * item itself when its flags are already right, as they are for most: building a RunItem is a
 * list's largest cost per run).
 */
export const presentRun = (run: StoredRun): RunItem => {
  const flags = runFlags(runFlagInputs(run))
  if (
    run.item.is_sandbox_running === flags.is_sandbox_running &&
    run.item.is_run_type_cancellable === flags.is_run_type_cancellable
  ) return run.item
  return new RunItem(
    { ...run.item, ...flags },
    // The item is already a valid RunItem and the two flags are booleans: checking it again costs
    // a third of a list request's CPU time (bench/http).
    true
  )
}

/** A stored run as a list's JSON of it (for runs not served from a stored document, RunJson.ts). */
export const storedRunJson = (run: StoredRun): RunJson => ({
  run_id: run.item.run_id,
  json: runItemJson(presentRun(run)),
  listRow: Effect.succeed(runListRow(run))
})

/** A stored run as its JSON and owner (for runs not served from a stored document, RunJson.ts). */
export const ownedRunJson = (run: StoredRun): OwnedRunJson => ({ owned: runOwnership(run), json: runItemJson(presentRun(run)) })

/** A stored run after a transition at `now`: state, counters, status, lease, times. */
export const applyTransition = (run: StoredRun, t: Transition, now: number): StoredRun => {
  const at = DateTime.unsafeMake(now)
  const status = t.run.status_message
  const next: StoredRun = {
    ...run,
    lease: t.run.lease === undefined
      ? null
      : { execution_id: t.run.lease.execution_id as ExecutionId, expires_at: t.run.lease.expires_at },
    sandbox_retained: t.run.sandbox_retained,
    has_conversation: t.run.has_conversation,
    at_capacity: t.run.state === "PENDING" && run.at_capacity,
    item: new RunItem({
      ...run.item,
      state: t.run.state,
      attempt: t.run.attempt,
      execution_count: t.run.execution_count,
      updated_at: at,
      ended_at: isTerminal(t.run.state) ? (t.from === t.to ? run.item.ended_at : at) : null,
      status_message: status === undefined
        ? null
        : {
          message: status.message,
          retryable: status.retryable,
          ...(status.error_code === undefined ? {} : { error_code: status.error_code }),
          ...(status.session_debug_until === undefined
            ? {}
            : { session_debug_until: DateTime.unsafeMake(status.session_debug_until) })
        }
    })
  }
  return { ...next, item: presentRun(next) }
}

/**
 * The execution id that events recorded outside a lease carry: the lease's, else the one of the
 * run's latest timeline event (a fresh one for a run without events).
 */
export const currentExecution = (store: RunStore["Type"], ids: Ids["Type"], run: StoredRun) =>
  Effect.gen(function* () {
    if (run.lease !== null) return run.lease.execution_id
    const timeline = yield* store.timeline(run.item.run_id, 0)
    const last = timeline[timeline.length - 1]
    return last === undefined ? yield* ids.executionId : last.execution_id
  })

/** The timeline events of types `types`, all at `now` under one execution. */
export const eventsAt = (
  types: ReadonlyArray<TimelineEventType>,
  now: number,
  execution_id: ExecutionId
): Array<NewTimelineEvent> => types.map((event_type) => ({ event_type, occurred_at: now, execution_id }))

/**
 * The events of a run (going) QUEUED for a self-hosted worker that is not connected: its last
 * `run_queued` or `requeued` event says that it waits for that worker. Unchanged without worker
 * presence (storage that does not offer it), for other runs, or when presence cannot be read.
 */
export const noteAbsentWorker = (
  presence: Option.Option<WorkerStore["Type"]>,
  run: StoredRun,
  events: ReadonlyArray<NewTimelineEvent>,
  now: number
): Effect.Effect<ReadonlyArray<NewTimelineEvent>> =>
  Effect.gen(function* () {
    const host = run.item.agent_config.worker_host
    let queuedAt = -1
    events.forEach((e, i) => {
      if (e.event_type === "run_queued" || e.event_type === "requeued") queuedAt = i
    })
    if (Option.isNone(presence) || host === undefined || host === "" || run.item.state !== "QUEUED" || queuedAt < 0) {
      return events
    }
    const connected = yield* presence.value.connected(run.team_uid, now)
    if (connected.some((w) => w.worker_id === host)) return events
    return events.map((e, i) => (i === queuedAt ? { ...e, message: waitingForWorkerMessage(host) } : e))
  }).pipe(Effect.orElseSucceed(() => events))

const isRunId = Schema.is(RunId)

/** Parses a run id from a path: 400 naming `runId` when it is not a UUIDv7. */
export const parseRunId = (raw: string): Either.Either<RunId, InvalidRequest> =>
  isRunId(raw)
    ? Either.right(raw)
    : Either.left(
      InvalidRequest.forField("runId", `must be a run id (a lowercase UUIDv7); got ${JSON.stringify(raw.slice(0, 80))}`)
    )

/** Whether `executionId` holds the run now: CLAIMED or INPROGRESS under its lease. */
export const holds = (run: StoredRun, executionId: string): boolean =>
  run.lease !== null && run.lease.execution_id === executionId && (run.item.state === "CLAIMED" || run.item.state === "INPROGRESS")

/** The guard of a write based on `run` as read: its state, and its lease holder when it has one. */
export const guardOf = (run: StoredRun): RunGuard => ({
  state: run.item.state,
  ...(run.lease === null ? {} : { execution_id: run.lease.execution_id })
})

/** A run the viewer can see, or none (unknown and hidden alike). */
export const visibleRun = (store: RunStore["Type"], viewer: Viewer, runId: RunId) =>
  Effect.map(store.get(runId), Option.filter((run) => canSee(viewer, runOwnership(run))))

/** What `read` finds of a run the viewer can see, by the id of a path (400 when malformed), else 404 (unknown and hidden alike). */
const requireVisible = <A, E>(
  read: (runId: RunId) => Effect.Effect<Option.Option<A>, E>,
  ownerOf: (found: A) => Owned,
  viewer: Viewer,
  rawId: string
) =>
  Effect.gen(function* () {
    const runId = yield* parseRunId(rawId)
    const found = yield* read(runId)
    if (Option.isNone(found) || !canSee(viewer, ownerOf(found.value))) return yield* ResourceNotFound.of("run", runId)
    return found.value
  })

/** A run the viewer can see, by the id of a path (400 when malformed), else 404 (unknown and hidden alike). */
export const requireVisibleRun = (store: RunStore["Type"], viewer: Viewer, rawId: string) =>
  requireVisible(store.get, runOwnership, viewer, rawId)

/** `requireVisibleRun`, the run as its wire JSON (RunJson.ts). */
export const requireVisibleRunJson = (store: RunStore["Type"], viewer: Viewer, rawId: string) =>
  Effect.map(requireVisible(store.getJson, (r) => r.owned, viewer, rawId), (r) => r.json)
