/**
 * Self-hosted workers, the server's side (docs/workers.md). A worker runs core's
 * execution loop on its own machine over a host that calls `/api/v1/workers/{workerId}/…`; this
 * service answers those calls, scoped to the worker's team and id, through the same execution
 * records as the server's own executions (engine/RunExecutions.ts):
 * - presence: heartbeats recorded in `WorkerStore` (every replica lists the same workers), the
 *   connected-workers list of a team, and a disconnect when a worker stops;
 * - claiming (long-polled) the QUEUED runs of the worker's team whose `agent_config.worker_host`
 *   is its id, under a lease whose length the server decides;
 * - for a run the worker holds (its team, its id, the execution holding the lease): its
 *   execution's events (setup, start, outcome: the run state machine decides what applies), the
 *   agent's report (session, usage, status), lease renewal, follow-ups, the conversation log,
 *   artifacts and the transcript. A worker never writes a stored run itself.
 *
 * Decisions:
 * - Who may act as a worker: a `service_account` principal with the `member` or `admin` role in
 *   the team (docs/reference/access.md, "Worker tokens"); a user, a viewer or an agent's run token
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
 * - Debug windows are not kept on workers: a failed setup releases the worker's sandbox at once
 *   (a retention in its events is ignored).
 * - A worker older than the protocol (`ClaimRequest.protocol` absent or older) is answered 422
 *   `operation_not_supported` telling it to upgrade, as are the endpoints only older workers call.
 * - A claim takes a run only while the worker's latest heartbeat is at most 2 intervals old, so a
 *   long poll left waiting by a worker that froze stops claiming once its heartbeats stop, and
 *   while the worker holds fewer runs than the capacity its heartbeat declares.
 * - Transcript appends carry their offset in the run's transcript (the claim answers where it
 *   ends), and bytes already there are not written again: a retry after a lost answer is a no-op.
 */
import { Clock, Context, DateTime, Duration, Effect, Encoding, Option } from "effect"
import { shaperOf, type Viewer } from "../domain/Access.js"
import { type Artifact, MAX_ARTIFACTS_PER_RUN } from "../domain/Artifact.js"
import type { ConversationPart } from "../domain/ConversationLog.js"
import type { ExecutionEvent, Report } from "../domain/ExecutionEvent.js"
import { Lost } from "../engine/ExecutionHost.js"
import { RunExecutions } from "../engine/RunExecutions.js"
import { DEFAULT_MAX_OUTPUT_BYTES } from "../engine/Settings.js"
import { DEFAULT_MAX_RUNTIME_SECONDS, maxRuntimeMessage, wireCeiling } from "../domain/MaxRuntime.js"
import { overtime } from "./WorkerOvertime.js"
import { EnvironmentStore } from "../ports/EnvironmentStore.js"
import { Conflict, NotAuthorized, OperationNotSupported, PayloadTooLarge, ResourceNotFound } from "../domain/Errors.js"
import { Ids } from "../domain/Ids.js"
import type { ExecutionId, RunId } from "../domain/Ids.js"
import { IdentityStore } from "../ports/IdentityStore.js"
import { AuditLog } from "../ports/AuditLog.js"
import { SecretStore } from "../ports/SecretStore.js"
import { BlobStore } from "../ports/BlobStore.js"
import * as AgentStates from "../engine/AgentStates.js"
import { resolveForWorker } from "../engine/SecretReads.js"
import * as WorkerSecrets from "../engine/WorkerSecrets.js"
import { RunStore } from "../ports/RunStore.js"
import type { StoredRun } from "../ports/RunStore.js"
import { WorkerStore } from "../ports/WorkerStore.js"
import { holds } from "../domain/RunRecords.js"
import { activeMemberships } from "../domain/Identity.js"
import { storageUnavailable } from "../internal/Services.js"
import { Audit } from "./Audit.js"
import {
  ClaimResponse,
  FollowupsResponse,
  HeartbeatResponse,
  ListConnectedWorkersResponse,
  RecordEventsResponse,
  RenewLeaseResponse
} from "../domain/Worker.js"
import { VERSION } from "../domain/Release.js"
import * as WorkerProtocol from "../domain/WorkerProtocol.js"
import type { HeartbeatRequest } from "../domain/Worker.js"

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
  /** The most a run's transcript may hold (the server's output limit): past it, appends are refused (413). */
  readonly maxOutputBytes?: number | undefined
  /** The ceiling of a run's maximum runtime (MaxRuntime.ts), which workers apply as the server's executions do. */
  readonly maxRuntimeSeconds?: number | undefined
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

/** Whether the run is addressed to this worker (its team, its id). */
export const isWorkersRun = (run: StoredRun, worker: WorkerRef): boolean =>
  run.team_uid === worker.team_uid && run.item.agent_config.worker_host === worker.worker_id

/** The answer to a worker that speaks no protocol this server speaks (WorkerProtocol.ts). */
export const noCommonProtocol = (theirs: string) =>
  new OperationNotSupported({
    message: `this server (release ${VERSION}) speaks worker protocols ${WorkerProtocol.describe(WorkerProtocol.spoken)} and ` +
      `the worker ${theirs}: run a worker (agent-runs worker) of the server's release or one minor release apart`
  })

/** The answer to a worker too old to say its protocol (older than protocol 3). */
export const upgradeNeeded = noCommonProtocol("speaks an older one")

/** Fails unless a claim's or renewal's protocol is one this server speaks. */
const requireProtocol = (protocol: number | undefined): Effect.Effect<void, OperationNotSupported> => {
  if (protocol === undefined) return Effect.fail(upgradeNeeded)
  return Option.isSome(WorkerProtocol.agree(WorkerProtocol.spoken, WorkerProtocol.only(protocol)))
    ? Effect.void
    : Effect.fail(noCommonProtocol(`speaks ${protocol}`))
}

/**
 * The protocol agreed with a heartbeat's worker, or its refusal when they speak none in common: one
 * that says none is of release 0.1, which speaks 3 alone (as the worker reads a server that says none).
 */
const agreedWith = (request: HeartbeatRequest): Effect.Effect<number, OperationNotSupported> => {
  const theirs = WorkerProtocol.rangeSaid(request)
  return Option.match(WorkerProtocol.agree(WorkerProtocol.spoken, theirs), {
    onSome: Effect.succeed,
    onNone: () => Effect.fail(noCommonProtocol(`(release ${request.version ?? "0.1"}) speaks ${WorkerProtocol.describe(theirs)}`))
  })
}

export class Workers extends Effect.Service<Workers>()("@agent-runs/core/Workers", {
  dependencies: [Audit.Default],
  effect: Effect.gen(function*() {
    const audit = yield* Audit
    const settings = yield* WorkerSettingsTag
    const presence = yield* WorkerStore
    const store = yield* RunStore
    const identities = yield* IdentityStore
    const executions = yield* RunExecutions
    const ids = yield* Ids
    const secretStore = yield* SecretStore
    const blobs = yield* BlobStore
    const auditLog = yield* AuditLog
    const overran = overtime({ runs: store, environments: yield* EnvironmentStore })

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
          activeMemberships(p).some((m) => m.team_uid === viewer.team_uid && m.role !== "viewer"))
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

    /**
     * A run this worker's execution holds now, under a lease that has not run out (404 when not its
     * run, 409 otherwise): a worker whose lease lapsed (it froze, or lost the network) cannot take it
     * back, even before the sweep requeued the run.
     */
    const heldRun = (worker: WorkerRef, runId: RunId, executionId: ExecutionId) =>
      Effect.flatMap(workersRun(worker, runId), (run) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          holds(run, executionId) && run.lease !== null && run.lease.expires_at > now
            ? Effect.succeed(run)
            : Effect.fail(new Conflict({ message: "the run is no longer held by this execution" }))))

    const stale = () => new Conflict({ message: "the run is no longer held by this execution" })

    const heartbeat = Effect.fn("Workers.heartbeat")(function*(viewer: Viewer, workerId: string, request: HeartbeatRequest) {
      const worker = yield* asWorker(viewer, workerId)
      const protocol = yield* agreedWith(request)
      const now = yield* Clock.currentTimeMillis
      yield* presence.heartbeat({
        team_uid: worker.team_uid,
        worker_id: workerId,
        display_name: request.display_name ?? workerId,
        labels: request.labels ?? [],
        capacity: request.capacity,
        version: request.version ?? null,
        protocol,
        now,
        expires_at: now + settings.staleAfterMs
      })
      return new HeartbeatResponse({
        heartbeat_seconds: settings.heartbeatMs / 1000,
        stale_after_seconds: settings.staleAfterMs / 1000,
        lease_seconds: settings.leaseMs / 1000,
        max_output_bytes: settings.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
        max_runtime_seconds: wireCeiling(settings.maxRuntimeSeconds ?? DEFAULT_MAX_RUNTIME_SECONDS),
        protocol: WorkerProtocol.WORKER_PROTOCOL,
        oldest_protocol: WorkerProtocol.OLDEST_WORKER_PROTOCOL,
        version: VERSION
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
      return yield* audit.recording(viewer, presence.release(viewer.team_uid, workerId), () => ({
        action: "worker.release",
        resource: { type: "worker", id: workerId.slice(0, 128) }
      }))
    }, storageUnavailable, audit.refusals("worker.release", (workerId: string) => ({ type: "worker", id: workerId.slice(0, 128) })))

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
          active_runs: w.active_runs,
          ...(w.version === null ? {} : { version: w.version }),
          ...(w.protocol === null ? {} : { protocol: w.protocol })
        }))
      })
    }, storageUnavailable)

    /** Whether a worker of the team with this id is connected now. */
    const isConnected = (team: Viewer["team_uid"], workerId: string) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.map(presence.connected(team, now), (workers) => workers.some((w) => w.worker_id === workerId)))

    const claim = Effect.fn("Workers.claim")(
      function*(viewer: Viewer, workerId: string, waitSeconds: number, protocol: number | undefined, takesSecrets = false) {
        const worker = yield* asWorker(viewer, workerId)
        yield* requireProtocol(protocol)
        // The server names the execution (the lease's fencing token): a worker cannot reuse an
        // earlier execution's id to make its tokens and writes valid again.
        const executionId = yield* ids.executionId
        const deadline = (yield* Clock.currentTimeMillis) + waitSeconds * 1000
        // Only for a worker that sent a heartbeat lately: a claim left waiting by a worker that froze
        // or lost its network stops taking runs once its heartbeats stop (the run would sit unused
        // under the lease and cost an attempt).
        const once = Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.flatMap(presence.connected(worker.team_uid, now), (workers) =>
            workers.some((w) =>
                w.worker_id === workerId && now - w.last_heartbeat_at <= FRESH_HEARTBEATS * settings.heartbeatMs &&
                // No more runs than the capacity its heartbeat declares.
                w.active_runs < w.capacity
              )
              ? executions.claim({
                worker_host: workerId,
                team_uid: worker.team_uid,
                execution_id: executionId,
                lease_ms: settings.leaseMs,
                host: shaperOf(viewer)
              })
              : Effect.succeed(Option.none())))
        // Long poll: look again every `claimPollMs` until a run is claimed or the wait is over.
        let claimed = yield* once
        while (Option.isNone(claimed) && (yield* Clock.currentTimeMillis) + settings.claimPollMs <= deadline) {
          yield* Effect.sleep(Duration.millis(settings.claimPollMs))
          claimed = yield* once
        }
        if (Option.isNone(claimed)) return new ClaimResponse({ claim: null })
        const c = claimed.value
        // Read here, where the team's secrets are, for this worker alone (recorded as the agent's
        // reads), when it takes them (an older worker would ignore them).
        const secrets = takesSecrets ? yield* resolveForWorker(c, secretStore, auditLog, ids) : undefined
        return new ClaimResponse({
          claim: {
            execution_id: executionId,
            run: c.run,
            team_uid: c.team_uid,
            run_token: c.run_token,
            environment: c.environment,
            environment_missing: c.environment_missing,
            refusal: c.refusal,
            attachments: c.attachments.map((a) => ({ name: a.name, media_type: a.media_type, data_base64: Encoding.encodeBase64(a.bytes) })),
            history: c.history,
            transcript_bytes: c.transcript_bytes,
            descendants_committed: c.descendants_committed,
            ...(secrets === undefined ? {} : { secrets: WorkerSecrets.toClaim(secrets) })
          }
        })
      },
      storageUnavailable
    )

    /** `Lost` as the worker's 409: its execution no longer holds the run. */
    const asConflict = <A, E, R>(effect: Effect.Effect<A, E | Lost, R>) =>
      Effect.catchIf(effect, (e): e is Lost => e instanceof Lost, () => Effect.fail(stale()))

    const recordEvents = Effect.fn("Workers.recordEvents")(
      function*(viewer: Viewer, workerId: string, runId: RunId, executionId: ExecutionId, events: ReadonlyArray<ExecutionEvent>) {
        const current = yield* heldRun(yield* asWorker(viewer, workerId), runId, executionId)
        // No debug windows on workers: a failed setup's sandbox is not kept.
        const kept = events.map((e) => (e._tag === "EnvironmentSetupFailed" ? { _tag: e._tag, message: e.message } as const : e))
        // Never reviving a lapsed lease (the server's own executions may, after a storage fault);
        // written from the run just read (a write since makes it stale, and it is read again).
        const recorded = yield* asConflict(executions.record(runId, executionId, kept, { current }))
        return new RecordEventsResponse({ state: recorded.state })
      },
      storageUnavailable
    )

    const report = Effect.fn("Workers.report")(
      function*(viewer: Viewer, workerId: string, runId: RunId, executionId: ExecutionId, reported: Report) {
        const current = yield* heldRun(yield* asWorker(viewer, workerId), runId, executionId)
        yield* asConflict(executions.report(runId, executionId, reported, current))
      },
      storageUnavailable
    )

    const renew = Effect.fn("Workers.renew")(function*(
      viewer: Viewer,
      workerId: string,
      runId: RunId,
      executionId: ExecutionId,
      protocol: number | undefined
    ) {
      const worker = yield* asWorker(viewer, workerId)
      // A worker of an older protocol in the middle of a run stops renewing: its run comes back
      // through the sweep to an upgraded worker, instead of being held forever.
      yield* requireProtocol(protocol)
      const run = yield* heldRun(worker, runId, executionId)
      const now = yield* Clock.currentTimeMillis
      const late = yield* overran(run, executionId, now, { ceilingSeconds: settings.maxRuntimeSeconds, graceMs: settings.leaseMs })
      if (Option.isSome(late)) {
        const message = maxRuntimeMessage(late.value)
        yield* asConflict(executions.record(runId, executionId, [{ _tag: "Fail", error_code: "max_runtime_exceeded", message }], { current: run }))
        yield* Effect.logWarning(`worker ${workerId} let run ${runId} run past its maximum runtime: the server ended it`)
        return yield* Effect.fail(new Conflict({ message: `${message} by the server: the run is no longer held by this execution` }))
      }
      const expires = now + settings.leaseMs
      yield* asConflict(executions.renew(runId, executionId, settings.leaseMs))
      // The worker's check of the run's budget counts what its children hold (Budget.ts).
      if (run.item.agent_config.max_cost_usd === undefined) return new RenewLeaseResponse({ expires_at: expires })
      return new RenewLeaseResponse({ expires_at: expires, descendants_committed: yield* executions.childrenHold(runId) })
    }, storageUnavailable)

    const takeFollowups = Effect.fn("Workers.takeFollowups")(function*(viewer: Viewer, workerId: string, runId: RunId, executionId: ExecutionId) {
      yield* heldRun(yield* asWorker(viewer, workerId), runId, executionId)
      return new FollowupsResponse({ followups: yield* asConflict(executions.followups(runId, executionId)) })
    }, storageUnavailable)

    const appendConversation = Effect.fn("Workers.appendConversation")(
      function*(viewer: Viewer, workerId: string, runId: RunId, executionId: ExecutionId, part: ConversationPart) {
        yield* heldRun(yield* asWorker(viewer, workerId), runId, executionId)
        yield* executions.output(runId, executionId).appendConversation(part)
      },
      storageUnavailable
    )

    const addArtifact = Effect.fn("Workers.addArtifact")(
      function*(viewer: Viewer, workerId: string, runId: RunId, executionId: ExecutionId, artifact: Artifact) {
        const run = yield* heldRun(yield* asWorker(viewer, workerId), runId, executionId)
        if ((run.item.artifacts?.length ?? 0) >= MAX_ARTIFACTS_PER_RUN) {
          return yield* new PayloadTooLarge({ message: `a run keeps at most ${MAX_ARTIFACTS_PER_RUN} artifacts`, limitBytes: MAX_ARTIFACTS_PER_RUN })
        }
        // Stamped with the server's time, as an agent's reported artifact is.
        const stamped = { ...artifact, created_at: DateTime.unsafeMake(yield* Clock.currentTimeMillis) } as Artifact
        yield* executions.output(runId, executionId).addArtifact(stamped)
      },
      storageUnavailable
    )

    /**
     * Appends to the run's transcript; answers its size after. With `offset`, bytes the transcript
     * already has at and after it are not appended again (a retried request is a no-op).
     */
    const appendTranscript = Effect.fn("Workers.appendTranscript")(
      function*(viewer: Viewer, workerId: string, runId: RunId, executionId: ExecutionId, bytes: Uint8Array, offset: number) {
        yield* heldRun(yield* asWorker(viewer, workerId), runId, executionId)
        // The run's output limit holds for workers too: a worker past it is refused, nothing appended.
        const limit = settings.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES
        if (offset + bytes.length > limit) {
          return yield* new PayloadTooLarge({ message: `the run's transcript would pass its limit of ${limit} bytes`, limitBytes: limit })
        }
        return yield* executions.output(runId, executionId).appendTranscript(offset, bytes)
      },
      storageUnavailable
    )

    /** A part of the session files the holding execution's agent CLI left (AgentStates.ts). */
    const saveAgentState = Effect.fn("Workers.saveAgentState")(
      function*(
        viewer: Viewer,
        workerId: string,
        runId: RunId,
        executionId: ExecutionId,
        part: { readonly offset: number; readonly bytes: Uint8Array; readonly total: number }
      ) {
        yield* heldRun(yield* asWorker(viewer, workerId), runId, executionId)
        return yield* AgentStates.savePart(blobs, runId, executionId, part)
      },
      storageUnavailable
    )

    /** A part of the session files the run's earlier execution kept, for the holding execution to resume. */
    const readAgentState = Effect.fn("Workers.readAgentState")(
      function*(viewer: Viewer, workerId: string, runId: RunId, executionId: ExecutionId, offset: number) {
        yield* heldRun(yield* asWorker(viewer, workerId), runId, executionId)
        return yield* AgentStates.readPart(blobs, runId, offset)
      },
      storageUnavailable
    )

    return {
      saveAgentState,
      readAgentState,
      heartbeat,
      disconnect,
      release,
      list,
      isConnected,
      claim,
      recordEvents,
      report,
      renew,
      takeFollowups,
      appendConversation,
      addArtifact,
      appendTranscript
    } as const
  })
}) {}

