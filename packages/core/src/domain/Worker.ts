/**
 * Connected self-hosted workers (docs/workers.md, `GET /agent/connected-self-hosted-workers`):
 * presence from heartbeats, scoped to the caller's team. `worker_id` is what a run's
 * `agent_config.worker_host` names; `labels` are free-form tags the worker advertises;
 * `capacity` is how many runs it takes at once and `active_runs` how many it holds now.
 */
import { Schema } from "effect"
import { Artifact } from "./Artifact.js"
import { NonBlankString, Timestamp } from "./Common.js"
import { ContentBlock, MessageRole } from "./Conversation.js"
import { ConversationOp } from "./ConversationLog.js"
import { ExecutionEvent, Report } from "./ExecutionEvent.js"
import { EnvironmentConfig } from "./Environment.js"
import { ExecutionId, TeamUid } from "./Ids.js"
import { RunItem } from "./Run.js"
import { RunState } from "./RunState.js"

/** A self-hosted worker that is connected now. */
export const ConnectedWorker = Schema.Struct({
  worker_id: NonBlankString,
  display_name: Schema.String,
  connected_at: Timestamp,
  last_heartbeat_at: Timestamp,
  labels: Schema.Array(Schema.String),
  capacity: Schema.NonNegativeInt,
  active_runs: Schema.NonNegativeInt,
  /** The worker's release as it says it (absent: release 0.1, which says none). */
  version: Schema.optional(Schema.String),
  /** The worker protocol agreed with it (absent: recorded by a server of release 0.1). */
  protocol: Schema.optional(Schema.Int)
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
// worker and the server exchange. The worker runs core's execution loop over a host that calls
// these endpoints: a claim brings what the execution needs, and the worker sends its execution's
// events, report and output, which the server applies as it does its own (engine/RunExecutions.ts).

/** A worker id: what a run's `agent_config.worker_host` names (1–64 of `[A-Za-z0-9._-]`). */
export const WorkerId = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9._-]{1,64}$/, { message: () => "must be 1 to 64 characters of A-Z, a-z, 0-9, '.', '_', '-'" })
).annotations({ identifier: "WorkerId", description: "a worker id: 1 to 64 characters of [A-Za-z0-9._-]" })

/** A worker protocol's number. */
const ProtocolNumber = Schema.Int.pipe(Schema.between(1, 1000))

/** A release's version as a side says it (named in errors and logs: no spaces nor control characters). */
const ReleaseVersion = Schema.String.pipe(
  Schema.pattern(/^[0-9A-Za-z.+-]{1,40}$/, { message: () => "must be 1 to 40 characters of A-Z, a-z, 0-9, '.', '+', '-'" })
)

/** `POST /workers/{workerId}/heartbeat`: the worker is here (sent every `heartbeat_seconds`). */
export class HeartbeatRequest extends Schema.Class<HeartbeatRequest>("WorkerHeartbeatRequest")({
  display_name: Schema.optional(Schema.String.pipe(Schema.maxLength(200))),
  labels: Schema.optional(Schema.Array(Schema.String.pipe(Schema.maxLength(100))).pipe(Schema.maxItems(50))),
  capacity: Schema.Int.pipe(Schema.between(1, 1000)),
  /** The newest worker protocol the worker speaks (WorkerProtocol.ts); absent from workers of release 0.1. */
  protocol: Schema.optional(ProtocolNumber),
  /** The oldest it still speaks. */
  oldest_protocol: Schema.optional(ProtocolNumber),
  /** The worker's release (e.g. `0.2.0`), named in errors and logs. */
  version: Schema.optional(ReleaseVersion)
}) {}

/** The server's settings a worker follows. */
export class HeartbeatResponse extends Schema.Class<HeartbeatResponse>("WorkerHeartbeatResponse")({
  /** How often to send a heartbeat. */
  heartbeat_seconds: Schema.Number,
  /** A worker is listed until this long after its last heartbeat. */
  stale_after_seconds: Schema.Number,
  /** The lease length of a claimed run; the worker renews it every third of it. */
  lease_seconds: Schema.Number,
  /** The most a run's agents may print (its transcript); the worker stops an agent past it. */
  max_output_bytes: Schema.optional(Schema.NonNegativeInt),
  /** The ceiling of a run's `max_runtime_seconds`, and its limit when it sets none; the worker stops an agent past it. */
  max_runtime_seconds: Schema.optional(Schema.Int.pipe(Schema.positive())),
  /** The newest worker protocol the server speaks (absent from servers of release 0.1, which speak 3). */
  protocol: Schema.optional(Schema.Int),
  /** The oldest it still speaks; a worker claims with the protocol both speak (WorkerProtocol.agree). */
  oldest_protocol: Schema.optional(Schema.Int),
  /** The server's release. */
  version: Schema.optional(ReleaseVersion)
}) {}

/** The newest worker protocol this release speaks (WorkerProtocol.ts: each side speaks two). */
export { WORKER_PROTOCOL } from "./WorkerProtocol.js"

/** A file the claimed run's agent gets (the payload of a webhook-started run), base64. */
export const WorkerAttachment = Schema.Struct({
  name: Schema.String,
  media_type: Schema.String,
  data_base64: Schema.String
})

/** A message of the conversation of a run's earlier executions. */
export const WorkerHistoryMessage = Schema.Struct({ role: MessageRole, content: Schema.Array(ContentBlock) })

/** Something a worker's claim hands over, or why it cannot be given (the execution then fails as on the server). */
const GivenOr = <A, I, R>(value: Schema.Schema<A, I, R>) =>
  Schema.Union(Schema.Struct({ value }), Schema.Struct({ failure: Schema.String }))

/**
 * The team secrets a claimed run's execution needs, read by the server for the worker that claimed
 * it: the value of the agent CLI's auth secret (null when it runs without one) and the run's MCP
 * servers with their secrets substituted. Only the claim's answer carries them, only to the worker
 * bound to the run's worker id in its team that asks for them (`ClaimRequest.secrets`), and not
 * for a run whose execution fails first (refused, its environment gone, a GitHub token asked); the
 * worker keeps them in memory for that execution.
 */
export const WorkerSecrets = Schema.Struct({
  agent_auth: GivenOr(Schema.NullOr(Schema.String)),
  // Without the configurations' own checks: a secret's value substituted into a field need not
  // pass them, and a failed check's message would carry the value.
  mcp_servers: GivenOr(Schema.Record({ key: Schema.String, value: Schema.Record({ key: Schema.String, value: Schema.Unknown }) }))
}).annotations({ identifier: "WorkerSecrets" })
export type WorkerSecrets = typeof WorkerSecrets.Type

/**
 * A claimed run, as its execution needs it: the run (its public item), its team, the run token,
 * its environment's configuration, attachments, the history of a continuation, where its
 * transcript ends, and the team secrets its agent gets. The worker resolves the rest of its plan
 * itself (the skill from its own repositories).
 */
export const WorkerClaim = Schema.Struct({
  /** The execution the claim started (the lease's fencing token), named by the server. */
  execution_id: ExecutionId,
  run: RunItem,
  team_uid: TeamUid,
  run_token: Schema.String,
  environment: Schema.NullOr(EnvironmentConfig),
  /** The run names an environment that no longer exists (its setup fails). */
  environment_missing: Schema.Boolean,
  /** Why its agent may not get the secrets only admins hand out (its setup fails); null when it may (absent: null). */
  refusal: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  attachments: Schema.Array(WorkerAttachment),
  history: Schema.Array(WorkerHistoryMessage),
  /** The size of the run's transcript now: where this execution's output starts (`offset` of appends). */
  transcript_bytes: Schema.NonNegativeInt,
  /** What the run's descendants hold of its budget, in US dollars (a run with a cost budget; Budget.committedBy; absent: 0). */
  descendants_committed: Schema.optionalWith(Schema.Finite.pipe(Schema.nonNegative()), { default: () => 0 }),
  /** The team secrets its agent gets (absent when none are handed over: see `WorkerSecrets`). */
  secrets: Schema.optional(WorkerSecrets)
}).annotations({ identifier: "WorkerClaim" })
export type WorkerClaim = typeof WorkerClaim.Type

/** `POST /workers/{workerId}/claim`: long-polls for a QUEUED run addressed to this worker. */
export class ClaimRequest extends Schema.Class<ClaimRequest>("WorkerClaimRequest")({
  /** Ignored (older workers chose the execution's id; the server names it now: `WorkerClaim.execution_id`). */
  execution_id: Schema.optional(ExecutionId),
  /** How long to wait for a run (0 to 25 seconds; default 20). */
  wait_seconds: Schema.optional(Schema.Number.pipe(Schema.between(0, 25))),
  /** The worker protocol agreed on (WorkerProtocol.agree); absent from workers older than protocol 3, which are told to upgrade. */
  protocol: Schema.optional(Schema.Int),
  /** The worker takes the team secrets its runs' agents get (`WorkerClaim.secrets`); without it none are read or sent. */
  secrets: Schema.optional(Schema.Boolean)
}) {}

export class ClaimResponse extends Schema.Class<ClaimResponse>("WorkerClaimResponse")({
  /** The claimed run (CLAIMED under a lease of `execution_id`), or null when none came in time. */
  claim: Schema.NullOr(WorkerClaim)
}) {}

/** `POST …/runs/{runId}/events`: the holding execution's events, applied in order at once. */
export class RecordEventsRequest extends Schema.Class<RecordEventsRequest>("WorkerRecordEventsRequest")({
  execution_id: ExecutionId,
  events: Schema.Array(ExecutionEvent).pipe(Schema.minItems(1), Schema.maxItems(10))
}) {}

/** The run's state after the events. */
export class RecordEventsResponse extends Schema.Class<RecordEventsResponse>("WorkerRecordEventsResponse")({
  state: RunState
}) {}

/** `POST …/runs/{runId}/report`: what the agent reported (session, usage, status). */
export class ReportRequest extends Schema.Class<ReportRequest>("WorkerReportRequest")({
  execution_id: ExecutionId,
  report: Report
}) {}

/** `POST …/runs/{runId}/renew`. */
export class RenewLeaseRequest extends Schema.Class<RenewLeaseRequest>("WorkerRenewLeaseRequest")({
  execution_id: ExecutionId,
  /** The worker protocol agreed on; absent from workers older than protocol 3, which are told to upgrade. */
  protocol: Schema.optional(Schema.Int)
}) {}

export class RenewLeaseResponse extends Schema.Class<RenewLeaseResponse>("WorkerRenewLeaseResponse")({
  expires_at: Schema.Number,
  /** For a run with a cost budget: what its children hold of it now, in US dollars (Budget.committedBy). */
  descendants_committed: Schema.optional(Schema.Finite.pipe(Schema.nonNegative()))
}) {}

/** `POST …/runs/{runId}/followups`: takes the follow-ups waiting for the holding execution's agent. */
export class TakeFollowupsRequest extends Schema.Class<TakeFollowupsRequest>("WorkerTakeFollowupsRequest")({
  execution_id: ExecutionId
}) {}

/** Follow-ups taken from a run's inbox, oldest first. */
export class FollowupsResponse extends Schema.Class<FollowupsResponse>("WorkerFollowupsResponse")({
  followups: Schema.Array(Schema.String)
}) {}

/** `POST …/runs/{runId}/conversation/parts`: one part of the holding execution's conversation log. */
export class AppendConversationRequest extends Schema.Class<AppendConversationRequest>("WorkerAppendConversationRequest")({
  execution_id: ExecutionId,
  seq: Schema.Int.pipe(Schema.positive()),
  ops: Schema.Array(ConversationOp)
}) {}

/** The most bytes of an agent's session files a worker sends in one part (base64 in the request). */
export const AGENT_STATE_PART_BYTES = 512 * 1024

/**
 * `POST …/runs/{runId}/agent-state`: a part of the session files the holding execution's agent CLI
 * left (a gzipped tar), `total_bytes` in all, at `offset`. The last part keeps them for the run's
 * next execution; a part sent again is a no-op.
 */
export class SaveAgentStateRequest extends Schema.Class<SaveAgentStateRequest>("WorkerSaveAgentStateRequest")({
  execution_id: ExecutionId,
  offset: Schema.NonNegativeInt,
  total_bytes: Schema.Int.pipe(Schema.positive()),
  data_base64: Schema.String.pipe(Schema.maxLength(Math.ceil(AGENT_STATE_PART_BYTES / 3) * 4))
}) {}

/** How much of the session files the server has; `saved` once they are all there and kept. */
export class SaveAgentStateResponse extends Schema.Class<SaveAgentStateResponse>("WorkerSaveAgentStateResponse")({
  received_bytes: Schema.NonNegativeInt,
  saved: Schema.Boolean
}) {}

/** `POST …/runs/{runId}/agent-state/read`: a part of the session files the run's earlier execution kept, from `offset`. */
export class ReadAgentStateRequest extends Schema.Class<ReadAgentStateRequest>("WorkerReadAgentStateRequest")({
  execution_id: ExecutionId,
  offset: Schema.optionalWith(Schema.NonNegativeInt, { default: () => 0 })
}) {}

/** At most `AGENT_STATE_PART_BYTES` of the kept session files (base64) and their size, or null when none were kept. */
export class ReadAgentStateResponse extends Schema.Class<ReadAgentStateResponse>("WorkerReadAgentStateResponse")({
  state: Schema.NullOr(Schema.Struct({ data_base64: Schema.String, total_bytes: Schema.NonNegativeInt }))
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
  offset: Schema.NonNegativeInt
}) {}

/** The transcript's size after an append: the `offset` of the next one. */
export class AppendTranscriptResponse extends Schema.Class<AppendTranscriptResponse>("WorkerAppendTranscriptResponse")({
  success: Schema.Literal(true),
  transcript_bytes: Schema.NonNegativeInt
}) {}

/** `{success: true}`. */
export class WorkerOk extends Schema.Class<WorkerOk>("WorkerOk")({ success: Schema.Literal(true) }) {}

/** `DELETE /workers/{workerId}/binding`: whether the id was bound to a service account (and no longer is). */
export class ReleaseWorkerResponse extends Schema.Class<ReleaseWorkerResponse>("ReleaseWorkerResponse")({
  released: Schema.Boolean
}) {}
