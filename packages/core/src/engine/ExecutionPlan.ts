/**
 * What an execution will run, resolved once when its run is claimed: the sandbox to prepare, the
 * harness to start, and what the agent's start message carries (prompt, skill, MCP servers,
 * history). The execution loop only follows a plan; it never reads the run's configuration.
 *
 * A claim gathers the stored facts (`ClaimedRun`: the run, its environment, attachments, history,
 * token); `planOf` resolves the rest where the agent will run: the skill read from that side's
 * repositories, the agent CLI's key and the MCP servers from a `SecretSource` (the server's store;
 * for a self-hosted worker, what the server resolved for it at the claim). Anything that cannot be
 * resolved becomes the plan's `failure`: the execution fails its setup with it
 * (`environment_setup_failed`), or, for the agent CLI's key, `unconfigured`.
 */
import { costOf, type ExecutionBudget } from "../domain/Budget.js"
import { Data, Effect, Either, Option, Redacted } from "effect"
import { authSecretOf, type CliHarnessType, needsAuthSecret, type ReasoningLevel } from "../domain/HarnessSelection.js"
import { type EnvironmentConfig, type GitHubRepo, harnessCommandOf } from "../domain/Environment.js"
import { repoKeyOf, type RepoRefs } from "../domain/GitRef.js"
import type { SecretName } from "../domain/Secret.js"
import { repositoryUrlOf } from "../domain/GitHub.js"
import { agentGitHubVariables } from "../domain/AgentGitHubToken.js"
import { branchOf, pullRequestOf } from "../domain/PullRequest.js"
import type { HistoryMessage, StartMessage } from "../domain/Harness.js"
import type { ExecutionId, RunId, TeamUid } from "../domain/Ids.js"
import { resolveMcpServers, secretReferences } from "../domain/McpServers.js"
import type { McpDirectServer } from "../domain/McpServers.js"
import type { RepoSource } from "../ports/RepoSource.js"
import type { SandboxSpec } from "../ports/Executor.js"
import type { SecretStore } from "../ports/SecretStore.js"
import type { RequestUsage, RunItem } from "../domain/Run.js"
import { readSkill } from "../domain/SkillFiles.js"

/** What a claim brings: the run as claimed and what its execution needs from storage. */
export interface ClaimedRun {
  readonly run: RunItem
  readonly team_uid: TeamUid
  readonly execution_id: ExecutionId
  /** The run token of the execution, for its agent. */
  readonly run_token: string
  /** The run's environment's configuration; null without one. */
  readonly environment: EnvironmentConfig | null
  /** The run names an environment that no longer exists. */
  readonly environment_missing: boolean
  /** Why its agent may not get the secrets only admins hand out (someone with fewer rights shaped it); null when it may. */
  readonly refusal: string | null
  readonly attachments: SandboxSpec["attachments"]
  /** The conversation of the run's earlier executions, for a continuation. */
  readonly history: ReadonlyArray<HistoryMessage>
  /** Where the run's transcript ends now: this execution's output goes after it. */
  readonly transcript_bytes: number
  /** What the run's descendants hold of its budget, in US dollars (read when the run has a cost budget; Budget.committedBy). */
  readonly descendants_committed: number
  /**
   * The team's GitHub host, when the team is connected and the environment names repositories:
   * its base URL and an access token (the repositories are cloned from it), or why it could not
   * be reached (the setup fails with that). Absent: the team's local repositories.
   */
  readonly github?: GitHubClaim | { readonly failure: string } | undefined
}

/** A connected team's host, as a claim carries it. */
export interface GitHubClaim {
  readonly base_url: string
  readonly api_url: string
  readonly token: Redacted.Redacted<string>
  /** The team secret the connection's credential is (audited when the token is handed to an agent). */
  readonly secret: SecretName
}

/** What an execution runs. */
export interface ExecutionPlan {
  readonly run_id: RunId
  readonly execution_id: ExecutionId
  readonly team_uid: TeamUid
  readonly run_token: string
  /** The harness command (a shell command); null for the host's default. */
  readonly harness: string | null
  readonly sandbox: SandboxSpec
  /**
   * Variables the agent's process gets (and what it starts), beyond the sandbox's: the team's
   * GitHub token when the run's agent is to have it (AgentGitHubToken.ts). Not the setup
   * commands', nor a retained sandbox's debug agent's.
   */
  readonly agent_env: Readonly<Record<string, string>>
  /**
   * The pull requests a successful end publishes (a team connected to GitHub whose run or
   * environment asks for them): the branch, draft or not, and the host's API; null: none.
   */
  readonly pull_request: {
    readonly draft: boolean
    readonly branch: string
    readonly api_url: string
    readonly token: Redacted.Redacted<string>
  } | null
  /** Whether there is an environment to set up (its start is then recorded before preparing). */
  readonly has_environment: boolean
  /** How long a failed setup's sandbox is kept for a debug window (0: released at once). */
  readonly retention_ms: number
  /** Why the execution cannot start: its setup fails with this message. */
  readonly failure: string | null
  /** The agent: the service's own harness (the command above), or an agent CLI with its auth secret's value. */
  readonly agent: PlannedAgent
  /** Why the agent CLI cannot run (its auth secret is gone): the run fails `integration_not_configured`. */
  readonly unconfigured: string | null
  /** In a continuation, the agent CLI's session of the run's earlier executions (to resume); null otherwise. */
  readonly resume_session: string | null
  /**
   * Whether the prompt is the first thing the user says in this execution's conversation: in the
   * run's first execution; a continuation's user says only its follow-ups.
   */
  readonly says_prompt: boolean
  /** What the start message carries besides the sandbox's attachments, the mode, the follow-ups and the API. */
  readonly start: Pick<StartMessage, "conversation_id" | "prompt" | "title" | "base_prompt" | "model_id" | "skill" | "mcp_servers" | "history">
  /** The run's usage before this execution: the agent's is added to it. */
  readonly usage: RequestUsage
  /** How long the agent may run, in seconds, as the run or its environment asks (MaxRuntime.ts); null: the host's ceiling. */
  readonly max_runtime_seconds: number | null
  /** The run's budget, and what it and its descendants spent before this execution (Budget.ts). */
  readonly budget: ExecutionBudget
  readonly transcript_bytes: number
  /** The run's trace and the span that created it (the parent of the execution's span); null for a run without one. */
  readonly trace: { readonly trace_id: string; readonly span_id: string } | null
}

/** The agent an execution runs. */
export type PlannedAgent =
  | { readonly type: "oz" }
  | {
    readonly type: CliHarnessType
    readonly model_id: string | null
    readonly reasoning_level: ReasoningLevel | null
    /** The auth secret's value; null when the harness runs without one. */
    readonly auth: string | null
  }

/**
 * What a plan reads from the team's secrets: the agent CLI's key and the MCP servers' values.
 * Each is resolved where the secrets can be read: on the server from its store
 * (`secretsFromStore`), for a self-hosted worker by the server at the claim, which hands the
 * resolved values to the claiming worker only (`secretsGiven`); a worker of a server that hands
 * none (`noSecrets`) fails what needs them.
 */
export interface SecretSource {
  /** The value of the agent CLI's auth secret (null: it runs without one), or why it cannot run. */
  readonly agentAuth: (claimed: ClaimedRun) => Effect.Effect<Either.Either<string | null, string>>
  /** The run's MCP servers with their secrets' values, or why they cannot be given. */
  readonly mcpServers: (claimed: ClaimedRun) => Effect.Effect<Either.Either<McpServers, string>>
}

/** MCP servers as the agent gets them. */
export type McpServers = Readonly<Record<string, McpDirectServer>>

/** Where a plan resolves skills and MCP servers. */
export interface PlanSources {
  readonly repos: RepoSource["Type"]
  /** Where the team secrets the agent gets are read. */
  readonly secrets: SecretSource
  /** Whether failed setups may keep their sandbox for a debug window (the server only). */
  readonly debugWindows: boolean
}

class Unavailable extends Data.TaggedError("Unavailable")<{ readonly message: string }> {}

/** The harness type of a claimed run's agent. */
const harnessTypeOf = (claimed: ClaimedRun) => claimed.run.agent_config.harness?.type ?? "oz"

/**
 * The auth secret a claimed run's agent CLI gets: none for our own agent; `optional` when the CLI
 * runs without one (opencode, whose conventional secret is given when the team has it).
 */
const authSecretNeed = (claimed: ClaimedRun) => {
  const type = harnessTypeOf(claimed)
  if (type === "oz") return undefined
  const secret = authSecretOf(type, claimed.run.agent_config.harness_auth_secrets)
  return { type, name: secret.name, optional: !secret.named && !needsAuthSecret(type) }
}

/** The secrets read from the team's store (the server). */
export const secretsFromStore = (store: SecretStore["Type"]): SecretSource => ({
  agentAuth: (claimed) =>
    Effect.gen(function*() {
      const need = authSecretNeed(claimed)
      if (need === undefined) return Either.right(null)
      const value = yield* store.get(claimed.team_uid, need.name).pipe(Effect.either)
      if (need.optional) return Either.right(Either.isRight(value) ? Option.getOrNull(Option.map(value.right, Redacted.value)) : null)
      if (Either.isLeft(value)) return Either.left("the team's secrets could not be read")
      if (Option.isNone(value.right)) {
        return Either.left(
          `the team secret ${need.name} for the ${need.type} harness no longer exists: store it again, or name another in config.harness_auth_secrets`
        )
      }
      return Either.right(Redacted.value(value.right.value))
    }),
  mcpServers: (claimed) =>
    resolveMcpServers(store, claimed.team_uid, claimed.run.agent_config.mcp_servers).pipe(
      Effect.map((servers): Either.Either<McpServers, string> => Either.right(servers)),
      Effect.catchTags({
        StorageError: () => Effect.succeed(Either.left("the team's secrets could not be read")),
        McpResolutionFailed: (e) => Effect.succeed(Either.left(e.message))
      })
    )
})

/** Where no team secret can be read (a worker whose server hands none): what needs one fails. */
export const noSecrets: SecretSource = {
  agentAuth: (claimed) =>
    Effect.sync(() => {
      const need = authSecretNeed(claimed)
      return need === undefined || need.optional
        ? Either.right(null)
        : Either.left(`the ${need.type} harness needs the team secret ${need.name}, which cannot be read here (a self-hosted worker)`)
    }),
  mcpServers: (claimed) =>
    Effect.sync(() => {
      const servers = claimed.run.agent_config.mcp_servers ?? {}
      const needing = Object.entries(servers).find(([, s]) =>
        ("server_id" in s && s.server_id !== undefined) || secretReferences(s as McpDirectServer).length > 0
      )
      return needing === undefined
        ? Either.right(servers as McpServers)
        : Either.left(`MCP server ${needing[0]} needs team secrets, which cannot be read here`)
    })
}

/** The secrets a run's agent gets, resolved: the agent CLI's key and the MCP servers, or why each cannot be given. */
export interface GivenSecrets {
  readonly agentAuth: Either.Either<string | null, string>
  readonly mcpServers: Either.Either<McpServers, string>
}

/** The secrets resolved elsewhere (by the server, for the worker that claimed the run). */
export const secretsGiven = (given: GivenSecrets): SecretSource => ({
  agentAuth: () => Effect.succeed(given.agentAuth),
  mcpServers: () => Effect.succeed(given.mcpServers)
})

/** The skill and MCP servers of the start message, or why they cannot be given. */
const agentInputs = (claimed: ClaimedRun, sources: PlanSources) =>
  Effect.gen(function*() {
    let skill: StartMessage["skill"] = null
    const spec = claimed.run.agent_config.skill_spec
    if (spec !== undefined) {
      const found = yield* readSkill(sources.repos, claimed.team_uid, spec).pipe(
        Effect.mapError((e) => new Unavailable({ message: `skill ${spec}: ${e.message}` }))
      )
      if (Option.isNone(found)) return yield* new Unavailable({ message: `skill ${spec} is no longer available (missing or malformed)` })
      const { content, description, id, name, path } = found.value
      skill = { spec: id, name, description, path, content }
    }
    const mcp_servers = yield* sources.secrets.mcpServers(claimed)
    if (Either.isLeft(mcp_servers)) return yield* new Unavailable({ message: mcp_servers.left })
    return { skill, mcp_servers: mcp_servers.right }
  })

/** The agent CLI of a run and its auth secret's value, or why it cannot run. */
const agentOf = (claimed: ClaimedRun, sources: PlanSources): Effect.Effect<Either.Either<PlannedAgent, string>> =>
  Effect.gen(function*() {
    const config = claimed.run.agent_config
    const type = harnessTypeOf(claimed)
    if (type === "oz") return Either.right({ type })
    const auth = yield* sources.secrets.agentAuth(claimed)
    return Either.map(auth, (value) => ({
      type,
      model_id: config.harness?.model_id ?? config.model_id ?? null,
      reasoning_level: config.harness?.reasoning_level ?? null,
      auth: value
    }))
  })

/**
 * The sandbox's repositories, each at the ref the run or its environment names: from the team's
 * GitHub host when it has one (starting from the run's branch when the host has it: a follow-up
 * goes on with the run's work), else its local ones.
 */
const repositoriesOf = (
  repos: ReadonlyArray<GitHubRepo>,
  refs: RepoRefs | undefined,
  github: ClaimedRun["github"],
  runId: RunId
): SandboxSpec["repos"] =>
  repos.map((repository) => {
    const { owner, repo } = repository
    const ref = refs?.[repoKeyOf(repository)] ?? repository.ref
    const at = ref === undefined ? { owner, repo } : { owner, repo, ref }
    return github === undefined || "failure" in github
      ? at
      : { ...at, remote: { url: repositoryUrlOf(github.base_url, owner, repo), token: github.token, branch: branchOf(runId) } }
  })

/** What the end of a successful execution publishes: its pull requests, when asked for and possible. */
const publishingOf = (claimed: ClaimedRun): ExecutionPlan["pull_request"] => {
  const wanted = pullRequestOf(claimed.run.agent_config.pull_request, claimed.environment?.pull_request)
  const github = claimed.github
  if (wanted === undefined || github === undefined || "failure" in github) return null
  return { draft: wanted.draft, branch: branchOf(claimed.run.run_id), api_url: github.api_url, token: github.token }
}

/** The agent's own variables: the team's GitHub token when its run asks for it (and is not refused). */
const agentVariables = (claimed: ClaimedRun): Readonly<Record<string, string>> => {
  const github = claimed.github
  if (claimed.run.agent_config.github_token !== true || claimed.refusal !== null || github === undefined || "failure" in github) return {}
  return agentGitHubVariables(github.base_url, Redacted.value(github.token))
}

/** Why a run whose agent gets the team's GitHub token cannot start: the team is not connected (here). */
const tokenProblem = (claimed: ClaimedRun): string | null =>
  claimed.run.agent_config.github_token === true && claimed.github === undefined
    ? "config.github_token: the run's agent is to get the team's GitHub token, but the team is not connected to GitHub (or not here: a self-hosted worker)"
    : null

/** The plan of a claimed run: resolved once, where the agent runs. */
export const planOf = (claimed: ClaimedRun, sources: PlanSources): Effect.Effect<ExecutionPlan> =>
  Effect.gen(function*() {
    const run = claimed.run
    const env = claimed.environment
    const inputs = claimed.refusal !== null
      ? Either.left(new Unavailable({ message: claimed.refusal }))
      : claimed.environment_missing
      ? Either.left(new Unavailable({ message: `environment ${run.environment_id} no longer exists` }))
      : yield* Effect.either(agentInputs(claimed, sources))
    const resolved = Either.getOrElse(inputs, () => ({ skill: null, mcp_servers: {} }))
    // Refused, or its environment gone (its setup fails): nothing of the secrets is read, not even the agent CLI's key.
    const agent = Either.isLeft(inputs) && (claimed.refusal !== null || claimed.environment_missing)
      ? Either.left(inputs.left.message)
      : yield* agentOf(claimed, sources)
    return {
      run_id: run.run_id,
      execution_id: claimed.execution_id,
      team_uid: claimed.team_uid,
      run_token: claimed.run_token,
      harness: harnessCommandOf(env),
      sandbox: {
        run_id: run.run_id,
        execution_id: claimed.execution_id,
        team_uid: claimed.team_uid,
        docker_image: env?.docker_image ?? null,
        repos: repositoriesOf(env?.github_repos ?? [], run.agent_config.repo_refs, claimed.github, run.run_id),
        setup_commands: env?.setup_commands ?? [],
        attachments: claimed.attachments,
        env: env?.env ?? {}
      },
      agent_env: agentVariables(claimed),
      has_environment: run.environment_id !== null,
      pull_request: publishingOf(claimed),
      retention_ms: sources.debugWindows ? Math.round((env?.failure_session_retention_minutes ?? 0) * 60_000) : 0,
      failure: claimed.github !== undefined && "failure" in claimed.github
        ? `the team's GitHub host: ${claimed.github.failure}`
        : Either.isLeft(inputs) ? inputs.left.message : tokenProblem(claimed),
      agent: Either.getOrElse(agent, () => ({ type: "oz" as const })),
      unconfigured: Either.isLeft(agent) ? agent.left : null,
      resume_session: run.execution_count > 1 ? run.session_id : null,
      says_prompt: run.execution_count === 1,
      start: {
        conversation_id: run.conversation_id,
        prompt: run.prompt,
        title: run.title,
        base_prompt: run.agent_config.base_prompt ?? null,
        model_id: run.agent_config.model_id ?? null,
        skill: resolved.skill,
        mcp_servers: resolved.mcp_servers,
        history: claimed.history
      },
      usage: run.request_usage,
      transcript_bytes: claimed.transcript_bytes,
      max_runtime_seconds: run.agent_config.max_runtime_seconds ?? env?.max_runtime_seconds ?? null,
      budget: {
        max_cost_usd: run.agent_config.max_cost_usd ?? null,
        max_turns: run.agent_config.max_turns ?? null,
        spent_before: costOf(run.request_usage) + claimed.descendants_committed
      },
      trace: run.trace_id !== undefined && run.trace_span_id !== undefined
        ? { trace_id: run.trace_id, span_id: run.trace_span_id }
        : null
    } satisfies ExecutionPlan
  })
