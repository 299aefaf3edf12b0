/**
 * The self-hosted worker protocol (docs/workers.md): what the `agent-runs worker`
 * daemon calls, under `/workers/{workerId}/…`, with the token of a service account of its team
 * (`bearerAuth`; the TEAM header selects the team). Presence (heartbeat, disconnect), the
 * long-polled claim, and for a run the worker holds: its execution's events and the agent's report
 * (applied by the server as its own executions' are), lease renewal, follow-ups, the conversation
 * log, artifacts, transcript.
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
      .addError(Problems.OperationNotSupported, { status: 422 })
      .annotateContext(
        doc(
          "Worker heartbeat",
          "Says the worker is connected (listed by GET /agent/connected-self-hosted-workers until " +
            "`stale_after_seconds` after its latest heartbeat); answers the intervals and lease length it follows, " +
            "and the worker protocols and release of the server (`protocol`, `oldest_protocol`, `version`). " +
            "422: the worker's `oldest_protocol`–`protocol` has none the server speaks (releases more than one minor apart). " +
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
      .addError(Problems.OperationNotSupported, { status: 422 })
      .annotateContext(
        doc(
          "Claim a run (long poll)",
          "Waits up to `wait_seconds` (default 20, at most 25) for the QUEUED run (highest `config.priority`, then oldest) of the team whose " +
            "`agent_config.worker_host` is this worker, and claims it under a lease of `execution_id` (CLAIMED, " +
            "`run_claimed`); answers what its execution needs (the run, its run token, environment, attachments, history, " +
            "where its transcript ends), or `claim: null`. Only while the worker's latest heartbeat is at most 2 intervals " +
            "old. `protocol`: the one agreed at the heartbeat (the lower of both sides' newest). 422: `protocol` absent or one the server " +
            "no longer speaks (the worker is more than one minor release apart). " + forbidden
        )
      )
  )
  .add(
    HttpApiEndpoint.post("workerRecordEvents")`/workers/${workerId}/runs/${P.runId}/events`
      .setHeaders(TeamHeaders)
      .setPayload(Worker.RecordEventsRequest)
      .addSuccess(Worker.RecordEventsResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .annotateContext(
        doc(
          "Record the execution's events",
          "The holding execution's events, applied in order at once through the run state machine, as the server's own " +
            "executions' are: `EnvironmentSetupStarted`, `EnvironmentSetupSucceeded`, `EnvironmentSetupFailed` (`message`), " +
            "`Start`, `Succeed` (`message`?), `Block` (`message`), `Fail` and `Error` (`error_code`, `message`). Answers the " +
            "run's state after them. An event that no longer applies is a 409. " + held
        )
      )
  )
  .add(
    HttpApiEndpoint.post("workerReport")`/workers/${workerId}/runs/${P.runId}/report`
      .setHeaders(TeamHeaders)
      .setPayload(Worker.ReportRequest)
      .addSuccess(Worker.WorkerOk)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .annotateContext(
        doc("Record the agent's report", "What the agent reported so far: its session, the run's usage, its status line. " + held)
      )
  )
  .add(
    HttpApiEndpoint.post("workerUpdateRun")`/workers/${workerId}/runs/${P.runId}/update`
      .setHeaders(TeamHeaders)
      .addSuccess(Worker.WorkerOk)
      .addError(Problems.OperationNotSupported, { status: 422 })
      .annotateContext(
        doc(
          "Write a run (previous protocol)",
          "Workers of the previous protocol wrote whole runs here. Always 422 `operation_not_supported`, telling the worker to upgrade."
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
      .addError(Problems.OperationNotSupported, { status: 422 })
      .annotateContext(
        doc(
          "Renew a lease",
          "Extends the execution's lease by the server's lease length, while it has not run out (a lapsed lease is lost: 409). " +
            "422: `protocol` absent or one the server no longer speaks (as for a claim). " + held
        )
      )
  )
  .add(
    HttpApiEndpoint.post("workerTakeFollowups")`/workers/${workerId}/runs/${P.runId}/followups`
      .setHeaders(TeamHeaders)
      .setPayload(Worker.TakeFollowupsRequest)
      .addSuccess(Worker.FollowupsResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .annotateContext(
        doc("Take follow-ups", "Removes and answers the follow-ups waiting for the holding execution's agent, oldest first. " + held)
      )
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
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(
        doc(
          "Record an artifact",
          "An artifact the agent reported in its output, stamped with the server's time. 413 once the run has 1000 artifacts. " + held
        )
      )
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
          "Bytes the agent printed (base64), appended to the run's raw transcript at `offset` (the claim's " +
            "`transcript_bytes`, then each answer's); answers its size after. Bytes the transcript already has are not " +
            "appended again, so a retried request is a no-op. 413 past the run's output limit (`max_output_bytes`). " + held
        )
      )
  )
  .add(
    HttpApiEndpoint.post("workerSaveAgentState")`/workers/${workerId}/runs/${P.runId}/agent-state`
      .setHeaders(TeamHeaders)
      .setPayload(Worker.SaveAgentStateRequest)
      .addSuccess(Worker.SaveAgentStateResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(
        doc(
          "Keep the agent CLI's session files",
          "A part (at most 512 KiB, base64) of the session files the holding execution's agent CLI left, a gzipped tar of " +
            "`total_bytes` in all, written at `offset`; once every byte is there they are kept for the run's next " +
            "execution (`saved`), replacing earlier ones. A part sent again is a no-op. 413: over 16 MiB in all. " + held
        )
      )
  )
  .add(
    HttpApiEndpoint.post("workerReadAgentState")`/workers/${workerId}/runs/${P.runId}/agent-state/read`
      .setHeaders(TeamHeaders)
      .setPayload(Worker.ReadAgentStateRequest)
      .addSuccess(Worker.ReadAgentStateResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .annotateContext(
        doc(
          "Read the agent CLI's session files",
          "The session files the run's earlier execution kept (base64), for the holding execution to resume the agent " +
            "CLI's session; `state: null` when none were kept. " + held
        )
      )
  )
  .middleware(Authentication)
  .annotateContext(
    doc(
      "Workers",
      "The self-hosted worker protocol (`agent-runs worker`), authenticated by a service account's token. See docs/workers.md."
    )
  )
{}
