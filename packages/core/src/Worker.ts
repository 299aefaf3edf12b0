/**
 * Connected self-hosted workers (CONTRACT §4, `GET /agent/connected-self-hosted-workers`):
 * presence from heartbeats, scoped to the caller's team. `worker_id` is what a run's
 * `agent_config.worker_host` names; `labels` are free-form tags the worker advertises;
 * `capacity` is how many runs it takes at once and `active_runs` how many it holds now.
 */
import { Schema } from "effect"
import { Artifact } from "./Artifact.js"
import { JsonObject, NonBlankString, Timestamp } from "./Common.js"
import { ConversationStep } from "./Conversation.js"
import { ConversationOp } from "./ConversationLog.js"
import { Environment } from "./Environment.js"
import { ExecutionId, PrincipalUid, TeamUid } from "./Ids.js"
import { RunItem } from "./Run.js"
import { RunState } from "./RunState.js"
import { TimelineEventType } from "./Timeline.js"

/** A self-hosted worker that is connected now. */
export const ConnectedWorker = Schema.Struct({
  worker_id: NonBlankString,
  display_name: Schema.String,
  connected_at: Timestamp,
  last_heartbeat_at: Timestamp,
  labels: Schema.Array(Schema.String),
  capacity: Schema.NonNegativeInt,
  active_runs: Schema.NonNegativeInt
}).annotations({ identifier: "ConnectedWorker" })
export type ConnectedWorker = typeof ConnectedWorker.Type

/** ListConnectedSelfHostedWorkersResponse. */
export class ListConnectedWorkersResponse extends Schema.Class<ListConnectedWorkersResponse>(
  "ListConnectedWorkersResponse"
)({
  workers: Schema.Array(ConnectedWorker)
}) {}

/** The message of the `run_queued` event of a run whose worker is not connected. */
export const waitingForWorkerMessage = (workerId: string) =>
  `waiting for self-hosted worker ${workerId}, which is not connected; the run starts when it connects`

// ---------------------------------------------------------------------------------------------
// The worker protocol (`/api/v1/workers/{workerId}/…`, docs/workers.md): what a self-hosted
// worker and the server exchange. The worker runs core's Dispatcher over ports that call these
// endpoints, so the wire carries the ports' own values (a stored run, timeline events, ...).

/** A worker id: what a run's `agent_config.worker_host` names (1–64 of `[A-Za-z0-9._-]`). */
export const WorkerId = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9._-]{1,64}$/, { message: () => "must be 1 to 64 characters of A-Z, a-z, 0-9, '.', '_', '-'" })
).annotations({ identifier: "WorkerId", description: "a worker id: 1 to 64 characters of [A-Za-z0-9._-]" })

/** `POST /workers/{workerId}/heartbeat`: the worker is here (sent every `heartbeat_seconds`). */
export class HeartbeatRequest extends Schema.Class<HeartbeatRequest>("WorkerHeartbeatRequest")({
  display_name: Schema.optional(Schema.String.pipe(Schema.maxLength(200))),
  labels: Schema.optional(Schema.Array(Schema.String.pipe(Schema.maxLength(100))).pipe(Schema.maxItems(50))),
  capacity: Schema.Int.pipe(Schema.between(1, 1000))
}) {}

/** The server's settings a worker follows. */
export class HeartbeatResponse extends Schema.Class<HeartbeatResponse>("WorkerHeartbeatResponse")({
  /** How often to send a heartbeat. */
  heartbeat_seconds: Schema.Number,
  /** A worker is listed until this long after its last heartbeat. */
  stale_after_seconds: Schema.Number,
  /** The lease length of a claimed run; the worker renews it every third of it. */
  lease_seconds: Schema.Number
}) {}

/** A lease on the wire. */
export const WireLease = Schema.Struct({ execution_id: ExecutionId, expires_at: Schema.Number })

/** A run as stored (the RunStore port's `StoredRun`), on the wire to the worker holding it. */
export const WorkerRun = Schema.Struct({
  item: RunItem,
  team_uid: TeamUid,
  lease: Schema.NullOr(WireLease),
  at_capacity: Schema.Boolean,
  sandbox_retained: Schema.Boolean,
  has_conversation: Schema.Boolean
}).annotations({ identifier: "WorkerRun" })

/** A blob the claimed run needs (the payload of a webhook-started run), base64. */
export const WorkerBlob = Schema.Struct({ key: Schema.String, data_base64: Schema.String })

/** `POST /workers/{workerId}/claim`: long-polls for a QUEUED run addressed to this worker. */
export class ClaimRequest extends Schema.Class<ClaimRequest>("WorkerClaimRequest")({
  /** The execution the claim starts (the lease's fencing token), chosen by the worker. */
  execution_id: ExecutionId,
  /** How long to wait for a run (0 to 25 seconds; default 20). */
  wait_seconds: Schema.optional(Schema.Number.pipe(Schema.between(0, 25)))
}) {}

export class ClaimResponse extends Schema.Class<ClaimResponse>("WorkerClaimResponse")({
  /** The claimed run (CLAIMED under a lease of `execution_id`), or null when none came in time. */
  run: Schema.NullOr(WorkerRun),
  /** The run token of the execution, for its agent. */
  run_token: Schema.NullOr(Schema.String),
  /** Blobs the run needs (its attachments). */
  blobs: Schema.Array(WorkerBlob),
  /** The size of the run's transcript now: where this execution's output starts (`offset` of appends). */
  transcript_bytes: Schema.optionalWith(Schema.NonNegativeInt, { default: () => 0 })
}) {}

/** A timeline event before storage numbers it (the port's `NewTimelineEvent`). */
export const WireTimelineEvent = Schema.Struct({
  event_type: TimelineEventType,
  occurred_at: Schema.Number,
  execution_id: ExecutionId,
  message: Schema.optionalWith(Schema.String, { exact: true }),
  data: Schema.optionalWith(JsonObject, { exact: true })
})

/** `POST …/runs/{runId}/update`: a guarded write of a run the worker holds (events of its execution). */
export class UpdateRunRequest extends Schema.Class<UpdateRunRequest>("WorkerUpdateRunRequest")({
  guard: Schema.Struct({ state: RunState, execution_id: ExecutionId }),
  run: WorkerRun,
  events: Schema.Array(WireTimelineEvent)
}) {}

/** `POST …/runs/{runId}/renew`. */
export class RenewLeaseRequest extends Schema.Class<RenewLeaseRequest>("WorkerRenewLeaseRequest")({
  execution_id: ExecutionId
}) {}

export class RenewLeaseResponse extends Schema.Class<RenewLeaseResponse>("WorkerRenewLeaseResponse")({
  expires_at: Schema.Number
}) {}

/** Follow-ups taken from a run's inbox (the port's `StoredFollowup`). */
export class FollowupsResponse extends Schema.Class<FollowupsResponse>("WorkerFollowupsResponse")({
  followups: Schema.Array(Schema.Struct({ message: Schema.String, received_at: Schema.Number }))
}) {}

/** The conversation of a run (every execution's steps). */
export class WorkerConversation extends Schema.Class<WorkerConversation>("WorkerConversation")({
  steps: Schema.Array(ConversationStep)
}) {}

/** `POST …/runs/{runId}/conversation/parts`: one part of the holding execution's conversation log. */
export class AppendConversationRequest extends Schema.Class<AppendConversationRequest>("WorkerAppendConversationRequest")({
  execution_id: ExecutionId,
  seq: Schema.Int.pipe(Schema.positive()),
  ops: Schema.Array(ConversationOp)
}) {}

/** `POST …/runs/{runId}/artifacts`. */
export class AddArtifactRequest extends Schema.Class<AddArtifactRequest>("WorkerAddArtifactRequest")({
  execution_id: ExecutionId,
  artifact: Artifact
}) {}

/**
 * `POST …/runs/{runId}/transcript`: bytes the agent printed, appended to the run's transcript.
 * With `offset` (where in the transcript these bytes go: the claim's `transcript_bytes`, then each
 * answer's), bytes the transcript already has are not appended again, so a retry is a no-op.
 */
export class AppendTranscriptRequest extends Schema.Class<AppendTranscriptRequest>("WorkerAppendTranscriptRequest")({
  execution_id: ExecutionId,
  data_base64: Schema.String,
  offset: Schema.optional(Schema.NonNegativeInt)
}) {}

/** The transcript's size after an append: the `offset` of the next one. */
export class AppendTranscriptResponse extends Schema.Class<AppendTranscriptResponse>("WorkerAppendTranscriptResponse")({
  success: Schema.Literal(true),
  transcript_bytes: Schema.NonNegativeInt
}) {}

/** An environment of the worker's team (the port's `StoredEnvironment`). */
export class WorkerEnvironment extends Schema.Class<WorkerEnvironment>("WorkerEnvironment")({
  item: Environment,
  team_uid: TeamUid,
  creator_uid: PrincipalUid
}) {}

/** `{success: true}`. */
export class WorkerOk extends Schema.Class<WorkerOk>("WorkerOk")({ success: Schema.Literal(true) }) {}

/** `DELETE /workers/{workerId}/binding`: whether the id was bound to a service account (and no longer is). */
export class ReleaseWorkerResponse extends Schema.Class<ReleaseWorkerResponse>("ReleaseWorkerResponse")({
  released: Schema.Boolean
}) {}
