/** An execution's plan, resolved once at its claim: environment, skill, MCP servers, debug window. */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Option, Redacted } from "effect"
import type { SkillSpec } from "../src/domain/Agent.js"
import type { ClaimedRun } from "../src/engine/ExecutionPlan.js"
import { noSecrets, planOf, secretsFromStore, secretsGiven } from "../src/engine/ExecutionPlan.js"
import type { EnvironmentUid, ExecutionId, PrincipalUid, TeamUid } from "../src/domain/Ids.js"
import { RunItem } from "../src/domain/Run.js"
import { RepoSource } from "../src/ports/RepoSource.js"
import type { SecretStore } from "../src/ports/SecretStore.js"
import type { SecretName } from "../src/domain/Secret.js"
import { makeRun } from "../testing/RunStoreConformance.js"
import { testRepos } from "../testing/RunsServiceSuite.js"

const TEAM = "tEaMtEaMtEaMtEaMtEaM01" as TeamUid
const EXECUTION = "01a20000-0000-7000-8000-000000000001" as ExecutionId

const claimed = (config: Partial<RunItem["agent_config"]>, overrides: Partial<ClaimedRun> = {}): ClaimedRun => {
  const run = makeRun({ team: TEAM, creator: "cReAtOrcReAtOrcReAtOr1" as PrincipalUid, prompt: "fix it" })
  return {
    run: new RunItem({ ...run.item, agent_config: { ...run.item.agent_config, ...config } }),
    team_uid: TEAM,
    execution_id: EXECUTION,
    run_token: "rt",
    environment: null,
    environment_missing: false,
    refusal: null,
    attachments: [],
    history: [],
    transcript_bytes: 12,
    descendants_committed: 0,
    ...overrides
  }
}

const plan = (c: ClaimedRun, debugWindows = true) =>
  Effect.flatMap(RepoSource, (repos) => planOf(c, { repos, secrets: noSecrets, debugWindows })).pipe(Effect.provide(testRepos))

describe("planOf", () => {
  it.effect("reads the run's skill from the team's repository into the start message", () =>
    Effect.gen(function*() {
      const p = yield* plan(claimed({ skill_spec: "acme/tools:skills/fix/SKILL.md" as SkillSpec, base_prompt: "be brief" }))
      expect(p.failure).toBeNull()
      expect(p.start).toMatchObject({ prompt: "fix it", base_prompt: "be brief", skill: { spec: "acme/tools:skills/fix/SKILL.md", name: "fix" } })
      expect(p.start.skill?.content).toContain("Find the flake.")
      expect(p.transcript_bytes).toBe(12)
      expect(p.has_environment).toBe(false)
    }))

  it.effect("a skill gone or malformed since, or an environment deleted since, is the plan's failure", () =>
    Effect.gen(function*() {
      expect((yield* plan(claimed({ skill_spec: "acme/tools:skills/bad/SKILL.md" as SkillSpec }))).failure).toContain("no longer available")
      expect((yield* plan(claimed({ skill_spec: "acme/gone:SKILL.md" as SkillSpec }))).failure).toContain("acme/gone:SKILL.md")
      const env = "eNvIrOnMeNteNvIrOnMe01" as EnvironmentUid
      const gone = claimed({}, { run: new RunItem({ ...claimed({}).run, environment_id: env }), environment_missing: true })
      const failed = yield* plan(gone)
      expect(failed.failure).toBe(`environment ${env} no longer exists`)
      expect(failed.has_environment).toBe(true)
    }))

  it.effect("a refused execution (shaped by someone with fewer rights) fails its setup and reads no secret", () =>
    Effect.gen(function*() {
      const untouchable = {
        get: () => Effect.die("a refused execution read a secret")
      } as unknown as SecretStore["Type"]
      const config = {
        harness: { type: "claude" as const },
        harness_auth_secrets: { claude_auth_secret_name: "ADMIN_KEY" as SecretName },
        mcp_servers: { gh: { url: "https://mcp.example/gh", headers: { Authorization: "Bearer ${{ secrets.GH_TOKEN }}" } } }
      }
      const refused = yield* Effect.flatMap(RepoSource, (repos) =>
        planOf(claimed(config, { refusal: "someone with fewer rights shaped the run" }), { repos, secrets: secretsFromStore(untouchable), debugWindows: true })
      ).pipe(Effect.provide(testRepos))
      expect(refused.failure).toBe("someone with fewer rights shaped the run")
      expect(refused.unconfigured).toBe("someone with fewer rights shaped the run")
      expect(refused.start.mcp_servers).toEqual({})
      expect(refused.agent).toEqual({ type: "oz" })
    }))

  it.effect("MCP servers that need team secrets fail where secrets cannot be read; others pass as they are", () =>
    Effect.gen(function*() {
      const direct = { files: { command: "mcp-files", args: ["--root", "."] } }
      expect((yield* plan(claimed({ mcp_servers: direct }))).start.mcp_servers).toEqual(direct)
      const needing = yield* plan(claimed({ mcp_servers: { gh: { url: "https://mcp.example/gh", headers: { Authorization: "Bearer ${{ secrets.GH_TOKEN }}" } } } }))
      expect(needing.failure).toContain("MCP server gh needs team secrets")
    }))

  it.effect("the environment's sandbox, harness and debug window, the window only where debug windows are kept", () =>
    Effect.gen(function*() {
      const environment = {
        name: "env",
        description: null,
        docker_image: "node:20",
        github_repos: [{ owner: "acme", repo: "tools" }],
        setup_commands: ["npm ci"],
        failure_session_retention_minutes: 0.5,
        harness: "claude -p"
      }
      const c = claimed({}, { environment, run: new RunItem({ ...claimed({}).run, environment_id: "eNvIrOnMeNteNvIrOnMe01" as EnvironmentUid }) })
      const p = yield* plan(c)
      expect(p.sandbox).toMatchObject({ docker_image: "node:20", repos: [{ owner: "acme", repo: "tools" }], setup_commands: ["npm ci"], execution_id: EXECUTION })
      expect(p.harness).toBe("claude -p")
      expect(p.retention_ms).toBe(30_000)
      expect((yield* plan(c, false)).retention_ms).toBe(0)
    }))

  it.effect("each repository at the run's ref, else the environment's, else none; from the host when the team is connected", () =>
    Effect.gen(function*() {
      const environment = {
        name: "env",
        description: null,
        docker_image: null,
        github_repos: [{ owner: "acme", repo: "app", ref: "release/1" }, { owner: "acme", repo: "docs", ref: "v2" }, { owner: "acme", repo: "tools" }],
        setup_commands: [],
        failure_session_retention_minutes: 0
      }
      const run = new RunItem({ ...claimed({ repo_refs: { "acme/docs": "main" } }).run, environment_id: "eNvIrOnMeNteNvIrOnMe01" as EnvironmentUid })
      const local = yield* plan(claimed({}, { environment, run }))
      expect(local.sandbox.repos).toEqual([
        { owner: "acme", repo: "app", ref: "release/1" },
        { owner: "acme", repo: "docs", ref: "main" },
        { owner: "acme", repo: "tools" }
      ])
      const github = { base_url: "https://github.com", api_url: "https://api.github.com", token: Redacted.make("t"), secret: "GH_TOKEN" as SecretName }
      const hosted = yield* plan(claimed({}, { environment, run, github }))
      expect(hosted.sandbox.repos[0]).toMatchObject({
        owner: "acme",
        repo: "app",
        ref: "release/1",
        remote: { url: "https://github.com/acme/app.git", branch: `agent-runs/${run.run_id}` }
      })
    }))
})

describe("planOf: the team's GitHub token in the agent's environment", () => {
  const github = { base_url: "https://ghe.example.com", api_url: "https://ghe.example.com/api/v3", token: Redacted.make("ghs_run_token"), secret: "GH_TOKEN" as SecretName }
  const environment = { name: "env", description: null, docker_image: null, github_repos: [], setup_commands: [], failure_session_retention_minutes: 0, env: { A: "1" } }

  it.effect("given to the agent alone (not the sandbox) with the git credential helper for the host, only when the run asks for it and is not refused", () =>
    Effect.gen(function*() {
      const asked = yield* plan(claimed({ github_token: true }, { environment, github }))
      expect(asked.failure).toBeNull()
      expect(asked.sandbox.env).toEqual({ A: "1" })
      expect(asked.agent_env).toMatchObject({
        GH_TOKEN: "ghs_run_token",
        GITHUB_TOKEN: "ghs_run_token",
        GH_HOST: "ghe.example.com",
        GH_ENTERPRISE_TOKEN: "ghs_run_token",
        GIT_CONFIG_COUNT: "1",
        GIT_CONFIG_KEY_0: "credential.https://ghe.example.com.helper"
      })
      expect((yield* plan(claimed({}, { environment, github }))).agent_env).toEqual({})
      const refused = yield* plan(claimed({ github_token: true }, { environment, github, refusal: "shaped by a member" }))
      expect([refused.agent_env, refused.failure]).toEqual([{}, "shaped by a member"])
    }))

  it.effect("a run asking for it in a team not connected (or on a worker) fails its setup", () =>
    Effect.gen(function*() {
      const p = yield* plan(claimed({ github_token: true }, { environment }))
      expect(p.failure).toMatch(/^config\.github_token: .*not connected to GitHub/)
      expect(p.agent_env).toEqual({})
    }))
})

describe("planOf: the agent CLI and its auth secret", () => {
  const secretsOf = (values: Record<string, string>): SecretStore["Type"] => ({
    put: () => Effect.void,
    get: (_team, name) => Effect.succeed(values[name] === undefined ? Option.none() : Option.some(Redacted.make(values[name]!))),
    list: () => Effect.succeed([]),
    remove: () => Effect.succeed(false)
  })
  const withSecrets = (c: ClaimedRun, values: Record<string, string> | undefined) =>
    Effect.flatMap(RepoSource, (repos) =>
      planOf(c, { repos, secrets: values === undefined ? noSecrets : secretsFromStore(secretsOf(values)), debugWindows: true })
    ).pipe(Effect.provide(testRepos))

  it.effect("the harness's model (over the configuration's) and the value of its auth secret, the named one first", () =>
    Effect.gen(function*() {
      const oz = yield* withSecrets(claimed({}), {})
      expect([oz.agent, oz.unconfigured]).toEqual([{ type: "oz" }, null])
      const claude = yield* withSecrets(
        claimed({ model_id: "outer", harness: { type: "claude", model_id: "inner", reasoning_level: "high" } }),
        { ANTHROPIC_API_KEY: "conventional" }
      )
      expect(claude.agent).toEqual({ type: "claude", model_id: "inner", reasoning_level: "high", auth: "conventional" })
      const named = yield* withSecrets(
        claimed({ model_id: "outer", harness: { type: "codex" }, harness_auth_secrets: { codex_auth_secret_name: "MY_KEY" as SecretName } }),
        { MY_KEY: "mine", OPENAI_API_KEY: "other" }
      )
      expect(named.agent).toEqual({ type: "codex", model_id: "outer", reasoning_level: null, auth: "mine" })
      // opencode may run without a key.
      expect((yield* withSecrets(claimed({ harness: { type: "opencode" } }), {})).agent).toMatchObject({ type: "opencode", auth: null })
    }))

  it.effect("an auth secret gone since the run was created, or unreadable here (a worker), leaves the agent unconfigured", () =>
    Effect.gen(function*() {
      const gone = yield* withSecrets(claimed({ harness: { type: "gemini" } }), {})
      expect(gone.unconfigured).toContain("GEMINI_API_KEY")
      expect(gone.failure).toBeNull()
      const worker = yield* withSecrets(claimed({ harness: { type: "claude" } }), undefined)
      expect(worker.unconfigured).toContain("cannot be read here")
    }))
})

describe("planOf: the secrets a worker's claim hands over", () => {
  const given = (c: ClaimedRun, secrets: Parameters<typeof secretsGiven>[0]) =>
    Effect.flatMap(RepoSource, (repos) => planOf(c, { repos, secrets: secretsGiven(secrets), debugWindows: false })).pipe(
      Effect.provide(testRepos)
    )
  const mcp = { gh: { url: "https://mcp.example/gh", headers: { Authorization: "Bearer ${{ secrets.GH_TOKEN }}" } } }

  it.effect("the agent CLI's key and the resolved MCP servers as the server gave them", () =>
    Effect.gen(function*() {
      const p = yield* given(claimed({ harness: { type: "claude" }, mcp_servers: mcp }), {
        agentAuth: Either.right("sk-given"),
        mcpServers: Either.right({ gh: { url: "https://mcp.example/gh", headers: { Authorization: "Bearer resolved" } } })
      })
      expect(p.failure).toBeNull()
      expect(p.unconfigured).toBeNull()
      expect(p.agent).toMatchObject({ type: "claude", auth: "sk-given" })
      expect(p.start.mcp_servers).toEqual({ gh: { url: "https://mcp.example/gh", headers: { Authorization: "Bearer resolved" } } })
    }))

  it.effect("what the server could not give fails as it would on the server", () =>
    Effect.gen(function*() {
      const p = yield* given(claimed({ harness: { type: "codex" }, mcp_servers: mcp }), {
        agentAuth: Either.left("the team secret OPENAI_API_KEY for the codex harness no longer exists"),
        mcpServers: Either.left("MCP server gh: the team secret GH_TOKEN no longer exists")
      })
      expect(p.unconfigured).toContain("OPENAI_API_KEY")
      expect(p.failure).toBe("MCP server gh: the team secret GH_TOKEN no longer exists")
      expect(p.start.mcp_servers).toEqual({})
    }))
})

