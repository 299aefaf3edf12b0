/**
 * Runs on the wire (docs/reference/api.md): the agent configuration (AmbientAgentConfig), the run record
 * (RunItem) with everything it carries, and the create / follow-up / list bodies.
 *
 * Null versus absent in a `RunItem`: every key is always present; a value not known yet is
 * `null` (`started_at`, `ended_at`, `session_id`, `session_link`, `conversation_id`,
 * `agent_skill`, `environment_id`, `schedule`, `parent_run_id`, `status_message`). Inside the
 * agent configuration and the status message, unset keys are omitted.
 */
import { Schema } from "effect"
import type { FastCheck } from "effect"
import { SkillSpec } from "./Agent.js"
import { Artifact } from "./Artifact.js"
import {
  Metadata,
  NonBlankString,
  optionalInput,
  PageInfo,
  PlainKey,
  PrincipalRef,
  Scope,
  Timestamp,
  unionMessage
} from "./Common.js"
import { RunErrorCode } from "./Errors.js"
import { HarnessAuthSecrets, HarnessConfig } from "./HarnessSelection.js"
import { ConversationId, EnvironmentUid, PrincipalUid, RunId, ScheduleId } from "./Ids.js"
import { MAX_ATTEMPTS, RunExecutionLocation, RunSourceType, RunState } from "./RunState.js"

const StringMap = Schema.Record({ key: PlainKey, value: Schema.String })

/** An MCP server started as a local process (stdio transport). */
export const McpStdioServer = Schema.Struct({
  command: NonBlankString,
  args: Schema.optional(Schema.Array(Schema.String)),
  env: Schema.optional(StringMap),
  url: Schema.optional(Schema.Never),
  headers: Schema.optional(Schema.Never),
  server_id: Schema.optional(Schema.Never)
}).annotations({ identifier: "McpStdioServer" })

/** An MCP server reached over HTTP (streamable HTTP or SSE transport). */
export const McpHttpServer = Schema.Struct({
  url: Schema.String.pipe(
    Schema.filter((s) => /^https?:\/\/\S+$/.test(s) || "must be an http(s) URL", { description: "an http(s) URL" })
  ),
  headers: Schema.optional(StringMap),
  command: Schema.optional(Schema.Never),
  args: Schema.optional(Schema.Never),
  env: Schema.optional(Schema.Never),
  server_id: Schema.optional(Schema.Never)
}).annotations({ identifier: "McpHttpServer" })

/** A reference to an MCP server registered with the service. */
export const McpServerRef = Schema.Struct({
  server_id: NonBlankString,
  command: Schema.optional(Schema.Never),
  args: Schema.optional(Schema.Never),
  env: Schema.optional(Schema.Never),
  url: Schema.optional(Schema.Never),
  headers: Schema.optional(Schema.Never)
}).annotations({ identifier: "McpServerRef" })

const mcpServerArbitrary = () => (fc: typeof FastCheck) => {
  const word = fc.stringMatching(/^[a-z][a-z0-9-]{0,9}$/)
  const map = fc.dictionary(word, fc.string({ maxLength: 8 }), { maxKeys: 2 })
  return fc.oneof(
    fc.record({ command: word, args: fc.array(fc.string({ maxLength: 8 }), { maxLength: 3 }), env: map }, {
      requiredKeys: ["command"]
    }),
    fc.record({ url: word.map((w) => `https://${w}.example/mcp`), headers: map }, { requiredKeys: ["url"] }),
    fc.record({ server_id: word })
  ) as FastCheck.Arbitrary<McpServerConfig>
}

/**
 * MCPServerConfig: exactly one transport, `{command, args?, env?}`, `{url, headers?}` or
 * `{server_id}`; mixing keys of two transports is rejected.
 */
export const McpServerConfig = Schema.Union(McpStdioServer, McpHttpServer, McpServerRef).annotations({
  identifier: "McpServerConfig",
  message: unionMessage("must be exactly one of {command, args?, env?}, {url, headers?} or {server_id}"),
  arbitrary: mcpServerArbitrary
})
export type McpServerConfig = typeof McpServerConfig.Type

/**
 * AmbientAgentConfig. Every key is optional and omitted when unset; in a RunItem it is the
 * resolved configuration. `environment_id` is an environment uid (never `empty-environment`).
 */
export const AgentConfig = Schema.Struct({
  name: optionalInput(Schema.String),
  model_id: optionalInput(Schema.String),
  base_prompt: optionalInput(Schema.String),
  environment_id: optionalInput(EnvironmentUid),
  skill_spec: optionalInput(SkillSpec),
  mcp_servers: optionalInput(Schema.Record({ key: PlainKey, value: McpServerConfig })),
  worker_host: optionalInput(Schema.String),
  computer_use_enabled: optionalInput(Schema.Boolean),
  agent_identity_uid: optionalInput(PrincipalUid),
  harness: optionalInput(HarnessConfig),
  harness_auth_secrets: optionalInput(HarnessAuthSecrets)
}).annotations({ identifier: "AmbientAgentConfig" })
export type AgentConfig = typeof AgentConfig.Type

/** The skill a run used: a file-based skill (`full_path`) or a bundled one (`bundled_skill_id`), never both. */
export const AgentSkill = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  full_path: Schema.optional(Schema.String),
  bundled_skill_id: Schema.optional(Schema.String)
}).pipe(
  Schema.filter(
    (s) =>
      (s.full_path === undefined) !== (s.bundled_skill_id === undefined) ||
      "must have exactly one of full_path and bundled_skill_id"
  )
).annotations({ identifier: "AgentSkill" })
export type AgentSkill = typeof AgentSkill.Type

/**
 * RunStatusMessage. `error_code` and `retryable` are present on failures (FAILED, ERROR) and
 * omitted on informational messages; `session_debug_until` only while a failed setup's sandbox
 * is retained for debugging.
 */
export const RunStatusMessage = Schema.Struct({
  message: Schema.String,
  error_code: Schema.optional(RunErrorCode),
  retryable: Schema.optional(Schema.Boolean),
  session_debug_until: Schema.optional(Timestamp)
}).annotations({ identifier: "RunStatusMessage" })
export type RunStatusMessage = typeof RunStatusMessage.Type

/** What a run consumed so far (zero until the agent reports usage). */
export const RequestUsage = Schema.Struct({
  input_tokens: Schema.NonNegativeInt,
  output_tokens: Schema.NonNegativeInt,
  inference_cost: Schema.Finite.pipe(Schema.nonNegative()),
  compute_cost: Schema.Finite.pipe(Schema.nonNegative())
}).annotations({ identifier: "RequestUsage" })
export type RequestUsage = typeof RequestUsage.Type

/** The schedule that started a run, as it was when the run was created. */
export const RunScheduleRef = Schema.Struct({
  schedule_id: ScheduleId,
  schedule_name: Schema.String,
  cron_schedule: Schema.String
}).annotations({ identifier: "RunScheduleRef" })
export type RunScheduleRef = typeof RunScheduleRef.Type

/** RunItem: a run as returned by `GET /agent/runs/{runId}` and in lists. `task_id` equals `run_id`. */
export class RunItem extends Schema.Class<RunItem>("RunItem")({
  run_id: RunId,
  task_id: RunId,
  title: Schema.String,
  prompt: Schema.String,
  state: RunState,
  created_at: Timestamp,
  updated_at: Timestamp,
  started_at: Schema.NullOr(Timestamp),
  ended_at: Schema.NullOr(Timestamp),
  session_id: Schema.NullOr(Schema.String),
  session_link: Schema.NullOr(Schema.String),
  conversation_id: Schema.NullOr(ConversationId),
  agent_config: AgentConfig,
  agent_skill: Schema.NullOr(AgentSkill),
  creator: PrincipalRef,
  executor: PrincipalRef,
  source: RunSourceType,
  execution_location: RunExecutionLocation,
  environment_id: Schema.NullOr(EnvironmentUid),
  schedule: Schema.NullOr(RunScheduleRef),
  parent_run_id: Schema.NullOr(RunId),
  ancestor_run_ids: Schema.Array(RunId),
  metadata: Metadata,
  artifacts: Schema.Array(Artifact),
  status_message: Schema.NullOr(RunStatusMessage),
  request_usage: RequestUsage,
  is_sandbox_running: Schema.Boolean,
  is_run_type_cancellable: Schema.Boolean,
  scope: Scope,
  attempt: Schema.Int.pipe(Schema.between(1, MAX_ATTEMPTS)),
  execution_count: Schema.Int.pipe(Schema.greaterThanOrEqualTo(1))
}) {}

/** Limits on the metadata of a run (docs/reference/limits.md). */
export const MAX_METADATA_PAIRS = 20
export const MAX_METADATA_KEY_LENGTH = 64
export const MAX_METADATA_VALUE_LENGTH = 512

const metadataProblem = (m: Metadata): string | undefined => {
  const entries = Object.entries(m)
  if (entries.length > MAX_METADATA_PAIRS) {
    return `at most ${MAX_METADATA_PAIRS} pairs are allowed, got ${entries.length}`
  }
  for (const [key, value] of entries) {
    if (key.length === 0) return "keys must not be empty"
    if (key.length > MAX_METADATA_KEY_LENGTH) {
      return `key "${key.slice(0, 16)}…" is longer than ${MAX_METADATA_KEY_LENGTH} characters`
    }
    if (value.length > MAX_METADATA_VALUE_LENGTH) {
      return `value of key "${key}" is longer than ${MAX_METADATA_VALUE_LENGTH} characters`
    }
  }
  return undefined
}

/** Metadata given at run creation: ≤ 20 pairs, non-empty keys ≤ 64 characters, values ≤ 512. */
export const RunMetadata = Metadata.pipe(
  Schema.filter((m) => metadataProblem(m) ?? true, {
    description: `at most ${MAX_METADATA_PAIRS} pairs; keys 1–${MAX_METADATA_KEY_LENGTH} characters; ` +
      `values ≤ ${MAX_METADATA_VALUE_LENGTH}`
  })
).annotations({ identifier: "RunMetadata" })

/** Image media types accepted as run inputs. */
export const ImageMediaType = Schema.Literal("image/png", "image/jpeg", "image/gif", "image/webp")
export type ImageMediaType = typeof ImageMediaType.Type

/** The maximum number of images on a run request. */
export const MAX_IMAGES = 5

/** An image given with the prompt: base64 `data`; `name` defaults to `image-<n>.<ext>`. */
export const ImageInput = Schema.Struct({
  name: optionalInput(NonBlankString),
  media_type: ImageMediaType,
  data: Schema.String.pipe(
    Schema.filter((s) => (s.length > 0 && /^[A-Za-z0-9+/]+={0,2}$/.test(s) && s.length % 4 === 0) || "must be base64", {
      description: "base64-encoded bytes"
    })
  )
}).annotations({ identifier: "ImageInput" })
export type ImageInput = typeof ImageInput.Type

/**
 * RunAgentRequest (`POST /agent/runs`). `skill` is an alias of `config.skill_spec` and wins when
 * both are given; `team: true` gives the run Team scope (default User).
 */
export class RunAgentRequest extends Schema.Class<RunAgentRequest>("RunAgentRequest")({
  prompt: NonBlankString,
  title: optionalInput(Schema.String),
  config: optionalInput(AgentConfig),
  skill: optionalInput(SkillSpec),
  team: optionalInput(Schema.Boolean),
  metadata: optionalInput(RunMetadata),
  conversation_id: optionalInput(ConversationId),
  parent_run_id: optionalInput(RunId),
  images: optionalInput(
    Schema.Array(ImageInput).pipe(Schema.maxItems(MAX_IMAGES, { message: () => `at most ${MAX_IMAGES} images` }))
  )
}) {
  /** The skill the run should use: `skill`, else `config.skill_spec`. */
  get skillSpec(): SkillSpec | undefined {
    return this.skill ?? this.config?.skill_spec
  }
}

/** RunAgentResponse. `at_capacity` is true when the run waits PENDING for team capacity. */
export class RunAgentResponse extends Schema.Class<RunAgentResponse>("RunAgentResponse")({
  run_id: RunId,
  task_id: RunId,
  state: RunState,
  at_capacity: Schema.Boolean
}) {}

/** RunFollowupRequest. The message may be empty only to continue an ended run from its conversation. */
export class RunFollowupRequest extends Schema.Class<RunFollowupRequest>("RunFollowupRequest")({
  message: Schema.String
}) {}

/** ListRunsResponse (`GET /agent/runs`). */
export class ListRunsResponse extends Schema.Class<ListRunsResponse>("ListRunsResponse")({
  runs: Schema.Array(RunItem),
  page_info: PageInfo
}) {}
