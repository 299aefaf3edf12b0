/**
 * Self-hosted workers, the server's side (CONTRACT §4, §5; docs/workers.md). A worker runs core's
 * `Dispatcher` on its own machine over ports that call `/api/v1/workers/{workerId}/…`; this
 * service answers those calls over the real stores, scoped to the worker's team and id:
 * - presence: heartbeats recorded in `WorkerStore` (every replica lists the same workers), the
 *   connected-workers list of a team, and a disconnect when a worker stops;
 * - claiming (long-polled) the QUEUED runs of the worker's team whose `agent_config.worker_host`
 *   is its id, under a lease whose length the server decides;
 * - for a run the worker holds (its team, its id, the execution holding the lease): reading it,
 *   guarded writes (`acceptWorkerWrite` decides what a worker may change), lease renewal,
 *   follow-ups, the conversation, artifacts and the transcript, and the environment it needs.
 *
 * Decisions where the contract is silent:
 * - Who may act as a worker: a `service_account` principal with the `member` or `admin` role in
 *   the team (CONTRACT §5 says "service-account token"); a user, a viewer or an agent's run token
 *   is refused with 403. Anyone in the team (viewers too) may list the connected workers.
 * - A worker id belongs to the service account that used it first in the team (bound in storage,
 *   kept across disconnects, restarts and token revocations: a new token of the same account keeps
 *   it); another service account using it is refused with 403 on every worker endpoint, until a
 *   team admin releases the id (`release`), or the owner is deleted, leaves the team or becomes a
 *   viewer. Then the next service account to call binds it.
 * - A worker is connected from its first heartbeat until `staleAfterMs` (3 heartbeat intervals by
 *   default) after its latest one, or until it disconnects.
 * - A run the worker may not touch (another team's, another worker's, unknown) is a 404; a write or
 *   renewal by an execution that no longer holds the run (the lease expired and the run was
 *   requeued, or it ended) is a 409 `conflict`, not retryable: the worker's dispatcher stops the
 *   execution (its agent is stopped), so a worker that comes back never runs a run twice.
 * - The server's sweep treats worker runs like any other: an expired lease requeues the run
 *   (attempt + 1), ERROR `resource_unavailable` after the third; admission stays on the server.
 * - Debug windows are not kept on workers: a failed setup releases the worker's sandbox at once.
 * - A claim takes a run only while the worker's latest heartbeat is at most 2 intervals old, so a
 *   long poll left waiting by a worker that froze stops claiming once its heartbeats stop.
 * - Transcript appends carry their offset in the run's transcript (the claim answers where it
 *   ends), and bytes already there are not written again: a retry after a lost answer is a no-op.
 */
import { Chunk, Clock, Context, DateTime, Duration, Effect, Either, Encoding, Option, Stream } from "effect"
import type { Viewer } from "./Access.js"
import type { Artifact } from "./Artifact.js"
import type { ConversationPart } from "./ConversationLog.js"
import { transcriptKey } from "./Conversations.js"
import { Conflict, NotAuthorized, OperationNotSupported, ResourceNotFound } from "./Errors.js"
import type { EnvironmentUid, ExecutionId, RunId } from "./Ids.js"
import { eventPayloadKey } from "./Ingress.js"
import { BlobStore } from "./ports/BlobStore.js"
import { EnvironmentStore } from "./ports/EnvironmentStore.js"
import { IdentityStore } from "./ports/IdentityStore.js"
import { RunStore } from "./ports/RunStore.js"
import type { NewTimelineEvent, RunGuard, StoredRun } from "./ports/RunStore.js"
import { RunTokens } from "./ports/RunTokens.js"
import { WorkerStore } from "./ports/WorkerStore.js"
import { RunItem } from "./Run.js"
import type { RunState } from "./RunState.js"
import type { TimelineEventType } from "./Timeline.js"
import { concatBytes } from "./internal/Bytes.js"
import { storageUnavailable } from "./internal/Services.js"
import {
  ClaimResponse,
  FollowupsResponse,
  HeartbeatResponse,
  ListConnectedWorkersResponse,
  RenewLeaseResponse,
  WorkerConversation,
  WorkerEnvironment
} from "./Worker.js"
import type { HeartbeatRequest } from "./Worker.js"

/** The server's settings for workers. */
export interface WorkerSettings {
  /** How often workers send heartbeats. */
  readonly heartbeatMs: number
  /** A worker is listed until this long after its latest heartbeat. */
  readonly staleAfterMs: number
  /** The lease of a run a worker claims (as the server's own dispatcher). */
  readonly leaseMs: number
  /** How often a waiting claim looks for a run again. */
  readonly claimPollMs: number
}

export const defaultWorkerSettings: WorkerSettings = {
  heartbeatMs: 5_000,
  staleAfterMs: 15_000,
  leaseMs: 30_000,
  claimPollMs: 250
}

export class WorkerSettingsTag extends Context.Tag("@agent-runs/core/WorkerSettings")<WorkerSettingsTag, WorkerSettings>() {}

/** The worker a request comes from: its team and id. */
export interface WorkerRef {
  readonly team_uid: Viewer["team_uid"]
  readonly worker_id: string
}

/** A worker claims only while its latest heartbeat is at most this many intervals old. */
const FRESH_HEARTBEATS = 2

/** States in which a worker holds a run. */
const HELD: ReadonlyArray<RunState> = ["CLAIMED", "INPROGRESS"]

/** States a worker may write for a run it holds. */
const WRITABLE: ReadonlyArray<RunState> = ["CLAIMED", "INPROGRESS", "SUCCEEDED", "FAILED", "BLOCKED", "ERROR"]

/** Timeline events a worker may append for its execution. */
const WORKER_EVENTS: ReadonlyArray<TimelineEventType> = [
  "environment_setup_started",
  "environment_setup_succeeded",
  "environment_setup_failed",
  "run_in_progress",
  "run_succeeded",
  "run_failed",
  "run_blocked",
  "run_errored"
]

/** Whether the run is addressed to this worker (its team, its id). */
export const isWorkersRun = (run: StoredRun, worker: WorkerRef): boolean =>
  run.team_uid === worker.team_uid && run.item.agent_config.worker_host === worker.worker_id

/** Whether `executionId` holds the run now (CLAIMED or INPROGRESS under its lease). */
export const holds = (run: StoredRun, executionId: string): boolean =>
  run.lease !== null && run.lease.execution_id === executionId && HELD.includes(run.item.state)

/**
 * What a worker's guarded write of a run it holds becomes (pure): the current run with only the
 * fields an executor changes taken from the proposal (state, status message, times, session,
 * usage, the conversation flag, the lease released or kept), and its events if each is one an
 * executor writes, for its own execution. Everything else (prompt, team, configuration, creator,
 * metadata, attempt, execution count, the lease's expiry) stays the server's. Left with the reason
 * when the write is refused: the guard does not match the run, the execution does not hold it,
 * or the proposal is not an executor's.
 */
export const acceptWorkerWrite = (
  current: StoredRun,
  guard: { readonly state: RunState; readonly execution_id: ExecutionId },
  proposed: StoredRun,
  events: ReadonlyArray<NewTimelineEvent>
): Either.Either<{ readonly run: StoredRun; readonly events: ReadonlyArray<NewTimelineEvent> }, string> => {
  if (current.item.state !== guard.state || !holds(current, guard.execution_id)) {
    return Either.left("the run is no longer held by this execution")
  }
  const state = proposed.item.state
  if (!WRITABLE.includes(state)) return Either.left(`a worker cannot move a run to ${state}`)
  if (proposed.lease !== null && proposed.lease.execution_id !== guard.execution_id) {
    return Either.left("a worker cannot hand its lease to another execution")
  }
  const ended = !HELD.includes(state)
  if (!ended && proposed.lease === null) return Either.left("a run the worker holds keeps its lease until it ends")
  for (const event of events) {
    if (!WORKER_EVENTS.includes(event.event_type)) return Either.left(`a worker cannot write ${event.event_type} events`)
    if (event.execution_id !== guard.execution_id) return Either.left("events must belong to the execution holding the run")
  }
  const p = proposed.item
  const run: StoredRun = {
    ...current,
    lease: ended ? null : current.lease,
    sandbox_retained: false,
    has_conversation: current.has_conversation || proposed.has_conversation,
    item: new RunItem(
      {
        ...current.item,
        state,
        status_message: p.status_message,
        started_at: current.item.started_at ?? p.started_at,
        ended_at: ended ? p.ended_at : null,
        updated_at: p.updated_at,
        session_id: p.session_id,
        session_link: p.session_link,
        request_usage: p.request_usage
      },
      true
    )
  }
  return Either.right({ run, events })
}

/** The answer to a worker of the previous protocol (it saved whole conversations): upgrade. */
export const upgradeNeeded = new OperationNotSupported({
  message: "this server takes a worker's conversation in parts (POST …/conversation/parts); " +
    "upgrade the worker (agent-runs worker) to the server's version"
})

export class Workers extends Effect.Service<Workers>()("@agent-runs/core/Workers", {
  effect: Effect.gen(function*() {
    const settings = yield* WorkerSettingsTag
    const presence = yield* WorkerStore
    const store = yield* RunStore
    const environments = yield* EnvironmentStore
    const identities = yield* IdentityStore
    const blobs = yield* BlobStore
    const tokens = yield* RunTokens

    /** The caller as a worker: a service account that may change things in its team. */
    const asWorker = (viewer: Viewer, workerId: string) =>
      Effect.gen(function*() {
        const refuse = new NotAuthorized({
          message: "worker endpoints need the token of a service account with the member or admin role"
        })
        if (viewer.acting_run_id !== undefined || viewer.role === "viewer") return yield* Effect.fail(refuse)
        const principal = yield* identities.getPrincipal(viewer.principal_uid)
        if (Option.isNone(principal) || principal.value.type !== "service_account") return yield* Effect.fail(refuse)
        yield* ownWorkerId(viewer, workerId)
        return { team_uid: viewer.team_uid, worker_id: workerId } satisfies WorkerRef
      })

    /**
     * The worker id belongs to the service account that used it first in the team; another one is
     * refused (403) while that owner exists and may still act as a worker in the team. An owner
     * deleted, removed from the team or made a viewer gives the id up to the next caller.
     */
    const ownWorkerId = (viewer: Viewer, workerId: string) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const holder = yield* presence.bind(viewer.team_uid, workerId, viewer.principal_uid, now)
        if (holder === viewer.principal_uid) return
        const owner = yield* identities.getPrincipal(holder)
        const ownerActive = Option.exists(owner, (p) =>
          p.memberships.some((m) => m.team_uid === viewer.team_uid && m.role !== "viewer"))
        const taken = new NotAuthorized({
          message: `workerId: worker id ${JSON.stringify(workerId)} belongs to another service account of this team`
        })
        if (ownerActive) return yield* Effect.fail(taken)
        const after = yield* presence.bind(viewer.team_uid, workerId, viewer.principal_uid, now, holder)
        if (after !== viewer.principal_uid) return yield* Effect.fail(taken)
      })

    /** A run this worker may touch (404 otherwise). */
    const workersRun = (worker: WorkerRef, runId: RunId) =>
      Effect.gen(function*() {
        const found = yield* store.get(runId)
        if (Option.isNone(found) || !isWorkersRun(found.value, worker)) return yield* Effect.fail(ResourceNotFound.of("run", runId))
        return found.value
      })

    /** A run this worker's execution holds (404 when not its run, 409 when no longer held). */
    const heldRun = (worker: WorkerRef, runId: RunId, executionId: ExecutionId) =>
      Effect.flatMap(workersRun(worker, runId), (run) =>
        holds(run, executionId)
          ? Effect.succeed(run)
          : Effect.fail(new Conflict({ message: "the run is no longer held by this execution" })))

    const stale = () => new Conflict({ message: "the run is no longer held by this execution" })

    const heartbeat = Effect.fn("Workers.heartbeat")(function*(viewer: Viewer, workerId: string, request: HeartbeatRequest) {
      const worker = yield* asWorker(viewer, workerId)
      const now = yield* Clock.currentTimeMillis
      yield* presence.heartbeat({
        team_uid: worker.team_uid,
        worker_id: workerId,
        display_name: request.display_name ?? workerId,
        labels: request.labels ?? [],
        capacity: request.capacity,
        now,
        expires_at: now + settings.staleAfterMs
      })
      return new HeartbeatResponse({
        heartbeat_seconds: settings.heartbeatMs / 1000,
        stale_after_seconds: settings.staleAfterMs / 1000,
        lease_seconds: settings.leaseMs / 1000
      })
    }, storageUnavailable)

    const disconnect = Effect.fn("Workers.disconnect")(function*(viewer: Viewer, workerId: string) {
      const worker = yield* asWorker(viewer, workerId)
      yield* presence.disconnect(worker.team_uid, workerId, yield* Clock.currentTimeMillis)
    }, storageUnavailable)

    /**
     * A team admin releases a worker id (its binding): the next service account to use it binds it.
     * Anyone else, run tokens too, gets 403. False when the id was not bound.
     */
    const release = Effect.fn("Workers.release")(function*(viewer: Viewer, workerId: string) {
      if (viewer.acting_run_id !== undefined || viewer.role !== "admin") {
        return yield* Effect.fail(new NotAuthorized({ message: "only a team admin may release a worker id" }))
      }
      return yield* presence.release(viewer.team_uid, workerId)
    }, storageUnavailable)

    const list = Effect.fn("Workers.list")(function*(viewer: Viewer) {
      const now = yield* Clock.currentTimeMillis
      const workers = yield* presence.connected(viewer.team_uid, now)
      return new ListConnectedWorkersResponse({
        workers: workers.map((w) => ({
          worker_id: w.worker_id,
          display_name: w.display_name,
          connected_at: DateTime.unsafeMake(w.connected_at),
          last_heartbeat_at: DateTime.unsafeMake(w.last_heartbeat_at),
          labels: w.labels,
          capacity: w.capacity,
          active_runs: w.active_runs
        }))
      })
    }, storageUnavailable)

    /** Whether a worker of the team with this id is connected now. */
    const isConnected = (team: Viewer["team_uid"], workerId: string) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.map(presence.connected(team, now), (workers) => workers.some((w) => w.worker_id === workerId)))

    const claim = Effect.fn("Workers.claim")(
      function*(viewer: Viewer, workerId: string, executionId: ExecutionId, waitSeconds: number) {
        const worker = yield* asWorker(viewer, workerId)
        const deadline = (yield* Clock.currentTimeMillis) + waitSeconds * 1000
        // Only for a worker that sent a heartbeat lately: a claim left waiting by a worker that froze
        // or lost its network stops taking runs once its heartbeats stop (the run would sit unused
        // under the lease and cost an attempt).
        const once = Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.flatMap(presence.connected(worker.team_uid, now), (workers) =>
            workers.some((w) => w.worker_id === workerId && now - w.last_heartbeat_at <= FRESH_HEARTBEATS * settings.heartbeatMs)
              ? store.claim({ worker_host: workerId, team_uid: worker.team_uid, execution_id: executionId, now, lease_ms: settings.leaseMs })
              : Effect.succeed(Option.none())))
        // Long poll: look again every `claimPollMs` until a run is claimed or the wait is over.
        let claimed = yield* once
        while (Option.isNone(claimed) && (yield* Clock.currentTimeMillis) + settings.claimPollMs <= deadline) {
          yield* Effect.sleep(Duration.millis(settings.claimPollMs))
          claimed = yield* once
        }
        if (Option.isNone(claimed)) return new ClaimResponse({ run: null, run_token: null, blobs: [] })
        const run = claimed.value
        const token = yield* tokens.issue({ run_id: run.item.run_id, execution_id: executionId })
        // The payload of a webhook-started run, which its agent gets as an attachment.
        const deliveryId = run.item.metadata["delivery_id"]
        const blobList: Array<{ key: string; data_base64: string }> = []
        if (run.item.source === "WEBHOOK" && deliveryId !== undefined) {
          const key = eventPayloadKey(deliveryId)
          const blob = yield* blobs.read(key)
          if (Option.isSome(blob)) {
            const chunks = yield* Stream.runCollect(blob.value)
            blobList.push({ key, data_base64: Encoding.encodeBase64(concatBytes(Chunk.toReadonlyArray(chunks))) })
          }
        }
        const transcriptBytes = yield* blobs.size(transcriptKey(run.item.run_id))
        return new ClaimResponse({ run, run_token: token, blobs: blobList, transcript_bytes: transcriptBytes })
      },
      storageUnavailable
    )

    const get = Effect.fn("Workers.get")(function*(viewer: Viewer, workerId: string, runId: RunId) {
      return yield* workersRun(yield* asWorker(viewer, workerId), runId)
    }, storageUnavailable)

    const update = Effect.fn("Workers.update")(
      function*(
        viewer: Viewer,
        workerId: string,
        runId: RunId,
        guard: { readonly state: RunState; readonly execution_id: ExecutionId },
        proposed: StoredRun,
        events: ReadonlyArray<NewTimelineEvent>
      ) {
        const worker = yield* asWorker(viewer, workerId)
        const current = yield* workersRun(worker, runId)
        const accepted = acceptWorkerWrite(current, guard, proposed, events)
        if (Either.isLeft(accepted)) return yield* Effect.fail(new Conflict({ message: accepted.left }))
        const storeGuard: RunGuard = { state: guard.state, execution_id: guard.execution_id }
        yield* store.update(runId, storeGuard, accepted.right.run, accepted.right.events).pipe(
          Effect.catchTag("StaleWrite", () => Effect.fail(stale()))
        )
      },
      storageUnavailable
    )

    const renew = Effect.fn("Workers.renew")(function*(viewer: Viewer, workerId: string, runId: RunId, executionId: ExecutionId) {
      const worker = yield* asWorker(viewer, workerId)
      yield* heldRun(worker, runId, executionId)
      const expires = (yield* Clock.currentTimeMillis) + settings.leaseMs
      yield* store.renewLease(runId, executionId, expires).pipe(Effect.catchTag("StaleWrite", () => Effect.fail(stale())))
      return new RenewLeaseResponse({ expires_at: expires })
    }, storageUnavailable)

    const takeFollowups = Effect.fn("Workers.takeFollowups")(function*(viewer: Viewer, workerId: string, runId: RunId) {
      yield* workersRun(yield* asWorker(viewer, workerId), runId)
      return new FollowupsResponse({ followups: yield* store.takeFollowups(runId) })
    }, storageUnavailable)

    const conversation = Effect.fn("Workers.conversation")(function*(viewer: Viewer, workerId: string, runId: RunId) {
      yield* workersRun(yield* asWorker(viewer, workerId), runId)
      return new WorkerConversation({ steps: yield* store.conversation(runId) })
    }, storageUnavailable)

    const appendConversation = Effect.fn("Workers.appendConversation")(
      function*(viewer: Viewer, workerId: string, runId: RunId, executionId: ExecutionId, part: ConversationPart) {
        yield* heldRun(yield* asWorker(viewer, workerId), runId, executionId)
        yield* store.appendConversation(runId, executionId, part)
      },
      storageUnavailable
    )

    const addArtifact = Effect.fn("Workers.addArtifact")(
      function*(viewer: Viewer, workerId: string, runId: RunId, executionId: ExecutionId, artifact: Artifact) {
        yield* heldRun(yield* asWorker(viewer, workerId), runId, executionId)
        yield* store.addArtifact(runId, artifact)
      },
      storageUnavailable
    )

    /**
     * Appends to the run's transcript; answers its size after. With `offset`, bytes the transcript
     * already has at and after it are not appended again (a retried request is a no-op).
     */
    const appendTranscript = Effect.fn("Workers.appendTranscript")(
      function*(viewer: Viewer, workerId: string, runId: RunId, executionId: ExecutionId, bytes: Uint8Array, offset?: number) {
        yield* heldRun(yield* asWorker(viewer, workerId), runId, executionId)
        const key = transcriptKey(runId)
        if (offset !== undefined) return yield* blobs.appendAt(key, offset, bytes)
        yield* blobs.append(key, bytes)
        return yield* blobs.size(key)
      },
      storageUnavailable
    )

    const environment = Effect.fn("Workers.environment")(function*(viewer: Viewer, workerId: string, uid: EnvironmentUid) {
      const worker = yield* asWorker(viewer, workerId)
      const found = yield* environments.get(uid)
      if (Option.isNone(found) || found.value.team_uid !== worker.team_uid) return yield* Effect.fail(ResourceNotFound.of("environment", uid))
      return new WorkerEnvironment(found.value)
    }, storageUnavailable)

    return {
      heartbeat,
      disconnect,
      release,
      list,
      isConnected,
      claim,
      get,
      update,
      renew,
      takeFollowups,
      conversation,
      appendConversation,
      addArtifact,
      appendTranscript,
      environment
    } as const
  })
}) {}

