/**
 * Runs on the wire (docs/reference/api.md): the agent configuration (AmbientAgentConfig), the run record
 * (RunItem) with everything it carries, and the create / follow-up / list bodies.
 *
 * Null versus absent in a `RunItem`: a value not known yet is `null` in the model. On the wire
 * `started_at`, `ended_at`, `environment_id` and `parent_run_id` are then `null`; `session_id`,
 * `session_link`, `conversation_id`, `agent_skill`, `schedule` and `status_message`, which the
 * SDK types as optional but not nullable, are omitted. Inside the agent configuration and the
 * status message, unset keys are omitted.
 */
import { Either, Encoding, Schema } from "effect"
import type { FastCheck } from "effect"
import { SkillSpec } from "./Agent.js"
import { MaxCostUsd, MaxTurns } from "./Budget.js"
import { RunPriority } from "./FairShare.js"
import { Artifact } from "./Artifact.js"
import {
  Metadata,
  NonBlankString,
  omittedWhenNull,
  optionalInput,
  requiredWith,
  PageInfo,
  PlainKey,
  PrincipalRef,
  Scope,
  Timestamp,
  unionMessage
} from "./Common.js"
import { RunErrorCode } from "./Errors.js"
import { HarnessAuthSecrets, HarnessConfig } from "./HarnessSelection.js"
import { RepoRefs } from "./GitRef.js"
import { MaxRuntimeSeconds } from "./MaxRuntime.js"
import { PullRequestConfig } from "./PullRequest.js"
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
  server_id: Schema.optional(Schema.Never),
  warp_id: Schema.optional(Schema.Never)
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
  server_id: Schema.optional(Schema.Never),
  warp_id: Schema.optional(Schema.Never)
}).annotations({ identifier: "McpHttpServer" })

/** A reference to an MCP server registered with the service. */
export const McpServerRef = Schema.Struct({
  server_id: NonBlankString,
  command: Schema.optional(Schema.Never),
  args: Schema.optional(Schema.Never),
  env: Schema.optional(Schema.Never),
  url: Schema.optional(Schema.Never),
  headers: Schema.optional(Schema.Never),
  warp_id: Schema.optional(Schema.Never)
}).annotations({ identifier: "McpServerRef" })

/**
 * The SDK's reference to a shared MCP server, `{warp_id}`: read as `{server_id}`, a server
 * registered with this team (McpServers.ts); the resolved configuration names it `server_id`.
 */
export const McpWarpRef = Schema.transform(
  Schema.Struct({
    warp_id: NonBlankString,
    server_id: Schema.optional(Schema.Never),
    command: Schema.optional(Schema.Never),
    args: Schema.optional(Schema.Never),
    env: Schema.optional(Schema.Never),
    url: Schema.optional(Schema.Never),
    headers: Schema.optional(Schema.Never)
  }),
  Schema.typeSchema(McpServerRef),
  {
    strict: true,
    decode: ({ warp_id }) => ({ server_id: warp_id }),
    encode: ({ server_id }) => ({ warp_id: server_id })
  }
).annotations({ identifier: "McpWarpRef" })

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
 * `{server_id}` (`{warp_id}`, the SDK's name, is read as `{server_id}`); mixing keys of two
 * transports is rejected.
 */
export const McpServerConfig = Schema.Union(McpStdioServer, McpHttpServer, McpServerRef, McpWarpRef).annotations({
  identifier: "McpServerConfig",
  message: unionMessage("must be exactly one of {command, args?, env?}, {url, headers?} or {server_id} (or the SDK's {warp_id})"),
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
  harness_auth_secrets: optionalInput(HarnessAuthSecrets),
  pull_request: optionalInput(PullRequestConfig),
  /** The branch, tag or commit each named repository of the environment starts from (GitRef.ts). */
  repo_refs: optionalInput(RepoRefs),
  /** The team's GitHub token in the agent's environment (AgentGitHubToken.ts; team admins only); present only when true. */
  github_token: optionalInput(Schema.Boolean),
  /** How long the agent may run in each execution (MaxRuntime.ts); the environment's default, else the server's ceiling. */
  max_runtime_seconds: optionalInput(MaxRuntimeSeconds),
  /** What the run and its descendants may spend, in US dollars (Budget.ts); the environment's or team's default, within the team's ceiling. */
  max_cost_usd: optionalInput(MaxCostUsd),
  /** How many model turns the agent may take in each execution (Budget.ts); defaulted and bounded like `max_cost_usd`. */
  max_turns: optionalInput(MaxTurns),
  /** Within its team, a run with a higher priority is claimed first (FairShare.ts): -10 to 10, absent for 0. */
  priority: optionalInput(RunPriority)
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

/** A W3C trace id: 32 lowercase hex characters. */
export const TraceId = Schema.String.pipe(Schema.pattern(/^[0-9a-f]{32}$/))
/** A W3C span id: 16 lowercase hex characters. */
export const SpanId = Schema.String.pipe(Schema.pattern(/^[0-9a-f]{16}$/))

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
  session_id: omittedWhenNull(Schema.String),
  session_link: omittedWhenNull(Schema.String),
  conversation_id: omittedWhenNull(ConversationId),
  agent_config: AgentConfig,
  agent_skill: omittedWhenNull(AgentSkill),
  creator: PrincipalRef,
  executor: PrincipalRef,
  source: RunSourceType,
  execution_location: RunExecutionLocation,
  environment_id: Schema.NullOr(EnvironmentUid),
  schedule: omittedWhenNull(RunScheduleRef),
  parent_run_id: Schema.NullOr(RunId),
  ancestor_run_ids: Schema.Array(RunId),
  metadata: Metadata,
  artifacts: Schema.Array(Artifact),
  status_message: omittedWhenNull(RunStatusMessage),
  request_usage: RequestUsage,
  is_sandbox_running: Schema.Boolean,
  is_run_type_cancellable: Schema.Boolean,
  scope: Scope,
  attempt: Schema.Int.pipe(Schema.between(1, MAX_ATTEMPTS)),
  execution_count: Schema.Int.pipe(Schema.greaterThanOrEqualTo(1)),
  /**
   * The trace of the run (docs/observability.md): the trace its creation was part of, and the span
   * that created it, parent of the spans of its executions. Absent on runs created before traces.
   */
  trace_id: Schema.optional(TraceId),
  trace_span_id: Schema.optional(SpanId)
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

/** Image media types accepted as run inputs (the SDK's `mime_type`). */
export const ImageMediaType = Schema.Literal("image/png", "image/jpeg", "image/gif", "image/webp")
export type ImageMediaType = typeof ImageMediaType.Type

/** The maximum number of images on a run request. */
export const MAX_IMAGES = 5

/** The maximum size of one image, decoded (the request body limit applies to the base64 text first). */
export const MAX_IMAGE_BYTES = 4 * 1024 * 1024

/** The file extension of each image type (attachments are named `image-<n>.<ext>`). */
export const IMAGE_EXTENSIONS: Record<ImageMediaType, string> = {
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/gif": "gif",
  "image/webp": "webp"
}

/** Whether `bytes` start as an image of `type` does (its signature). */
const hasSignatureOf = (type: ImageMediaType, bytes: Uint8Array): boolean => {
  const starts = (offset: number, sig: ReadonlyArray<number>) => sig.every((b, i) => bytes[offset + i] === b)
  switch (type) {
    case "image/png":
      return starts(0, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
    case "image/jpeg":
      return starts(0, [0xff, 0xd8, 0xff])
    case "image/gif":
      return starts(0, [0x47, 0x49, 0x46, 0x38])
    case "image/webp":
      return starts(0, [0x52, 0x49, 0x46, 0x46]) && starts(8, [0x57, 0x45, 0x42, 0x50])
  }
}

/** The bytes of base64 text (standard alphabet, padded), or undefined when it is not base64. */
export const decodeImageData = (s: string): Uint8Array | undefined => {
  if (s.length === 0 || s.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(s)) return undefined
  return Either.getOrUndefined(Encoding.decodeBase64(s))
}

const imageProblem = (image: { readonly mime_type: ImageMediaType; readonly data: string }): string | undefined => {
  const bytes = decodeImageData(image.data)
  if (bytes === undefined) return "data: must be base64 (standard alphabet, padded)"
  if (bytes.byteLength > MAX_IMAGE_BYTES) {
    return `data: the image is ${bytes.byteLength} bytes; at most ${MAX_IMAGE_BYTES} bytes (4 MiB) are allowed`
  }
  if (!hasSignatureOf(image.mime_type, bytes)) return `data: is not a ${image.mime_type} image (mime_type must match the data)`
  return undefined
}

/**
 * An image given with the prompt, as the SDK sends it: base64 `data` and its `mime_type` (PNG,
 * JPEG, GIF or WebP, checked against the data's signature), at most 4 MiB decoded; `name` defaults
 * to `image-<n>.<ext>`. The agent finds it as an attachment.
 */
export const ImageInput = Schema.Struct({
  name: optionalInput(
    NonBlankString.pipe(
      Schema.filter((s) => /^[A-Za-z0-9._-]{1,100}$/.test(s) && !s.startsWith(".") || "must be a file name: 1–100 letters, digits, '.', '_' or '-', not starting with '.'")
    )
  ),
  mime_type: ImageMediaType,
  data: Schema.String
}).pipe(
  Schema.filter((image) => {
    const problem = imageProblem(image)
    return problem === undefined ? true : { path: ["data"], message: problem.replace(/^data: /, "") }
  })
).annotations({
  identifier: "ImageInput",
  // Valid images (random base64 would never pass the signature check).
  arbitrary: () => (fc: typeof FastCheck) =>
    fc.record({
      mime_type: fc.constant("image/png" as const),
      data: fc.constant("iVBORw0KGgoAAAANSUhEUg=="),
      name: fc.option(fc.stringMatching(/^[a-z][a-z0-9]{0,8}\.png$/), { nil: undefined })
    }).map(({ name, ...image }) => (name === undefined ? image : { ...image, name }))
})
export type ImageInput = typeof ImageInput.Type

/** The images of a run as kept in its blob (`runImagesKey`). */
const KeptImages = Schema.parseJson(Schema.Array(Schema.Struct({ name: Schema.String, mime_type: ImageMediaType, data: Schema.String })))

/** The images kept for a run (none when the blob is unreadable). */
export const decodeKeptImages = (text: string): ReadonlyArray<typeof KeptImages.Type[number]> =>
  Either.getOrElse(Schema.decodeUnknownEither(KeptImages)(text), () => [])

/** The attachment name of image `index` (from 0) of a request. */
export const imageName = (image: ImageInput, index: number): string =>
  image.name ?? `image-${index + 1}.${IMAGE_EXTENSIONS[image.mime_type]}`

/**
 * RunAgentRequest (`POST /agent/runs`). `skill` is an alias of `config.skill_spec` and wins when
 * both are given; `team: true` gives the run Team scope (default User).
 */
export class RunAgentRequest extends Schema.Class<RunAgentRequest>("RunAgentRequest")({
  prompt: requiredWith(
    NonBlankString,
    "is required, also when a skill is given: send the task as prompt (the skill gives the agent its base prompt)"
  ),
  title: optionalInput(Schema.String),
  config: optionalInput(AgentConfig),
  skill: optionalInput(SkillSpec),
  team: optionalInput(Schema.Boolean),
  metadata: optionalInput(RunMetadata),
  conversation_id: optionalInput(ConversationId),
  parent_run_id: optionalInput(RunId),
  images: optionalInput(
    Schema.Array(ImageInput).pipe(
      Schema.maxItems(MAX_IMAGES, { message: () => `at most ${MAX_IMAGES} images` }),
      Schema.filter((images) => new Set(images.map(imageName)).size === images.length || "image names must differ")
    )
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

/** RunCountsResponse (`GET /agent/run-counts`): the runs the list's filters select, by state (every state), and their total. */
export class RunCountsResponse extends Schema.Class<RunCountsResponse>("RunCountsResponse")({
  counts: Schema.Record({ key: RunState, value: Schema.NonNegativeInt }),
  total: Schema.NonNegativeInt
}) {}
