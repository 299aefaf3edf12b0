/**
 * Environments (docs/reference/api.md): where a run executes — a Docker image (for the Docker executor),
 * the `owner/repo` repositories checked out, setup commands, and the agent harness. Bodies carry
 * the configuration under `config`, as the record does.
 *
 * Defaults applied on input (and always present on output): `description` and `docker_image`
 * `null`, `github_repos` and `setup_commands` `[]`, `failure_session_retention_minutes` 30.
 * `harness` is omitted when the server default harness is used; it is either a harness command
 * (a string, run by the `oz` harness) or a harness selection `{type, model_id?, reasoning_level?}`
 * (HarnessSelection.ts), with `harness_auth_secrets` beside it. `env` holds plain variables for the
 * sandbox's processes (a model endpoint, say); secrets go in team secrets, never here.
 */
import { Schema } from "effect"
import { RepoSegment } from "./Agent.js"
import { NonBlankString, optionalInput, Scope, Timestamp, unionMessage } from "./Common.js"
import { HarnessAuthSecrets, HarnessConfig, type HarnessSources } from "./HarnessSelection.js"
import { EnvironmentUid, PrincipalUid, RunId } from "./Ids.js"
import { GitRef, MAX_REPOSITORIES } from "./GitRef.js"
import { MaxCostUsd, MaxTurns } from "./Budget.js"
import { MaxRuntimeSeconds } from "./MaxRuntime.js"
import { PullRequestConfig } from "./PullRequest.js"
import { RunState } from "./RunState.js"

/** How long a sandbox whose setup failed is kept for a debug follow-up, by default (minutes). */
export const DEFAULT_FAILURE_SESSION_RETENTION_MINUTES = 30
/** The longest retention allowed (one day). */
export const MAX_FAILURE_SESSION_RETENTION_MINUTES = 1440

/**
 * An `owner/repo` repository to check out into the sandbox; `ref` the branch, tag or commit its
 * clone starts from (GitRef.ts), the default branch when omitted.
 */
export const GitHubRepo = Schema.Struct({ owner: RepoSegment, repo: RepoSegment, ref: optionalInput(GitRef) }).annotations({
  identifier: "GitHubRepo"
})
export type GitHubRepo = typeof GitHubRepo.Type

const withDefault = <S extends Schema.Schema.Any>(schema: S, value: () => Schema.Schema.Type<S>) =>
  Schema.optionalWith(schema, { default: value, nullable: true })

/** The most variables an environment may set, and the longest value. */
export const MAX_ENVIRONMENT_VARIABLES = 64
export const MAX_ENVIRONMENT_VARIABLE_CHARS = 4096

const variableNamePattern = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/

/**
 * Variables an environment may not set: what the service sets for the agent (its home, temporary
 * and XDG directories), what changes how programs load (`LD_*`, `NODE_OPTIONS`, `BASH_ENV`, `ENV`,
 * `IFS`), the agent CLIs' keys, which belong in team secrets, and GitHub tokens (`github_token`).
 */
const RESERVED_VARIABLES =
  /^(HOME|TMPDIR|IFS|ENV|BASH_ENV|NODE_OPTIONS|LD_.*|XDG_.*|ANTHROPIC_API_KEY|ANTHROPIC_AUTH_TOKEN|CLAUDE_CODE_OAUTH_TOKEN|OPENAI_API_KEY|GEMINI_API_KEY|GOOGLE_API_KEY|OPENCODE_API_KEY|GH_TOKEN|GITHUB_TOKEN|GH_ENTERPRISE_TOKEN)$/

const reservedProblem = (name: string) =>
  /^(GH|GITHUB)_/.test(name)
    ? `${name} is the team's GitHub token: connect the team to GitHub and set github_token, not a plain variable`
    : /KEY|TOKEN/.test(name)
    ? `${name} is a key: store it as a team secret (harness_auth_secrets), not as a plain variable`
    : `${name} is set by the service or changes how programs load; it cannot be set here`

/**
 * Variables every process of the environment's sandboxes gets (setup commands and agents), such
 * as a model endpoint (`ANTHROPIC_BASE_URL`). Not secret: they are shown to everyone who can read
 * the environment. Names `AGENT_RUNS_*` are the service's own.
 */
export const EnvironmentVariables = Schema.Record({
  key: Schema.String,
  value: Schema.String.pipe(Schema.maxLength(MAX_ENVIRONMENT_VARIABLE_CHARS))
}).pipe(
  // Checked on the whole record: a record's key refinement would drop a bad name silently.
  Schema.filter((vars) => {
    const names = Object.keys(vars)
    if (names.length > MAX_ENVIRONMENT_VARIABLES) return `at most ${MAX_ENVIRONMENT_VARIABLES} variables`
    for (const name of names) {
      if (!variableNamePattern.test(name) || name.startsWith("AGENT_RUNS_")) {
        return { path: [name], message: "a name must be 1-128 letters, digits or '_', not starting with a digit, and not AGENT_RUNS_*" }
      }
      if (RESERVED_VARIABLES.test(name)) return { path: [name], message: reservedProblem(name) }
    }
    return true
  })
).annotations({ identifier: "EnvironmentVariables" })

/** The configuration of an environment; decoding fills the defaults. */
export const EnvironmentConfig = Schema.Struct({
  name: NonBlankString,
  description: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  docker_image: Schema.optionalWith(Schema.NullOr(NonBlankString), { default: () => null }),
  github_repos: withDefault(Schema.Array(GitHubRepo).pipe(Schema.maxItems(MAX_REPOSITORIES)), () => []),
  setup_commands: withDefault(Schema.Array(Schema.String), () => []),
  failure_session_retention_minutes: withDefault(
    // Fractions of a minute are allowed (a short debug window, for tests and demos).
    Schema.Finite.pipe(Schema.between(0, MAX_FAILURE_SESSION_RETENTION_MINUTES)),
    () => DEFAULT_FAILURE_SESSION_RETENTION_MINUTES
  ),
  harness: optionalInput(
    Schema.Union(NonBlankString, HarnessConfig).annotations({
      message: unionMessage("must be a harness command (a string) or {type: oz|claude|codex|gemini|opencode, model_id?, reasoning_level?: low|medium|high}")
    })
  ),
  harness_auth_secrets: optionalInput(HarnessAuthSecrets),
  env: optionalInput(EnvironmentVariables),
  /** The default of its runs' `config.pull_request` (a team connected to GitHub; docs/github.md). */
  pull_request: optionalInput(PullRequestConfig),
  /** The default of its runs' `config.github_token`: the team's GitHub token in the agent's environment (AgentGitHubToken.ts). */
  github_token: optionalInput(Schema.Boolean),
  /** The default of its runs' `config.max_runtime_seconds` (MaxRuntime.ts). */
  max_runtime_seconds: optionalInput(MaxRuntimeSeconds),
  /** The default of its runs' `config.max_cost_usd` (Budget.ts). */
  max_cost_usd: optionalInput(MaxCostUsd),
  /** The default of its runs' `config.max_turns` (Budget.ts). */
  max_turns: optionalInput(MaxTurns)
}).annotations({ identifier: "EnvironmentConfig" })
export type EnvironmentConfig = typeof EnvironmentConfig.Type

/** The harness command of an environment (its `harness` as a string); null for the default. */
export const harnessCommandOf = (config: EnvironmentConfig | null): string | null =>
  typeof config?.harness === "string" ? config.harness : null

/** The harness selection of an environment (its `harness` as an object); none for a command or no harness. */
export const harnessSelectionOf = (config: EnvironmentConfig): HarnessSources => ({
  ...(typeof config.harness === "object" ? { harness: config.harness } : {}),
  ...(config.harness_auth_secrets === undefined ? {} : { harness_auth_secrets: config.harness_auth_secrets })
})

/** Who else may use an environment: guest principals, and anyone in the team holding the link. */
export const EnvironmentSharing = Schema.Struct({
  guests: withDefault(Schema.Array(PrincipalUid), () => []),
  link_sharing: withDefault(Schema.Boolean, () => false)
}).annotations({ identifier: "EnvironmentSharing" })
export type EnvironmentSharing = typeof EnvironmentSharing.Type

/** A summary of the newest run created in an environment; `id` is the run id. */
export const LastTaskCreated = Schema.Struct({
  id: RunId,
  title: Schema.String,
  state: RunState,
  created_at: Timestamp,
  updated_at: Timestamp,
  started_at: Schema.NullOr(Timestamp)
}).annotations({ identifier: "LastTaskCreated" })
export type LastTaskCreated = typeof LastTaskCreated.Type

/**
 * An environment. `setup_failed` is true when its newest run failed during setup;
 * `last_task_created` is `null` until a run of its team uses it (guests' runs in other teams are
 * not shown).
 */
export class Environment extends Schema.Class<Environment>("Environment")({
  uid: EnvironmentUid,
  config: EnvironmentConfig,
  sharing: EnvironmentSharing,
  setup_failed: Schema.Boolean,
  last_task_created: Schema.NullOr(LastTaskCreated),
  scope: Scope,
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

/** `POST /agent/environments`: `team: true` gives Team scope (default User); sharing defaults to none. */
export class CreateEnvironmentRequest extends Schema.Class<CreateEnvironmentRequest>("CreateEnvironmentRequest")({
  config: EnvironmentConfig,
  sharing: optionalInput(EnvironmentSharing),
  team: optionalInput(Schema.Boolean)
}) {}

/** `PUT /agent/environments/{uid}`: replaces the configuration; sharing is unchanged when omitted. */
export class UpdateEnvironmentRequest extends Schema.Class<UpdateEnvironmentRequest>("UpdateEnvironmentRequest")({
  config: EnvironmentConfig,
  sharing: optionalInput(EnvironmentSharing)
}) {}

/** `GET /agent/environments`. */
export class ListEnvironmentsResponse extends Schema.Class<ListEnvironmentsResponse>("ListEnvironmentsResponse")({
  environments: Schema.Array(Environment)
}) {}
