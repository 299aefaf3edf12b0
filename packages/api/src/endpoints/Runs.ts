/**
 * Runs: create (and the deprecated alias), list, counts by state, read, timeline, conversation,
 * transcript (a redirect, or its link as JSON), follow-ups, cancel, the lookup by external
 * reference, and the live event stream.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Conversation, Ids, Run, Timeline } from "@agent-runs/core"
import { Schema } from "effect"
import {
  DeleteResponse,
  ListRunsUrlParamsDescription,
  RunByExternalReferenceResponse,
  RunByExternalReferenceUrlParams,
  RunCountsDescription,
  RunCountsUrlParams,
  RunFollowupResponse,
  RunListUrlParams,
  TranscriptLinkResponse
} from "../Models.js"
import * as Problems from "../Problems.js"
import { isJson, type Json } from "../internal/Json.js"
import { IdempotentTeamHeaders } from "../Idempotency.js"
import { Authentication, TeamHeaders } from "../Security.js"
import { doc, EventStream, TranscriptRedirect } from "./Doc.js"
import * as P from "./Params.js"

const createDescription =
  "Creates a run from a prompt and optional configuration (model, environment, MCP servers, base prompt, " +
  "skill). The run is written PENDING, resolved and admitted: QUEUED, or left PENDING with `at_capacity: " +
  "true` while the team is at max_concurrent_runs. 400: missing prompt or invalid config (the `error` names " +
  "the field); 403: no permission for a referenced resource; 404: parent run or conversation not found."

/** Documents the run list's `metadata` parameter as a deepObject and `state` as repeated keys. */
const queryStyles = (operation: Json): Json => ({
  ...operation,
  parameters: (Array.isArray(operation["parameters"]) ? operation["parameters"] : []).map((parameter: unknown) => {
    if (!isJson(parameter) || parameter["in"] !== "query") return parameter
    if (parameter["name"] === "metadata") return { ...parameter, style: "deepObject", explode: true }
    if (parameter["name"] === "state") return { ...parameter, style: "form", explode: true }
    return parameter
  })
})

/** The runs group. */
export class RunsGroup extends HttpApiGroup.make("runs")
  .add(
    HttpApiEndpoint.post("createRun", "/agent/runs")
      .setHeaders(IdempotentTeamHeaders)
      .setPayload(Run.RunAgentRequest)
      .addSuccess(Run.RunAgentResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .addError(Problems.OperationNotSupported, { status: 422 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(doc("Run an agent", createDescription))
  )
  .add(
    HttpApiEndpoint.post("createRunDeprecated", "/agent/run")
      .setHeaders(IdempotentTeamHeaders)
      .setPayload(Run.RunAgentRequest)
      .addSuccess(Run.RunAgentResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .addError(Problems.OperationNotSupported, { status: 422 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(
        doc("Run an agent (deprecated)", `Deprecated alias of POST /agent/runs. ${createDescription}`, {
          deprecated: true
        })
      )
  )
  .add(
    HttpApiEndpoint.get("listRuns", "/agent/runs")
      .setHeaders(TeamHeaders)
      .setUrlParams(RunListUrlParams)
      .addSuccess(Run.ListRunsResponse)
      .addError(Problems.FeatureNotAvailable, { status: 403 })
      .annotateContext(doc("List runs", ListRunsUrlParamsDescription))
      .annotateContext(OpenApi.annotations({ transform: queryStyles }))
  )
  .add(
    HttpApiEndpoint.get("countRuns", "/agent/run-counts")
      .setHeaders(TeamHeaders)
      .setUrlParams(RunCountsUrlParams)
      .addSuccess(Run.RunCountsResponse)
      .addError(Problems.FeatureNotAvailable, { status: 403 })
      .annotateContext(doc("Count runs by state", RunCountsDescription))
      .annotateContext(OpenApi.annotations({ transform: queryStyles }))
  )
  .add(
    HttpApiEndpoint.get("getRun")`/agent/runs/${P.runId}`
      .setHeaders(TeamHeaders)
      .addSuccess(Run.RunItem)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(
        doc("Get a run", "The run with its full prompt, session link, resolved configuration, artifacts and status.")
      )
  )
  .add(
    HttpApiEndpoint.get("getRunTimeline")`/agent/runs/${P.runId}/timeline`
      .setHeaders(TeamHeaders)
      .addSuccess(Timeline.RunTimeline)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(
        doc("Get a run's timeline", "The run's setup and lifecycle events in order (`sequence` strictly increases).")
      )
  )
  .add(
    HttpApiEndpoint.get("getRunConversation")`/agent/runs/${P.runId}/conversation`
      .setHeaders(TeamHeaders)
      .addSuccess(Conversation.ConversationResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.OperationNotSupported, { status: 422 })
      .annotateContext(
        doc(
          "Get a run's conversation",
          "The normalized conversation: steps, messages and blocks (text, actions, results, events). 404: run not " +
            "found or no conversation yet; 422 operation_not_supported: the conversation's format cannot be normalized."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("getRunTranscript")`/agent/runs/${P.runId}/transcript`
      .setHeaders(TeamHeaders)
      .addSuccess(TranscriptRedirect)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(
        doc(
          "Download a run's raw transcript",
          "Redirects (302) to a signed, time-limited download URL of everything the agent printed. 404: run not " +
            "found or no transcript."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("getRunTranscriptLink")`/agent/runs/${P.runId}/transcript-link`
      .setHeaders(TeamHeaders)
      .addSuccess(TranscriptLinkResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(
        doc(
          "Get a run's transcript link",
          "The signed, time-limited download URL that GET /agent/runs/{runId}/transcript redirects to, as JSON " +
            "(`url`, `expires_at`), for clients that cannot follow the redirect (a browser page on another " +
            "origin). The URL needs no bearer token. 404: run not found or no transcript."
        )
      )
  )
  .add(
    HttpApiEndpoint.post("createRunFollowup")`/agent/runs/${P.runId}/followups`
      .setHeaders(IdempotentTeamHeaders)
      .setPayload(Run.RunFollowupRequest)
      .addSuccess(RunFollowupResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .addError(Problems.Conflict, { status: 409 })
      .addError(Problems.OperationNotSupported, { status: 422 })
      .annotateContext(
        doc(
          "Send a follow-up",
          "Routed by the run's state: stored for a queued or claimed run, delivered live to a running one, a new " +
            "execution of an ended run (same run and conversation), or, for a run whose environment setup failed " +
            "inside its debug window, delivered to a debug agent in the retained sandbox (the run stays FAILED). " +
            "An empty message only continues an ended run from its saved conversation; 400 otherwise, and for a run " +
            "that never started."
        )
      )
  )
  .add(
    HttpApiEndpoint.post("cancelRun")`/agent/runs/${P.runId}/cancel`
      .setHeaders(TeamHeaders)
      .addSuccess(Ids.RunId.annotations({ description: "the cancelled run's id, as a JSON string" }))
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .addError(Problems.OperationNotSupported, { status: 422 })
      .annotateContext(
        doc(
          "Cancel a run",
          "Stops the agent and ends the run CANCELLED; the body is the run id as a JSON string. 404: not found; " +
            "422 operation_not_supported: self-hosted (worker_host), LOCAL or GITHUB_ACTION runs; 400 " +
            "invalid_request: the run has already ended; 409 conflict (retryable): the run is PENDING."
        )
      )
  )
  .add(
    HttpApiEndpoint.del("deleteRun")`/agent/runs/${P.runId}`
      .setHeaders(TeamHeaders)
      .addSuccess(DeleteResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .annotateContext(
        doc(
          "Delete a run",
          "For the run's creator and the team's admins (403 otherwise; never an agent's run token). Only an ended run (409 " +
            "naming its state: cancel it first). Removes it for good, with its timeline, conversation, follow-ups, artifacts, " +
            "transcript and agent state; its children stay (docs/retention.md#deleting-a-run)."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("getRunByExternalReference", "/agent/run-by-external-reference")
      .setHeaders(TeamHeaders)
      .setUrlParams(RunByExternalReferenceUrlParams)
      .addSuccess(RunByExternalReferenceResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(
        doc(
          "Find the run of an external reference",
          "The run that reported an EXTERNAL_REFERENCE artifact with this URL (through POST " +
            "/harness-support/report-artifact). 404 when there is none or the caller may not see it."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("streamRunEvents")`/agent/runs/${P.runId}/events`
      .setHeaders(
        Schema.Struct({
          ...TeamHeaders.fields,
          "last-event-id": Schema.optional(
            Schema.String.annotations({ description: "resume after this event id (sent by EventSource on reconnect)" })
          )
        })
      )
      .addSuccess(EventStream)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(
        doc(
          "Stream a run's events",
          "Server-Sent Events: the run's timeline events (`event: timeline`) and its conversation as it grows " +
            "(`event: conversation`), ids `T-C`, resumable with `Last-Event-ID`; once the run has ended, the rest, " +
            "then `event: end` with `{run_id, state}`, and the stream closes."
        )
      )
  )
  .middleware(Authentication)
  .annotateContext(doc("Runs", "Create, list, inspect, follow up and cancel agent runs."))
{}
