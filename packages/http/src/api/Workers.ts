/**
 * The self-hosted worker protocol (CONTRACT §5, docs/workers.md): what the `agent-runs worker`
 * daemon calls, under `/workers/{workerId}/…`, with the token of a service account of its team
 * (`bearerAuth`; the TEAM header selects the team). Presence (heartbeat, disconnect), the
 * long-polled claim, and for a run the worker holds: read, guarded update (state changes and
 * timeline events: progress and completion), lease renewal, follow-ups, conversation, artifacts,
 * transcript; and the environments it needs.
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "@effect/platform"
import { Worker } from "@agent-runs/core"
import * as P from "./Params.js"
import * as Problems from "../Problems.js"
import { Authentication, TeamHeaders } from "../Security.js"
import { doc } from "./Doc.js"

const workerId = HttpApiSchema.param("workerId", Worker.WorkerId)

const forbidden = "403: not a service account with the member or admin role in the team."
const held = "404: not a run of this worker (its team, `agent_config.worker_host` = its id); 409 conflict: " +
  "the execution no longer holds the run (its lease expired and it was requeued, or it ended): stop it."

/** The workers group. */
export class WorkersGroup extends HttpApiGroup.make("workers")
  .add(
    HttpApiEndpoint.post("workerHeartbeat")`/workers/${workerId}/heartbeat`
      .setHeaders(TeamHeaders)
      .setPayload(Worker.HeartbeatRequest)
      .addSuccess(Worker.HeartbeatResponse)
      .annotateContext(
        doc(
          "Worker heartbeat",
          "Says the worker is connected (listed by GET /agent/connected-self-hosted-workers until " +
            "`stale_after_seconds` after its latest heartbeat); answers the intervals and lease length it follows. " +
            forbidden
        )
      )
  )
  .add(
    HttpApiEndpoint.del("workerDisconnect")`/workers/${workerId}/heartbeat`
      .setHeaders(TeamHeaders)
      .addSuccess(Worker.WorkerOk)
      .annotateContext(doc("Worker disconnect", "The worker stops: it is no longer listed. " + forbidden))
  )
  .add(
    HttpApiEndpoint.del("workerRelease")`/workers/${workerId}/binding`
      .setHeaders(TeamHeaders)
      .addSuccess(Worker.ReleaseWorkerResponse)
      .annotateContext(
        doc(
          "Release a worker id (team admin)",
          "A worker id belongs to the service account that used it first in the team; no other may use it (403). " +
            "A team admin releases it: the next service account to call as this worker binds it (revoke the old " +
            "account's tokens first, or it takes the id back on its next call). `released` is false when it was not " +
            "bound. 403: not a team admin."
        )
      )
  )
  .add(
    HttpApiEndpoint.post("workerClaim")`/workers/${workerId}/claim`
      .setHeaders(TeamHeaders)
      .setPayload(Worker.ClaimRequest)
      .addSuccess(Worker.ClaimResponse)
      .annotateContext(
        doc(
          "Claim a run (long poll)",
          "Waits up to `wait_seconds` (default 20, at most 25) for the oldest QUEUED run of the team whose " +
            "`agent_config.worker_host` is this worker, and claims it under a lease of `execution_id` (CLAIMED, " +
            "`run_claimed`); answers it with its run token, or `run: null`. Only while the worker's latest heartbeat is " +
            "at most 2 intervals old. " + forbidden
        )
      )
  )
  .add(
    HttpApiEndpoint.get("workerGetRun")`/workers/${workerId}/runs/${P.runId}`
      .setHeaders(TeamHeaders)
      .addSuccess(Worker.WorkerRun)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(doc("Read a run of this worker", "The run as stored, with its lease. " + held))
  )
  .add(
    HttpApiEndpoint.post("workerUpdateRun")`/workers/${workerId}/runs/${P.runId}/update`
      .setHeaders(TeamHeaders)
      .setPayload(Worker.UpdateRunRequest)
      .addSuccess(Worker.WorkerOk)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .annotateContext(
        doc(
          "Record progress or completion",
          "A guarded write by the execution holding the run (guard: the state it read and its execution id): " +
            "the new state (setup, INPROGRESS, SUCCEEDED, FAILED, BLOCKED, ERROR), status message, times, session, " +
            "usage, and the timeline events of its execution. Everything else of the run stays the server's. " + held
        )
      )
  )
  .add(
    HttpApiEndpoint.post("workerRenewLease")`/workers/${workerId}/runs/${P.runId}/renew`
      .setHeaders(TeamHeaders)
      .setPayload(Worker.RenewLeaseRequest)
      .addSuccess(Worker.RenewLeaseResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .annotateContext(doc("Renew a lease", "Extends the execution's lease by the server's lease length. " + held))
  )
  .add(
    HttpApiEndpoint.post("workerTakeFollowups")`/workers/${workerId}/runs/${P.runId}/take-followups`
      .setHeaders(TeamHeaders)
      .addSuccess(Worker.FollowupsResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(doc("Take follow-ups", "Removes and answers the run's waiting follow-ups, oldest first. " + held))
  )
  .add(
    HttpApiEndpoint.get("workerGetConversation")`/workers/${workerId}/runs/${P.runId}/conversation`
      .setHeaders(TeamHeaders)
      .addSuccess(Worker.WorkerConversation)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(doc("Read the conversation", "Every execution's steps so far (the history of a continuation). " + held))
  )
  .add(
    HttpApiEndpoint.post("workerAppendConversation")`/workers/${workerId}/runs/${P.runId}/conversation/parts`
      .setHeaders(TeamHeaders)
      .setPayload(Worker.AppendConversationRequest)
      .addSuccess(Worker.WorkerOk)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(
        doc(
          "Append to the conversation",
          "Stores a part (`seq` from 1) of the holding execution's conversation log: its operations since the previous part. " +
            "A part stored already is left as it is, so a retry is harmless. " + held
        )
      )
  )
  .add(
    HttpApiEndpoint.put("workerSaveConversation")`/workers/${workerId}/runs/${P.runId}/conversation`
      .setHeaders(TeamHeaders)
      .addSuccess(Worker.WorkerOk)
      .addError(Problems.OperationNotSupported, { status: 422 })
      .annotateContext(
        doc(
          "Save the conversation (previous protocol)",
          "Workers of the previous protocol saved whole conversations here. Always 422 `operation_not_supported`, telling the worker to upgrade."
        )
      )
  )
  .add(
    HttpApiEndpoint.post("workerAddArtifact")`/workers/${workerId}/runs/${P.runId}/artifacts`
      .setHeaders(TeamHeaders)
      .setPayload(Worker.AddArtifactRequest)
      .addSuccess(Worker.WorkerOk)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .annotateContext(doc("Record an artifact", "An artifact the agent reported in its output. " + held))
  )
  .add(
    HttpApiEndpoint.post("workerAppendTranscript")`/workers/${workerId}/runs/${P.runId}/transcript`
      .setHeaders(TeamHeaders)
      .setPayload(Worker.AppendTranscriptRequest)
      .addSuccess(Worker.AppendTranscriptResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(
        doc(
          "Append to the transcript",
          "Bytes the agent printed (base64), appended to the run's raw transcript; answers its size after. With " +
            "`offset` (the claim's `transcript_bytes`, then each answer's), bytes the transcript already has are not " +
            "appended again, so a retried request is a no-op. " + held
        )
      )
  )
  .add(
    HttpApiEndpoint.get("workerGetEnvironment")`/workers/${workerId}/environments/${P.environmentUid}`
      .setHeaders(TeamHeaders)
      .addSuccess(Worker.WorkerEnvironment)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(doc("Read an environment", "An environment of the worker's team (image, repositories, setup commands). 404 otherwise."))
  )
  .middleware(Authentication)
  .annotateContext(
    doc(
      "Workers",
      "The self-hosted worker protocol (`agent-runs worker`), authenticated by a service account's token. See docs/workers.md."
    )
  )
{}
