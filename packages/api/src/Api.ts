/**
 * The HTTP API of Agent Runs as one `@effect/platform` HttpApi, shared by the server (handlers)
 * and clients (`HttpApiClient.make(Api)`). Every path is under `/api/v1`.
 *
 * Errors: each core error travels as `application/problem+json` (see Problems.ts). Attached to the
 * whole API: 400 invalid_request (any endpoint can get malformed input, ids included), 403
 * not_authorized (any endpoint: role, TEAM header, admin), 429 rate_limited, 500 internal_error,
 * 503 resource_unavailable; 401 comes with the authentication middleware of every group. Per
 * endpoint (docs/reference/errors.md): 404 resource_not_found (lookups by id, and references in
 * bodies), 403 feature_not_available (run list, schedule creation), 409 conflict (cancel, the
 * 21st webhook), 422 operation_not_supported (cancel, conversations), 413 payload_too_large
 * (every endpoint with a body). Request decoding failures (malformed ids, bodies, query or
 * header values) become 400 invalid_request problems through `DecodeErrors.DecodeErrorsAsProblems`,
 * which the server must provide; the document lists them that way.
 *
 * The self-hosted worker protocol (`/api/v1/workers/{workerId}/…`) is the `workers` group.
 *
 * Not here (served beside the API by the server): the webhook ingress
 * (`POST /webhooks/w/{uid}[/{token}]`, raw bodies), `/openapi.json`, `/docs`, `/healthz`, `/readyz`, `/metrics`.
 */
import { HttpApi, OpenApi } from "@effect/platform"
import { AdminGroup } from "./endpoints/Admin.js"
import { AgentsGroup } from "./endpoints/Agents.js"
import { AuditGroup } from "./endpoints/Audit.js"
import { AutomationsGroup } from "./endpoints/Automations.js"
import { ConversationsGroup } from "./endpoints/Conversations.js"
import { EnvironmentsGroup } from "./endpoints/Environments.js"
import { GitHubGroup } from "./endpoints/GitHub.js"
import { HarnessSupportGroup } from "./endpoints/HarnessSupport.js"
import { IdentityGroup } from "./endpoints/Identity.js"
import { RunsGroup } from "./endpoints/Runs.js"
import { SchedulesGroup } from "./endpoints/Schedules.js"
import { SecretsGroup } from "./endpoints/Secrets.js"
import { TeamGroup } from "./endpoints/Team.js"
import { WebhooksGroup } from "./endpoints/Webhooks.js"
import { OutboundWebhooksGroup } from "./endpoints/OutboundWebhooks.js"
import { WorkersGroup } from "./endpoints/Workers.js"
import * as Problems from "./Problems.js"

/** The base path of every endpoint; the major version of the API. */
export const API_PREFIX = "/api/v1"

/** The version of the API description. */
export const API_VERSION = "1.0.0"

/** The whole API. */
export class Api extends HttpApi.make("AgentRuns")
  .add(AgentsGroup)
  .add(EnvironmentsGroup)
  .add(RunsGroup)
  .add(ConversationsGroup)
  .add(SchedulesGroup)
  .add(WebhooksGroup)
  .add(OutboundWebhooksGroup)
  .add(AutomationsGroup)
  .add(SecretsGroup)
  .add(GitHubGroup)
  .add(AdminGroup)
  .add(TeamGroup)
  .add(AuditGroup)
  .add(IdentityGroup)
  .add(HarnessSupportGroup)
  .add(WorkersGroup)
  .addError(Problems.InvalidRequest, { status: 400 })
  .addError(Problems.NotAuthorized, { status: 403 })
  .addError(Problems.RateLimited, { status: 429 })
  .addError(Problems.InternalError, { status: 500 })
  .addError(Problems.ResourceUnavailable, { status: 503 })
  .prefix(API_PREFIX)
  .annotateContext(
    OpenApi.annotations({
      title: "Agent Runs API",
      version: API_VERSION,
      transform: Problems.documentProblemResponses,
      description:
        "Run coding agents: create runs, list and inspect them (timeline, conversation, transcript), send " +
        "follow-ups, cancel; schedules, environments, webhooks and automations, team secrets, and the admin API. " +
        "Every endpoint needs `Authorization: Bearer <token>`; `X-Team-Uid` selects the team. Errors are " +
        "`application/problem+json` with `error_code` and `retryable`; retryable errors also send " +
        "`x-should-retry: true`, and 429 sends `Retry-After`."
    })
  )
{}
