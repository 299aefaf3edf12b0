import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, DateTime, Either, JSONSchema, Redacted, Schema } from "effect"
import * as fc from "fast-check"
import { ListAgentsResponse, parseSkillSpec, SkillSpec } from "../src/domain/Agent.js"
import { Artifact, ArtifactReport, stampArtifact } from "../src/domain/Artifact.js"
import {
  Automation,
  CreateAutomationRequest,
  ListAutomationsResponse,
  TestFilterRequest,
  TestFilterResult,
  UpdateAutomationRequest
} from "../src/domain/Automation.js"
import { decodeRequest, JsonValue, PageInfo, Scope, Timestamp } from "../src/domain/Common.js"
import { ConversationResponse, readSkillAction } from "../src/domain/Conversation.js"
import {
  CreateEnvironmentRequest,
  Environment,
  ListEnvironmentsResponse,
  UpdateEnvironmentRequest
} from "../src/domain/Environment.js"
import {
  CreatePrincipalRequest,
  CreateTeamRequest,
  CreateServiceAccountRequest,
  CreateTokenRequest,
  ListTeamMembersResponse,
  PatchPrincipalRequest,
  SetMembershipRequest,
  CreateTokenResponse,
  ListTeamsResponse,
  PatchTeamRequest,
  Principal,
  Team,
  TokenRecord
} from "../src/domain/Identity.js"
import { arbitrary } from "./support/arbitraries.js"
import {
  AgentConfig,
  AgentSkill,
  ListRunsResponse,
  RunAgentRequest,
  RunAgentResponse,
  RunFollowupRequest,
  RunItem
} from "../src/domain/Run.js"
import {
  CreateScheduledAgentRequest,
  DeleteScheduledAgentResponse,
  ListScheduledAgentsResponse,
  ScheduledAgentItem,
  UpdateScheduledAgentRequest
} from "../src/domain/Schedule.js"
import { ListSecretsResponse, PutSecretRequest } from "../src/domain/Secret.js"
import { RunTimeline } from "../src/domain/Timeline.js"
import {
  CreateWebhookRequest,
  Delivery,
  IngressAccepted,
  ListDeliveriesResponse,
  ListWebhooksResponse,
  PatchWebhookRequest,
  Webhook,
  WebhookWithSecret
} from "../src/domain/Webhook.js"
import { ListConnectedWorkersResponse } from "../src/domain/Worker.js"

// ---------------------------------------------------------------------------------------------
// Fixture ids (UUIDv7 for runs, conversations, executions; 22 base62 characters otherwise)
// ---------------------------------------------------------------------------------------------

const RUN = "01936f2a-8b7c-7d4e-9f01-23456789abcd"
const RUN_2 = "01936f2b-0000-7abc-8def-0123456789ab"
const RUN_3 = "01936f2b-1111-7abc-aaaa-0123456789ab"
const CONVERSATION = "01936f2a-8b7d-7000-a000-000000000001"
const EXECUTION = "01936f2a-8b7e-7111-b222-333344445555"
const TEAM = "Tm7QpX2vLk9sRw4Yz1Ab3C"
const USER = "Us3rAbCdEfGhIjKlMnOpQr"
const SERVICE_ACCOUNT = "SvcAcct0123456789abcde"
const ENV = "EnvUid0123456789ABCDEF"
const SCHEDULE = "Sched0123456789ABCDEFG"
const HOOK = "Hook0123456789ABCDEFGH"
const DELIVERY = "Deliv0123456789abcdefg"
const AUTOMATION = "Auto0123456789abcdefgh"
const TOKEN_ID = "Tok0123456789abcdefghi"

/** Decodes the wire fixture and encodes it back: the result must be the fixture, key for key. */
const roundTrip = <A, I>(schema: Schema.Schema<A, I>, fixture: unknown): A => {
  const decoded = Schema.decodeUnknownSync(schema)(fixture)
  expect(Schema.encodeSync(schema)(decoded)).toStrictEqual(fixture)
  return decoded
}

/** The `InvalidRequest` of a body that must be rejected. */
const rejection = <A, I>(schema: Schema.Schema<A, I>, body: unknown) => {
  const result = decodeRequest(schema)(body)
  if (Either.isRight(result)) throw new Error(`expected ${JSON.stringify(body)} to be rejected`)
  return result.left
}

const rejects = <A, I>(schema: Schema.Schema<A, I>, value: unknown): boolean =>
  Either.isLeft(Schema.decodeUnknownEither(schema)(value))

const accepted = <A, I>(schema: Schema.Schema<A, I>, body: unknown): A => {
  const result = decodeRequest(schema)(body)
  if (Either.isLeft(result)) throw new Error(`expected acceptance, got ${result.left.message}`)
  return result.right
}


/** Property: the JSON text of any value decodes back to a value with the same encoding. */
const jsonRoundTrip = <A, I>(schema: Schema.Schema<A, I>) => {
  const encode = Schema.encodeSync(schema)
  const decode = Schema.decodeUnknownSync(schema)
  fc.assert(
    fc.property(arbitrary(schema), (value) => {
      const wire = JSON.parse(JSON.stringify(encode(value)))
      expect(encode(decode(wire))).toStrictEqual(wire)
    }),
    { numRuns: 200 }
  )
}

const msUtc = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

const creator = { type: "user", uid: USER, display_name: "Ada Lovelace" }
const executor = { type: "service_account", uid: SERVICE_ACCOUNT, display_name: "release-bot" }

const fullConfig = {
  name: "nightly-dependency-check",
  model_id: "claude-sonnet-4",
  base_prompt: "You keep dependencies current.",
  environment_id: ENV,
  skill_spec: "acme/platform:.agents/skills/deps/SKILL.md",
  mcp_servers: {
    github: { command: "npx", args: ["-y", "@modelcontextprotocol/server-github"], env: { GITHUB_TOKEN: "x" } },
    docs: { url: "https://mcp.example.com/sse", headers: { authorization: "Bearer y" } },
    shared: { server_id: "linear" }
  },
  worker_host: "build-box-1",
  computer_use_enabled: false,
  agent_identity_uid: SERVICE_ACCOUNT
}

const artifacts = [
  {
    artifact_type: "PULL_REQUEST",
    created_at: "2026-11-22T03:20:00.000Z",
    data: { branch: "deps/bump-effect", url: "https://github.com/acme/platform/pull/42" }
  },
  { artifact_type: "PLAN", created_at: "2026-11-22T03:18:00.500Z", data: { document_uid: "doc-1", title: "Plan" } },
  {
    artifact_type: "SCREENSHOT",
    created_at: "2026-11-22T03:19:00.000Z",
    data: { url: "https://runs.example/blobs/s.png", media_type: "image/png" }
  },
  {
    artifact_type: "FILE",
    created_at: "2026-11-22T03:19:30.000Z",
    data: { name: "report.csv", url: "https://runs.example/blobs/r.csv", size_bytes: 2048 }
  },
  {
    artifact_type: "EXTERNAL_REFERENCE",
    created_at: "2026-11-22T03:21:00.999Z",
    data: { url: "https://linear.app/acme/issue/ENG-7" }
  }
]

const finishedRun = {
  run_id: RUN,
  task_id: RUN,
  title: "Bump dependencies",
  prompt: "Update all dependencies and open a PR",
  state: "SUCCEEDED",
  created_at: "2026-11-22T03:17:28.123Z",
  updated_at: "2026-11-22T03:25:00.000Z",
  started_at: "2026-11-22T03:17:30.001Z",
  ended_at: "2026-11-22T03:25:00.000Z",
  session_id: "sess-1",
  session_link: "http://127.0.0.1:8080/runs/" + RUN,
  conversation_id: CONVERSATION,
  agent_config: fullConfig,
  agent_skill: { name: "deps", description: "Keeps dependencies current", full_path: ".agents/skills/deps/SKILL.md" },
  creator,
  executor,
  source: "SCHEDULED_AGENT",
  execution_location: "REMOTE",
  environment_id: ENV,
  schedule: { schedule_id: SCHEDULE, schedule_name: "Nightly deps", cron_schedule: "0 3 * * *" },
  parent_run_id: RUN_2,
  ancestor_run_ids: [RUN_3, RUN_2],
  metadata: { ticket: "ENG-7", backfilled: "true" },
  artifacts,
  status_message: {
    message: "environment setup failed: npm ci exited 1",
    error_code: "environment_setup_failed",
    retryable: false,
    session_debug_until: "2026-11-22T03:55:00.000Z"
  },
  request_usage: { input_tokens: 12000, output_tokens: 3400, inference_cost: 0.42, compute_cost: 0.03 },
  is_sandbox_running: false,
  is_run_type_cancellable: true,
  scope: { type: "Team", uid: TEAM },
  attempt: 1,
  execution_count: 2
}

const freshRun = {
  run_id: RUN_2,
  task_id: RUN_2,
  title: "Say hello",
  prompt: "@say hello",
  state: "QUEUED",
  created_at: "2026-11-22T03:17:28.000Z",
  updated_at: "2026-11-22T03:17:28.000Z",
  started_at: null,
  ended_at: null,
  agent_config: {},
  creator,
  executor: creator,
  source: "API",
  execution_location: "REMOTE",
  environment_id: null,
  parent_run_id: null,
  ancestor_run_ids: [],
  metadata: {},
  artifacts: [],
  request_usage: { input_tokens: 0, output_tokens: 0, inference_cost: 0, compute_cost: 0 },
  is_sandbox_running: false,
  is_run_type_cancellable: true,
  scope: { type: "User", uid: USER },
  attempt: 1,
  execution_count: 1
}

const environmentConfig = {
  name: "platform",
  description: "The platform monorepo",
  docker_image: "node:22-bookworm",
  github_repos: [{ owner: "acme", repo: "platform" }],
  setup_commands: ["npm ci"],
  failure_session_retention_minutes: 45,
  harness: "node ./agent.js"
}

const environment = {
  uid: ENV,
  config: environmentConfig,
  sharing: { guests: [SERVICE_ACCOUNT], link_sharing: true },
  setup_failed: false,
  last_task_created: {
    id: RUN,
    title: "Bump dependencies",
    state: "INPROGRESS",
    created_at: "2026-11-22T03:17:28.123Z",
    updated_at: "2026-11-22T03:18:00.000Z",
    started_at: null
  },
  scope: { type: "Team", uid: TEAM },
  created_at: "2026-11-01T00:00:00.000Z",
  updated_at: "2026-11-02T00:00:00.000Z"
}

const schedule = {
  id: SCHEDULE,
  name: "Nightly deps",
  cron_schedule: "0 3 * * *",
  timezone: "Europe/Paris",
  enabled: true,
  prompt: "Update dependencies",
  agent_config: { environment_id: ENV, model_id: "claude-sonnet-4" },
  environment: environmentConfig,
  created_at: "2026-11-01T00:00:00.000Z",
  updated_at: "2026-11-01T00:00:00.000Z",
  created_by: creator,
  updated_by: creator,
  scope: { type: "User", uid: USER },
  history: {
    last_ran: "2026-11-22T02:00:00.000Z",
    next_run: "2026-11-23T02:00:00.000Z",
    recent_runs: [{ run_id: RUN, state: "SUCCEEDED", scheduled_for: "2026-11-22T02:00:00.000Z" }]
  },
  last_spawn_error: null
}

const webhook = {
  uid: HOOK,
  name: "github-pushes",
  auth_mode: "signature",
  signature_scheme: "github",
  secret_name: "GITHUB_WEBHOOK_SECRET",
  delivery_id_header: "X-GitHub-Delivery",
  enabled: true,
  ingress_url: `http://127.0.0.1:8080/webhooks/w/${HOOK}`,
  created_at: "2026-11-01T00:00:00.000Z",
  updated_at: "2026-11-01T00:00:00.000Z"
}

const automation = {
  id: AUTOMATION,
  name: "triage issues",
  enabled: true,
  prompt: "Triage the issue in event-payload.json",
  agent_config: { environment_id: ENV },
  trigger: {
    provider: "webhook",
    event: "received",
    filter: { webhook_ids: [HOOK], payload: { action: ["opened"], issue: { labels: { exists: true } } } }
  },
  created_at: "2026-11-01T00:00:00.000Z",
  updated_at: "2026-11-03T10:00:00.000Z"
}

const team = {
  uid: TEAM,
  name: "default",
  features: { metadata_filtering: true, scheduled_agents: false },
  max_concurrent_runs: 8,
  created_at: "2026-11-01T00:00:00.000Z",
  budgets: { default_max_cost_usd: 2, max_cost_usd: 10, max_turns: 200 },
  retention: { run_days: 90 },
  share_weight: 3
}

const conversation = {
  conversation_id: CONVERSATION,
  run_ids: [RUN],
  steps: [
    {
      id: "step-1",
      description: "Look around",
      started_at: "2026-11-22T03:17:31.000Z",
      messages: [
        {
          message_ids: ["m1"],
          role: "user",
          timestamp: "2026-11-22T03:17:31.000Z",
          content: [{ type: "text", text: "Update all dependencies" }]
        },
        {
          role: "assistant",
          content: [
            { type: "action", id: "a1", category: "skill", name: "read_skill", input: { skill_path: "deps/SKILL.md" } },
            { type: "action", id: "a2", category: "command", name: "shell", input: { command: "npm outdated" } },
            {
              type: "action_result",
              action_id: "a2",
              category: "command",
              name: "shell",
              state: "completed",
              output: { exit_code: 0, stdout: "effect 3.21 → 3.22" }
            },
            { type: "event", name: "output", data: "not json: plain text line" }
          ]
        }
      ],
      steps: [
        {
          id: "step-1.1",
          summary: "Found one outdated package",
          completed_at: "2026-11-22T03:18:00.000Z",
          messages: [{ role: "tool", content: [{ type: "text", text: "done" }] }],
          steps: []
        }
      ]
    }
  ]
}

// ---------------------------------------------------------------------------------------------

describe("Timestamp", () => {
  it("encodes in UTC with milliseconds and Z", () => {
    const decode = Schema.decodeUnknownSync(Timestamp)
    const encode = Schema.encodeSync(Timestamp)
    expect(encode(decode("2026-11-22T03:17:28.123Z"))).toBe("2026-11-22T03:17:28.123Z")
    expect(encode(decode("2026-11-22T03:17:28Z"))).toBe("2026-11-22T03:17:28.000Z")
    expect(encode(decode("2026-11-22T04:17:28.5+01:00"))).toBe("2026-11-22T03:17:28.500Z")
    expect(encode(DateTime.unsafeMake(0))).toBe("1970-01-01T00:00:00.000Z")
  })

  it("rejects what is not an RFC 3339 date-time", () => {
    const decode = Schema.decodeUnknownEither(Timestamp)
    const bads = ["2026-11-22", "2026-11-22 03:17:28Z", "yesterday", "2026-02-30T00:00:00Z", "2026-11-22T24:00:00Z", 1]
    for (const bad of bads) {
      expect(Either.isLeft(decode(bad)), String(bad)).toBe(true)
    }
    expect(Either.isRight(decode("2028-02-29T00:00:00Z"))).toBe(true)
  })

  it("always encodes 24 characters ending in Z, and decodes back to the same instant", () => {
    const encode = Schema.encodeSync(Timestamp)
    const decode = Schema.decodeUnknownSync(Timestamp)
    fc.assert(
      fc.property(Arbitrary.make(Timestamp), (t) => {
        const wire = encode(t)
        expect(wire).toMatch(msUtc)
        expect(DateTime.toEpochMillis(decode(wire))).toBe(DateTime.toEpochMillis(t))
      }),
      { numRuns: 200 }
    )
  })
})

describe("wire fixtures round-trip exactly", () => {
  it("runs", () => {
    const run = roundTrip(RunItem, finishedRun)
    expect(run.task_id).toBe(run.run_id)
    expect(DateTime.toEpochMillis(run.created_at)).toBe(Date.parse("2026-11-22T03:17:28.123Z"))
    roundTrip(RunItem, freshRun)
    roundTrip(ListRunsResponse, {
      runs: [finishedRun, freshRun],
      page_info: { has_next_page: true, next_cursor: "c2" }
    })
    roundTrip(ListRunsResponse, { runs: [], page_info: { has_next_page: false } })
    roundTrip(RunAgentResponse, { run_id: RUN, task_id: RUN, state: "PENDING", at_capacity: true })
    roundTrip(RunFollowupRequest, { message: "" })
    roundTrip(RunAgentRequest, {
      prompt: "Fix the flaky test",
      title: "Flaky test",
      config: fullConfig,
      skill: "acme/platform:fix-flaky",
      team: true,
      metadata: { ticket: "ENG-7" },
      conversation_id: CONVERSATION,
      parent_run_id: RUN,
      images: [{ name: "screen.png", mime_type: "image/png", data: "iVBORw0KGgo=" }]
    })
    roundTrip(RunAgentRequest, { prompt: "hello" })
  })

  it("artifacts, each type with its data", () => {
    for (const artifact of artifacts) roundTrip(Artifact, artifact)
    const report = roundTrip(ArtifactReport, {
      artifact_type: "EXTERNAL_REFERENCE",
      data: { url: "https://linear.app/acme/issue/ENG-7" }
    })
    const stamped = stampArtifact(report, DateTime.unsafeMake("2026-11-22T03:21:00.999Z"))
    expect(Schema.encodeSync(Artifact)(stamped)).toStrictEqual(artifacts[4])
    // data must match its artifact_type
    expect(Either.isLeft(Schema.decodeUnknownEither(Artifact)({ ...artifacts[0], artifact_type: "FILE" }))).toBe(true)
  })

  it("timelines and conversations", () => {
    roundTrip(RunTimeline, {
      run_id: RUN,
      events: [
        { sequence: 1, event_type: "run_created", occurred_at: "2026-11-22T03:17:28.123Z", execution_id: EXECUTION },
        {
          sequence: 2,
          event_type: "environment_setup_failed",
          occurred_at: "2026-11-22T03:17:40.000Z",
          execution_id: EXECUTION,
          message: "npm ci exited 1",
          data: { exit_code: 1, command: "npm ci" }
        }
      ]
    })
    const decoded = roundTrip(ConversationResponse, conversation)
    expect(decoded.steps[0]?.steps[0]?.id).toBe("step-1.1")
  })

  it("schedules", () => {
    roundTrip(ScheduledAgentItem, schedule)
    // No environment: the key is omitted (the SDK's type is optional, not nullable).
    const { environment: _environment, ...withoutEnvironment } = schedule
    const bare = roundTrip(ScheduledAgentItem, {
      ...withoutEnvironment,
      history: { last_ran: null, next_run: null, recent_runs: [] },
      last_spawn_error: "environment EnvUid0123456789ABCDEF not found"
    })
    expect(bare.environment).toBeNull()
    expect(Schema.decodeUnknownSync(ScheduledAgentItem)({ ...schedule, environment: null }).environment).toBeNull()
    roundTrip(ListScheduledAgentsResponse, { schedules: [schedule] })
    roundTrip(DeleteScheduledAgentResponse, { success: true })
    roundTrip(CreateScheduledAgentRequest, {
      name: "Nightly deps",
      cron_schedule: "0 3 * * *",
      prompt: "Update dependencies",
      enabled: true,
      agent_config: { model_id: "m" },
      timezone: "Europe/Paris",
      team: true
    })
    roundTrip(UpdateScheduledAgentRequest, { name: "n", cron_schedule: "* * * * *", prompt: "p", enabled: false })
  })

  it("environments", () => {
    roundTrip(Environment, environment)
    roundTrip(ListEnvironmentsResponse, { environments: [environment] })
    roundTrip(CreateEnvironmentRequest, {
      config: environmentConfig,
      sharing: { guests: [], link_sharing: false },
      team: true
    })
    roundTrip(UpdateEnvironmentRequest, { config: environmentConfig })
  })

  it("webhooks, deliveries and automations", () => {
    roundTrip(Webhook, webhook)
    const { secret_name: _s, delivery_id_header: _d, ...plain } = webhook
    roundTrip(Webhook, { ...plain, auth_mode: "url_token", signature_scheme: null })
    roundTrip(WebhookWithSecret, { ...webhook, secret: "whsec_c2VjcmV0" })
    roundTrip(ListWebhooksResponse, { webhooks: [webhook] })
    roundTrip(CreateWebhookRequest, {
      name: "github-pushes",
      auth_mode: "signature",
      signature_scheme: "github",
      secret: "s3cret",
      delivery_id_header: "X-GitHub-Delivery",
      enabled: true
    })
    roundTrip(PatchWebhookRequest, { enabled: false, delivery_id_header: null })
    const acceptedDelivery = {
      delivery_id: DELIVERY,
      received_at: "2026-11-22T03:17:28.123Z",
      size_bytes: 311,
      identity: "72f1a0c4-delivery",
      outcome: "ACCEPTED",
      run_ids: [RUN],
      payload: { action: "opened", issue: { number: 7, labels: [] } }
    }
    roundTrip(Delivery, acceptedDelivery)
    roundTrip(Delivery, { ...acceptedDelivery, payload: null })
    const { payload: _p, ...rejected } = acceptedDelivery
    roundTrip(Delivery, { ...rejected, outcome: "REJECTED_AUTH", run_ids: [] })
    roundTrip(ListDeliveriesResponse, { deliveries: [acceptedDelivery], page_info: { has_next_page: false } })
    roundTrip(IngressAccepted, { delivery_id: DELIVERY })
    roundTrip(Automation, automation)
    roundTrip(ListAutomationsResponse, { automations: [automation] })
    roundTrip(CreateAutomationRequest, {
      name: "triage issues",
      prompt: "Triage",
      trigger: automation.trigger,
      agent_config: {},
      enabled: false
    })
    roundTrip(UpdateAutomationRequest, { name: "n", prompt: "p", trigger: automation.trigger, enabled: true })
    roundTrip(TestFilterRequest, { delivery_id: DELIVERY })
    roundTrip(TestFilterResult, { result: "WOULD_NOT_TRIGGER", reasons: ["action: \"closed\" is not in the list"] })
  })

  it("teams, principals and tokens", () => {
    roundTrip(Team, team)
    roundTrip(ListTeamsResponse, { teams: [team] })
    roundTrip(Principal, {
      uid: USER,
      type: "user",
      display_name: "Ada Lovelace",
      instance_admin: true,
      memberships: [{ team_uid: TEAM, role: "admin" }],
      created_at: "2026-11-01T00:00:00.000Z",
      disabled_at: "2026-11-02T00:00:00.000Z",
      deleted_at: null,
      email: "ada@example.com"
    })
    roundTrip(TokenRecord, {
      token_id: TOKEN_ID,
      principal_uid: USER,
      name: "ci",
      token_hash: "a".repeat(64),
      created_at: "2026-11-01T00:00:00.000Z",
      revoked_at: null,
      expires_at: "2027-11-01T00:00:00.000Z",
      last_used_at: "2026-11-03T00:01:00.000Z",
      team_uid: TEAM,
      max_role: "member"
    })
    roundTrip(CreateTeamRequest, { name: "platform" })
    roundTrip(PatchTeamRequest, { features: { scheduled_agents: false }, max_concurrent_runs: 2 })
    roundTrip(CreatePrincipalRequest, {
      type: "service_account",
      display_name: "release-bot",
      memberships: [{ team_uid: TEAM, role: "member" }],
      instance_admin: false
    })
    roundTrip(CreateTokenRequest, { name: "laptop" })
    roundTrip(CreateTokenRequest, { name: "ci", expires_at: "2027-01-01T00:00:00.000Z", team_uid: TEAM, max_role: "viewer" })
    roundTrip(PatchPrincipalRequest, { display_name: "Ada", instance_admin: false, disabled: true })
    roundTrip(SetMembershipRequest, { role: "viewer" })
    roundTrip(CreateServiceAccountRequest, { display_name: "deploy-bot", role: "member" })
    roundTrip(ListTeamMembersResponse, {
      members: [{ uid: USER, type: "user", display_name: "Ada", role: "admin", disabled: false }],
      next_cursor: USER
    })
    roundTrip(CreateTokenResponse, { token_id: TOKEN_ID, token: "ar_Zm9vYmFyYmF6cXV4cXV1eGZvb2Jhcg" })
  })

  it("agents, workers and secrets", () => {
    roundTrip(ListAgentsResponse, {
      agents: [
        {
          name: "deps",
          variants: [
            {
              id: "acme/platform:.agents/skills/deps/SKILL.md",
              base_prompt: "You keep dependencies current.",
              description: "Keeps dependencies current",
              environments: [{ uid: ENV, name: "platform" }],
              source: { owner: "acme", name: "platform", skill_path: ".agents/skills/deps/SKILL.md" },
              last_run_timestamp: "2026-11-22T03:17:28.123Z"
            },
            {
              id: "acme/tools:broken/SKILL.md",
              base_prompt: "",
              description: "",
              environments: [],
              source: { owner: "acme", name: "tools", skill_path: "broken/SKILL.md", worker_host: "build-box-1" },
              last_run_timestamp: null,
              error: "front matter has no name"
            }
          ]
        }
      ]
    })
    roundTrip(ListConnectedWorkersResponse, {
      workers: [
        {
          worker_id: "build-box-1",
          display_name: "Build box 1",
          connected_at: "2026-11-22T00:00:00.000Z",
          last_heartbeat_at: "2026-11-22T03:17:20.000Z",
          labels: ["linux", "gpu"],
          capacity: 4,
          active_runs: 1
        }
      ]
    })
    roundTrip(ListSecretsResponse, {
      secrets: [
        {
          name: "GITHUB_WEBHOOK_SECRET",
          created_at: "2026-11-01T00:00:00.000Z",
          updated_at: "2026-11-02T00:00:00.000Z"
        }
      ]
    })
    const put = roundTrip(PutSecretRequest, { value: "hunter2" })
    expect(Redacted.value(put.value)).toBe("hunter2")
    expect(String(put.value)).not.toContain("hunter2")
  })
})

describe("property round-trips (JSON text → model → JSON text)", () => {
  const models: ReadonlyArray<readonly [string, () => void]> = [
    ["RunItem", () => jsonRoundTrip(RunItem)],
    ["RunAgentRequest", () => jsonRoundTrip(RunAgentRequest)],
    ["RunAgentResponse", () => jsonRoundTrip(RunAgentResponse)],
    ["Artifact", () => jsonRoundTrip(Artifact)],
    ["RunTimeline", () => jsonRoundTrip(RunTimeline)],
    ["ConversationResponse", () => jsonRoundTrip(ConversationResponse)],
    ["ScheduledAgentItem", () => jsonRoundTrip(ScheduledAgentItem)],
    ["CreateScheduledAgentRequest", () => jsonRoundTrip(CreateScheduledAgentRequest)],
    ["Environment", () => jsonRoundTrip(Environment)],
    ["CreateEnvironmentRequest", () => jsonRoundTrip(CreateEnvironmentRequest)],
    ["WebhookWithSecret", () => jsonRoundTrip(WebhookWithSecret)],
    ["CreateWebhookRequest", () => jsonRoundTrip(CreateWebhookRequest)],
    ["PatchWebhookRequest", () => jsonRoundTrip(PatchWebhookRequest)],
    ["Delivery", () => jsonRoundTrip(Delivery)],
    ["Automation", () => jsonRoundTrip(Automation)],
    ["Team", () => jsonRoundTrip(Team)],
    ["Principal", () => jsonRoundTrip(Principal)],
    ["TokenRecord", () => jsonRoundTrip(TokenRecord)],
    ["CreatePrincipalRequest", () => jsonRoundTrip(CreatePrincipalRequest)],
    ["PatchTeamRequest", () => jsonRoundTrip(PatchTeamRequest)],
    ["ListAgentsResponse", () => jsonRoundTrip(ListAgentsResponse)],
    ["ListConnectedWorkersResponse", () => jsonRoundTrip(ListConnectedWorkersResponse)],
    ["ListSecretsResponse", () => jsonRoundTrip(ListSecretsResponse)],
    ["PageInfo", () => jsonRoundTrip(PageInfo)],
    ["Scope", () => jsonRoundTrip(Scope)],
    ["JsonValue", () => jsonRoundTrip(JsonValue)]
  ]
  for (const [name, check] of models) {
    it(name, check)
  }

  it("every model has a JSON Schema (for the OpenAPI document); timestamps are date-times", () => {
    const schemas = [RunItem, ListRunsResponse, RunAgentRequest, ConversationResponse, CreateWebhookRequest, Delivery]
    for (const schema of [...schemas, PutSecretRequest, ScheduledAgentItem, Environment, Automation, Principal]) {
      expect(() => JSONSchema.make(schema as Schema.Schema<unknown, unknown>)).not.toThrow()
    }
    expect(JSONSchema.make(Timestamp)).toMatchObject({ $defs: { Timestamp: { type: "string", format: "date-time" } } })
  })

  it("every timestamp of a run is printed with milliseconds and Z", () => {
    const encode = Schema.encodeSync(RunItem)
    fc.assert(
      fc.property(arbitrary(RunItem), (run) => {
        const wire = encode(run)
        for (const t of [wire.created_at, wire.updated_at, wire.started_at, wire.ended_at]) {
          if (t !== null) expect(t).toMatch(msUtc)
        }
      }),
      { numRuns: 200 }
    )
  })
})

describe("request validation names the offending field", () => {
  const run = (body: object) => rejection(RunAgentRequest, body)

  it("prompt: missing, empty, blank or not a string", () => {
    for (const body of [{}, { prompt: "" }, { prompt: "   " }, { prompt: 42 }, { title: "t" }]) {
      const error = run(body)
      expect(error.field).toBe("prompt")
      expect(error.message).toContain("prompt")
      expect(error.errorCode).toBe("invalid_request")
    }
    expect(run({}).message).toMatch(/^prompt: is required, also when a skill is given: send the task as prompt/)
    expect(run({ prompt: "" }).message).toBe("prompt: must not be empty")
  })

  it("metadata: at most 20 pairs, keys of 1–64 characters, values of at most 512", () => {
    const pairs = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`key${i}`, "v"]))
    expect(accepted(RunAgentRequest, { prompt: "p", metadata: pairs(20) }).metadata).toStrictEqual(pairs(20))
    const tooMany = run({ prompt: "p", metadata: pairs(21) })
    expect(tooMany.field).toBe("metadata")
    expect(tooMany.message).toContain("20")
    expect(accepted(RunAgentRequest, { prompt: "p", metadata: { ["k".repeat(64)]: "v" } })).toBeDefined()
    const longKey = run({ prompt: "p", metadata: { ["k".repeat(65)]: "v" } })
    expect(longKey.field).toBe("metadata")
    expect(longKey.message).toContain("64")
    expect(run({ prompt: "p", metadata: { "": "v" } }).field).toBe("metadata")
    expect(accepted(RunAgentRequest, { prompt: "p", metadata: { k: "v".repeat(512) } })).toBeDefined()
    const longValue = run({ prompt: "p", metadata: { k: "v".repeat(513) } })
    expect(longValue.field).toBe("metadata")
    expect(longValue.message).toContain("512")
    expect(run({ prompt: "p", metadata: { k: 1 } }).field).toBe("metadata.k")
  })

  it("config: wrong types, the empty-environment sentinel, mixed MCP transports", () => {
    const modelId = run({ prompt: "p", config: { model_id: 7 } })
    expect(modelId.field).toBe("config.model_id")
    expect(modelId.message).toContain("config.model_id")
    const sentinel = run({ prompt: "p", config: { environment_id: "empty-environment" } })
    expect(sentinel.field).toBe("config.environment_id")
    expect(sentinel.message).toContain("empty-environment")
    expect(run({ prompt: "p", config: { environment_id: "short" } }).field).toBe("config.environment_id")
    expect(run({ prompt: "p", config: "yes" }).field).toBe("config")
    const mixed = run({ prompt: "p", config: { mcp_servers: { gh: { command: "npx", url: "https://x.example" } } } })
    expect(mixed.field).toBe("config.mcp_servers.gh")
    expect(run({ prompt: "p", config: { mcp_servers: { gh: {} } } }).field).toBe("config.mcp_servers.gh")
    const ftp = run({ prompt: "p", config: { mcp_servers: { gh: { url: "ftp://x" } } } })
    expect(ftp.field).toBe("config.mcp_servers.gh")
    expect(run({ prompt: "p", config: { skill_spec: "no-colon" } }).field).toBe("config.skill_spec")
    expect(run({ prompt: "p", images: [{ mime_type: "image/png", data: "%%" }] }).field).toBe("images[0].data")
    const text = run({ prompt: "p", images: [{ mime_type: "text/plain", data: "AAAA" }] })
    expect(text.field).toBe("images[0].mime_type")
    const six = Array.from({ length: 6 }, () => ({ mime_type: "image/png", data: "iVBORw0KGgo=" }))
    expect(run({ prompt: "p", images: six }).field).toBe("images")
    expect(run({ prompt: "p", conversation_id: "not-a-uuid" }).field).toBe("conversation_id")
    for (const seconds of [0, 1.5, 604_801, "60"]) {
      expect(run({ prompt: "p", config: { max_runtime_seconds: seconds } }).field).toBe("config.max_runtime_seconds")
    }
    expect(accepted(RunAgentRequest, { prompt: "p", config: { max_runtime_seconds: 604_800 } }).config?.max_runtime_seconds).toBe(604_800)
    expect(run({ prompt: "p", team: "yes" }).field).toBe("team")
  })

  it("a body that is not an object is rejected as a whole", () => {
    for (const body of [null, "prompt", [], 3]) {
      const error = rejection(RunAgentRequest, body)
      expect(error.field).toBe("body")
      expect(error.message).toBe("body: must be a JSON object")
    }
  })

  it("unknown fields are ignored and null optional keys mean absent", () => {
    const request = accepted(RunAgentRequest, {
      prompt: "p",
      unknown_field: { anything: true },
      title: null,
      config: { model_id: null, future_option: 1 }
    })
    expect(Schema.encodeSync(RunAgentRequest)(request)).toStrictEqual({ prompt: "p", config: {} })
    expect(accepted(AgentConfig, { worker_host: "w" })).toStrictEqual({ worker_host: "w" })
  })

  it("skill is an alias of config.skill_spec and wins over it", () => {
    const both = accepted(RunAgentRequest, { prompt: "p", skill: "a/b:one", config: { skill_spec: "a/b:two" } })
    expect(both.skillSpec).toBe("a/b:one")
    expect(accepted(RunAgentRequest, { prompt: "p", config: { skill_spec: "a/b:two" } }).skillSpec).toBe("a/b:two")
    expect(accepted(RunAgentRequest, { prompt: "p" }).skillSpec).toBeUndefined()
  })

  it("schedules: required fields, time zones, the UTC default", () => {
    const base = { name: "n", cron_schedule: "0 3 * * *", prompt: "p", enabled: true }
    const created = accepted(CreateScheduledAgentRequest, base)
    expect(created.timezone).toBe("UTC")
    expect(Schema.encodeSync(CreateScheduledAgentRequest)(created)).toStrictEqual({ ...base, timezone: "UTC" })
    for (const key of ["name", "cron_schedule", "prompt", "enabled"] as const) {
      const { [key]: _omitted, ...rest } = base
      expect(rejection(CreateScheduledAgentRequest, rest).field).toBe(key)
      expect(rejection(UpdateScheduledAgentRequest, rest).field).toBe(key)
    }
    const zone = rejection(CreateScheduledAgentRequest, { ...base, timezone: "Mars/Olympus" })
    expect(zone.field).toBe("timezone")
    expect(zone.message).toContain("IANA")
    expect(accepted(UpdateScheduledAgentRequest, base).timezone).toBeUndefined()
    expect(rejection(CreateScheduledAgentRequest, { ...base, enabled: "true" }).field).toBe("enabled")
  })

  it("environments: defaults filled, retention bounded, repositories well formed", () => {
    const created = accepted(CreateEnvironmentRequest, { config: { name: "env" } })
    expect(Schema.encodeSync(CreateEnvironmentRequest)(created)).toStrictEqual({
      config: {
        name: "env",
        description: null,
        docker_image: null,
        github_repos: [],
        setup_commands: [],
        failure_session_retention_minutes: 30
      }
    })
    expect(rejection(CreateEnvironmentRequest, { config: {} }).field).toBe("config.name")
    expect(
      rejection(CreateEnvironmentRequest, { config: { name: "e", failure_session_retention_minutes: -1 } }).field
    ).toBe("config.failure_session_retention_minutes")
    expect(
      rejection(CreateEnvironmentRequest, { config: { name: "e", github_repos: [{ owner: "a/b", repo: "c" }] } }).field
    ).toBe("config.github_repos[0].owner")
    expect(rejection(CreateEnvironmentRequest, { config: { name: "e" }, sharing: { guests: ["x"] } }).field).toBe(
      "sharing.guests[0]"
    )
  })

  it("webhooks: signature scheme with signature mode only, secret rules, header names", () => {
    expect(accepted(CreateWebhookRequest, { name: "h" })).toMatchObject({ auth_mode: "token", enabled: true })
    const noScheme = rejection(CreateWebhookRequest, { name: "h", auth_mode: "signature" })
    expect(noScheme.field).toBe("signature_scheme")
    expect(rejection(CreateWebhookRequest, { name: "h", signature_scheme: "github" }).field).toBe("signature_scheme")
    expect(rejection(CreateWebhookRequest, { name: "h", secret: "s" }).field).toBe("secret")
    expect(
      rejection(CreateWebhookRequest, {
        name: "h",
        auth_mode: "signature",
        signature_scheme: "stripe",
        secret: "s",
        secret_name: "STRIPE"
      }).field
    ).toBe("secret")
    expect(rejection(CreateWebhookRequest, { name: "h", auth_mode: "basic" }).field).toBe("auth_mode")
    expect(rejection(CreateWebhookRequest, { name: "h", delivery_id_header: "Bad Header" }).field).toBe(
      "delivery_id_header"
    )
    expect(rejection(CreateWebhookRequest, { name: "h", secret_name: "1BAD" }).field).toBe("secret_name")
    expect(accepted(PatchWebhookRequest, {})).toStrictEqual(new PatchWebhookRequest({}))
  })

  it("deliveries keep a payload exactly when ACCEPTED", () => {
    const base = { delivery_id: DELIVERY, received_at: "2026-11-22T03:17:28.123Z", size_bytes: 2, identity: "i" }
    expect(rejects(Delivery, { ...base, run_ids: [], outcome: "ACCEPTED" })).toBe(true)
    expect(rejects(Delivery, { ...base, run_ids: [], outcome: "DUPLICATE", payload: {} })).toBe(true)
  })

  it("automations: at least one webhook, the webhook trigger only", () => {
    const trigger = { provider: "webhook", event: "received", filter: { webhook_ids: [HOOK] } }
    const created = accepted(CreateAutomationRequest, { name: "a", prompt: "p", trigger })
    expect(created.enabled).toBe(true)
    expect(created.trigger.filter.payload).toBeUndefined()
    const withTrigger = (t: object) => rejection(CreateAutomationRequest, { name: "a", prompt: "p", trigger: t })
    expect(withTrigger({ ...trigger, filter: { webhook_ids: [] } }).field).toBe("trigger.filter.webhook_ids")
    expect(withTrigger({ ...trigger, provider: "cron" }).field).toBe("trigger.provider")
    expect(withTrigger({ ...trigger, filter: { webhook_ids: ["x"] } }).field).toBe("trigger.filter.webhook_ids[0]")
    expect(withTrigger({ ...trigger, filter: { webhook_ids: [HOOK], payload: [1] } }).field).toBe(
      "trigger.filter.payload"
    )
  })

  it("admin bodies", () => {
    expect(rejection(CreateTeamRequest, { name: " " }).field).toBe("name")
    expect(rejection(PatchTeamRequest, { max_concurrent_runs: 0 }).field).toBe("max_concurrent_runs")
    const feature = rejection(PatchTeamRequest, { features: { scheduled_agents: "no" } })
    expect(feature.field).toBe("features.scheduled_agents")
    const principal = { type: "user", display_name: "Ada", memberships: [{ team_uid: TEAM, role: "admin" }] }
    expect(accepted(CreatePrincipalRequest, principal).instance_admin).toBe(false)
    expect(rejection(CreatePrincipalRequest, { ...principal, memberships: [] }).field).toBe("memberships")
    const twice = [{ team_uid: TEAM, role: "admin" }, { team_uid: TEAM, role: "viewer" }]
    expect(rejection(CreatePrincipalRequest, { ...principal, memberships: twice }).field).toBe("memberships")
    const owner = rejection(CreatePrincipalRequest, { ...principal, memberships: [{ team_uid: TEAM, role: "owner" }] })
    expect(owner.field).toBe("memberships[0].role")
    expect(rejection(CreatePrincipalRequest, { ...principal, type: "robot" }).field).toBe("type")
    expect(rejects(CreateTokenResponse, { token_id: TOKEN_ID, token: "xyz" })).toBe(true)
    const record = {
      token_id: TOKEN_ID,
      principal_uid: USER,
      name: null,
      created_at: "2026-11-01T00:00:00.000Z",
      revoked_at: null
    }
    expect(rejects(TokenRecord, { ...record, token_hash: "A".repeat(64) })).toBe(true)
    expect(rejects(TokenRecord, { ...record, token_hash: "a".repeat(63) })).toBe(true)
  })
})

describe("skill specs", () => {
  it("accepts owner/repo:skill-name and owner/repo:path/to/SKILL.md", () => {
    expect(parseSkillSpec("acme/platform:deploy")).toStrictEqual({
      owner: "acme",
      repo: "platform",
      kind: "name",
      name: "deploy"
    })
    expect(parseSkillSpec("acme/platform:.claude/skills/deploy/SKILL.md")).toStrictEqual({
      owner: "acme",
      repo: "platform",
      kind: "path",
      path: ".claude/skills/deploy/SKILL.md"
    })
    expect(parseSkillSpec("acme/platform:SKILL.md")).toMatchObject({ kind: "path", path: "SKILL.md" })
  })

  it("rejects other shapes", () => {
    for (const bad of [
      "deploy",
      "platform:deploy",
      "acme/platform",
      "acme/platform:",
      "a/b/c:deploy",
      "acme/platform:skills/deploy",
      "acme/platform:skills/deploy/README.md",
      "acme/platform:../secrets/SKILL.md",
      "acme/platform:skills//SKILL.md",
      "acme/platform:/abs/SKILL.md",
      "-acme/platform:deploy",
      "acme/platform:my skill"
    ]) {
      expect(parseSkillSpec(bad), bad).toBeUndefined()
      expect(Either.isLeft(Schema.decodeUnknownEither(SkillSpec)(bad)), bad).toBe(true)
    }
  })

  it("generated specs are valid", () => {
    fc.assert(
      fc.property(Arbitrary.make(SkillSpec), (spec) => {
        expect(parseSkillSpec(spec)).toBeDefined()
      }),
      { numRuns: 200 }
    )
  })

  it("a run's skill is either a file or a bundled skill, never both", () => {
    const skill = { name: "n", description: "d" }
    expect(rejects(AgentSkill, { ...skill, bundled_skill_id: "pr-comments" })).toBe(false)
    expect(rejects(AgentSkill, { ...skill, full_path: "skills/x/SKILL.md" })).toBe(false)
    expect(rejects(AgentSkill, skill)).toBe(true)
    expect(rejects(AgentSkill, { ...skill, full_path: "SKILL.md", bundled_skill_id: "x" })).toBe(true)
  })
})

describe("conversation blocks", () => {
  it("readSkillAction carries bundled_skill_id only when given", () => {
    const plain = readSkillAction({ id: "a1", skillPath: "skills/deploy/SKILL.md" })
    expect(plain).toStrictEqual({
      type: "action",
      id: "a1",
      category: "skill",
      name: "read_skill",
      input: { skill_path: "skills/deploy/SKILL.md" }
    })
    const bundled = readSkillAction({ id: "a2", skillPath: "pr-comments", bundledSkillId: "pr-comments" })
    expect(bundled.input).toStrictEqual({ skill_path: "pr-comments", bundled_skill_id: "pr-comments" })
    const explicitUndefined = readSkillAction({ id: "a3", skillPath: "p", bundledSkillId: undefined })
    expect(Object.keys(explicitUndefined.input as object)).toStrictEqual(["skill_path"])
  })

  it("rejects unknown block types, categories and result states", () => {
    const withBlock = (block: unknown) => ({
      ...conversation,
      steps: [{ id: "s", messages: [{ role: "assistant", content: [block] }], steps: [] }]
    })
    const rejected = (block: unknown) => rejects(ConversationResponse, withBlock(block))
    expect(rejected({ type: "text", text: "hi" })).toBe(false)
    expect(rejected({ type: "image", url: "x" })).toBe(true)
    expect(rejected({ type: "action", id: "a", category: "magic", name: "n", input: {} })).toBe(true)
    const result = { type: "action_result", action_id: "a", category: "files", name: "n", output: null }
    expect(rejected({ ...result, state: "denied" })).toBe(false)
    expect(rejected({ ...result, state: "done" })).toBe(true)
  })
})
