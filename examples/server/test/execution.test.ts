/**
 * Runs that run: the bundled server in-process with the scripted agent, on SQLite and on
 * PostgreSQL, with the process executor, the Docker executor (the test image, the host's network)
 * and the Kubernetes executor (the API server double, its pods on Docker), driven through HTTP. Each directive of the scripted agent; the timeline, conversation
 * and transcript of a run; how a run ends; a long line and the engine's output rules; follow-ups
 * on each route (stored until start, live, a new execution with the history, the debug window of
 * a failed setup); cancel in each state; admission at capacity; child runs started by an agent
 * with its run token.
 *
 * One end-to-end case per behaviour (issue 31): `COMBINATIONS` says which cases each combination
 * runs. SQLite with processes runs them all; PostgreSQL those whose wiring goes through the store;
 * Docker those whose wiring goes through the executor; PostgreSQL with Docker the one that composes
 * both. The rules beneath are checked where they are cheap: the storage conformance suites (memory,
 * SQLite, PostgreSQL), the executor conformance suite (process, isolated process, Docker) and the
 * execution engine's suite (`DispatcherSuite`, memory and SQLite).
 */
import { testImage } from "@agent-runs/executor-docker/testing"
import { createTestRepositories, writeRepository } from "@agent-runs/core/testing"
import { execFileSync } from "node:child_process"
import { existsSync, rmSync } from "node:fs"
import { join } from "node:path"
import { KubernetesSettings } from "@agent-runs/executor-kubernetes"
import { beforeAll, describe, expect, it } from "vitest"
import { call, type DatabaseKind, ENDED_STATES, makeTeam, suiteServer, waitForRun } from "./harness.js"
import { kubernetesCluster } from "./kubernetes.js"

type ExecutorKind = "process" | "docker" | "kubernetes"

/** The cases of this file, each named by the behaviour it checks. */
const CASES = [
  "run",
  "directives",
  "endings",
  "long line",
  "output rules",
  "child run",
  "follow-ups",
  "capacity",
  "cancel",
  "repositories",
  "stubborn agent",
  "setup"
] as const
type Case = (typeof CASES)[number]

/** Which cases each combination of store and executor runs. */
const COMBINATIONS: ReadonlyArray<{ readonly kind: DatabaseKind; readonly executor: ExecutorKind; readonly cases: ReadonlyArray<Case> }> = [
  { kind: "sqlite", executor: "process", cases: CASES },
  // The store in the wiring: the timeline, conversation and transcript, directives (external
  // references), follow-ups and the history they continue from, admission.
  { kind: "postgres", executor: "process", cases: ["run", "directives", "follow-ups", "capacity"] },
  // The executor in the wiring: the agent's output and exit through the container, its network,
  // stdin, signals, clones and setup commands. Not the engine's rules (output limit, JSON depth,
  // admission): they are the same whatever runs the agent.
  {
    kind: "sqlite",
    executor: "docker",
    cases: ["run", "directives", "endings", "long line", "child run", "follow-ups", "cancel", "repositories", "stubborn agent", "setup"]
  },
  // The two together.
  { kind: "postgres", executor: "docker", cases: ["run"] },
  // Kubernetes Jobs (the API server double, whose pods run on Docker): the same cases as Docker,
  // through the API server's execs.
  {
    kind: "sqlite",
    executor: "kubernetes",
    cases: ["run", "directives", "endings", "long line", "child run", "follow-ups", "cancel", "repositories", "stubborn agent", "setup"]
  }
]

/** The long line of one case: many pipe buffers and Docker frames long, and above 1 MiB. */
const LONG_LINE = 2_000_000
/** The server's output limit per run: above the long line, below what another case prints. */
const MAX_OUTPUT = 3_000_000

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const ended = (run: Json) => ENDED_STATES.includes(run.state)

/** Every text block the agent said in a conversation (not the user's messages), in order. */
const texts = (steps: ReadonlyArray<Json>): Array<string> =>
  steps.flatMap((step) => [
    ...step.messages.flatMap((m: Json) =>
      m.role === "user" ? [] : m.content.filter((b: Json) => b.type === "text").map((b: Json) => b.text)
    ),
    ...texts(step.steps)
  ])

/** Who said what in a conversation, in order: `role: text` of every message with text. */
const dialogue = (steps: ReadonlyArray<Json>): Array<string> =>
  steps.flatMap((step) => [
    ...step.messages.flatMap((m: Json) => {
      const text = m.content.filter((b: Json) => b.type === "text").map((b: Json) => b.text).join(" ")
      return text === "" ? [] : [`${m.role}: ${text}`]
    }),
    ...dialogue(step.steps)
  ])

/** Every block of a conversation, in order. */
const blocks = (steps: ReadonlyArray<Json>): Array<Json> =>
  steps.flatMap((step) => [...step.messages.flatMap((m: Json) => m.content), ...blocks(step.steps)])

for (const { cases, executor, kind } of COMBINATIONS) describe(`execution (${kind}, ${executor} executor)`, () => {
  // Before the server starts (and stopped after it): the cluster of the Kubernetes executor.
  const cluster = executor === "kubernetes" ? kubernetesCluster() : undefined
  const server = suiteServer(kind, {}, {
    concurrency: 4,
    cancelGraceSeconds: 1,
    maxOutputBytes: MAX_OUTPUT,
    executor,
    // As the bundled server: agents that Docker and Kubernetes can leave running at a stop are started so.
    adoptAgents: true,
    dockerImage: testImage,
    // The host's network, so that an agent in a container reaches the API (`@spawn`).
    dockerNetwork: "host",
    kubernetes: { ...KubernetesSettings.defaultSettings, namespace: "agents", image: testImage, instance: "execution-test" }
  })
  /** Registers the case `name` when this combination runs it. */
  const test = (name: Case, title: string, body: () => Promise<void>, timeout?: number) => {
    if (cases.includes(name)) it(title, body, timeout)
  }
  let member = ""
  let admin = ""
  let teamUid = ""

  beforeAll(async () => {
    const team = await makeTeam(server(), `exec-${kind}-${executor}`)
    teamUid = team.uid
    createTestRepositories(server().config.execution.reposDir, team.uid)
    member = team.tokens.member
    admin = team.tokens.admin
  })

  const create = async (prompt: string, extra: Record<string, unknown> = {}, token = member) => {
    const created = await call(server(), "POST", "/api/v1/agent/runs", { token, body: { prompt, ...extra } })
    expect(created.status).toBe(200)
    return created.body.run_id as string
  }
  const get = (path: string, token = member) => call(server(), "GET", `/api/v1${path}`, { token })
  /** Reads the run until `done` holds (it ended, by default), 20 s at most; answers its last read. */
  const waitFor = (runId: string, done: (run: Json) => boolean = ended, token = member) =>
    waitForRun(server(), token, runId, done, 20_000)
  /** Cancels as a client does: a 409 retryable (the run moved meanwhile) is tried again. */
  const cancel = async (runId: string) => {
    for (let i = 0; ; i++) {
      const reply = await call(server(), "POST", `/api/v1/agent/runs/${runId}/cancel`, { token: member })
      if (reply.status !== 409 || reply.body.retryable !== true || i === 5) return reply
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  const runToEnd = async (prompt: string, extra: Record<string, unknown> = {}) => {
    const runId = await create(prompt, extra)
    return { runId, run: await waitFor(runId) }
  }
  /** The run's conversation (no steps while it has none: 404). */
  const conversation = async (runId: string) => {
    const reply = await get(`/agent/runs/${runId}/conversation`)
    return reply.status === 404 ? { steps: [] } : reply.body
  }

  test("run", "runs a prompt without directives to SUCCEEDED, with its timeline, conversation and transcript", async () => {
    const { run, runId } = await runToEnd("Fix the parser\nIt breaks on empty input")
    expect(run).toMatchObject({ state: "SUCCEEDED", attempt: 1, execution_count: 1, is_sandbox_running: false })
    expect(run.started_at).not.toBeNull()
    expect(run.ended_at).not.toBeNull()
    expect(run.session_id).toMatch(/^scripted-/)
    const timeline = (await get(`/agent/runs/${runId}/timeline`)).body.events.map((e: Json) => e.event_type)
    expect(timeline).toEqual([
      "run_created",
      "run_pending",
      "run_queued",
      "run_claimed",
      "environment_setup_started",
      "environment_setup_succeeded",
      "run_in_progress",
      "run_succeeded"
    ])
    const convo = await conversation(runId)
    expect(convo.run_ids).toEqual([runId])
    expect(texts(convo.steps)).toEqual(["Done: Fix the parser"])
    const transcript = await call(server(), "GET", `/api/v1/agent/runs/${runId}/transcript`, { token: member })
    expect(transcript.status).toBe(302)
    const raw = await fetch(transcript.headers.get("location")!).then((r) => r.text())
    expect(raw.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l).type)).toContain("message")
    expect(raw).toContain("Done: Fix the parser")
  })

  test("directives", "acts on every directive: say, tool, read-skill, artifacts, steps, usage", async () => {
    const { run, runId } = await runToEnd(
      [
        "Work",
        "@say hello",
        "@step Investigate",
        "@tool grep {\"pattern\":\"TODO\"}",
        "@read-skill skills/review/SKILL.md",
        "@read-skill other/SKILL.md bundled-7",
        "@end-step looked",
        "@artifact PULL_REQUEST fix-parser https://example.test/pr/7",
        `@artifact EXTERNAL_REFERENCE https://example.test/ext/${kind}`,
        "@print this is not json",
        "@sleep 10"
      ].join("\n")
    )
    expect(run.state).toBe("SUCCEEDED")
    expect(run.artifacts.map((a: Json) => a.artifact_type)).toEqual(["PULL_REQUEST", "EXTERNAL_REFERENCE"])
    expect(run.request_usage.input_tokens).toBeGreaterThan(0)
    const all = blocks((await conversation(runId)).steps)
    expect(all).toContainEqual({ type: "text", text: "hello" })
    expect(all).toContainEqual(expect.objectContaining({ type: "action", category: "command", name: "grep", input: { pattern: "TODO" } }))
    expect(all).toContainEqual(expect.objectContaining({ type: "action_result", name: "grep", state: "completed" }))
    const skills = all.filter((b) => b.name === "read_skill")
    expect(skills.map((b) => b.input)).toEqual([
      { skill_path: "skills/review/SKILL.md" },
      { skill_path: "other/SKILL.md", bundled_skill_id: "bundled-7" }
    ])
    expect(all).toContainEqual({ type: "event", name: "output", data: { text: "this is not json" } })
    const nested = (await conversation(runId)).steps.flatMap((s: Json) => s.steps)
    expect(nested).toContainEqual(expect.objectContaining({ description: "Investigate", summary: "looked" }))
    const found = await get(`/agent/run-by-external-reference?url=${encodeURIComponent(`https://example.test/ext/${kind}`)}`)
    expect(found.body.run_id).toBe(runId)
  })

  test("endings", "ends BLOCKED, FAILED with the agent's code, and FAILED agent_failed on a non-zero exit", async () => {
    const blocked = await runToEnd("@block need the API key")
    expect(blocked.run).toMatchObject({ state: "BLOCKED", status_message: { message: "need the API key" } })
    const failed = await runToEnd("@fail rate_limited the model said slow down")
    expect(failed.run).toMatchObject({
      state: "FAILED",
      status_message: { message: "the model said slow down", error_code: "rate_limited", retryable: true }
    })
    const exited = await runToEnd("@exit 3")
    expect(exited.run).toMatchObject({
      state: "FAILED",
      status_message: { message: "the agent exited with code 3", error_code: "agent_failed" }
    })
    const attachments = await runToEnd("@attachments")
    expect(texts((await conversation(attachments.runId)).steps)).toEqual(["no attachments"])
  })

  test("long line", "survives a line of 2 MB: the run ends with it in the conversation and the service answers", async () => {
    const { run, runId } = await runToEnd(`@big ${LONG_LINE}\n@say after`)
    expect(run.state).toBe("SUCCEEDED")
    const said = texts((await conversation(runId)).steps)
    expect(said.map((t) => t.length)).toEqual([LONG_LINE, 5])
    expect((await call(server(), "GET", "/healthz")).status).toBe(200)
  })

  test("output rules", "fails an agent that prints JSON nested 3,000 levels deep, or more than the run's output limit", async () => {
    const deep = `${"[".repeat(3000)}${"]".repeat(3000)}`
    const nested = await runToEnd(`@print ${deep}\n@say after`)
    expect(nested.run.state).toBe("FAILED")
    expect(nested.run.status_message).toMatchObject({ error_code: "agent_failed", message: expect.stringContaining("nested deeper than 100 levels") })
    const rejected = blocks((await conversation(nested.runId)).steps).filter((b) => b.type === "event")
    expect(rejected.map((b) => b.name)).toContain("output_rejected")
    const talkative = await runToEnd(`@big ${MAX_OUTPUT + 1_000_000}\n@say after`)
    expect(talkative.run.state).toBe("FAILED")
    expect(talkative.run.status_message.message).toContain(`passed the run's limit of ${MAX_OUTPUT} bytes`)
    const transcript = await get(`/agent/runs/${talkative.runId}/transcript`)
    const raw = await fetch(transcript.headers.get("location")!).then((r) => r.arrayBuffer())
    expect(raw.byteLength).toBe(MAX_OUTPUT)
    expect((await call(server(), "GET", "/healthz")).status).toBe(200)
  })

  test("child run", "starts a child run with the agent's run token", async () => {
    const { run, runId } = await runToEnd("@spawn Review the change")
    expect(run.state).toBe("SUCCEEDED")
    const said = texts((await conversation(runId)).steps)
    const child = /^spawned: (.+)$/.exec(said[0] ?? "")?.[1]
    expect(child, said.join("\n")).toBeDefined()
    const childRun = await waitFor(child!)
    expect(childRun).toMatchObject({ parent_run_id: runId, ancestor_run_ids: [runId], prompt: "Review the change", state: "SUCCEEDED" })
    expect(childRun.creator.uid).toBe(run.executor.uid)
  })

  test("follow-ups", "delivers a follow-up to the running agent, then continues the ended run with its history", async () => {
    const runId = await create("Wait\n@await-followup")
    await waitFor(runId, (r) => r.state === "INPROGRESS")
    const live = await call(server(), "POST", `/api/v1/agent/runs/${runId}/followups`, { token: member, body: { message: "the key is 42" } })
    expect(live.body).toMatchObject({ route: "deliver_live" })
    const first = await waitFor(runId)
    expect(first.state).toBe("SUCCEEDED")
    expect(texts((await conversation(runId)).steps)).toEqual(["received: the key is 42"])

    const again = await call(server(), "POST", `/api/v1/agent/runs/${runId}/followups`, { token: member, body: { message: "@history" } })
    expect(again.body).toMatchObject({ route: "new_execution", execution_count: 2, state: "QUEUED" })
    const second = await waitFor(runId, (r) => ended(r) && r.execution_count === 2)
    expect(second, JSON.stringify(second.status_message)).toMatchObject({ state: "SUCCEEDED", execution_count: 2, attempt: 1 })
    // The conversation is the dialogue: the prompt, the live follow-up and its answer, the
    // continuing message and its answer (the agent got the first three as history).
    expect(dialogue((await conversation(runId)).steps)).toEqual([
      "user: Wait\n@await-followup",
      "user: the key is 42",
      "assistant: received: the key is 42",
      "user: @history",
      "assistant: history: 3 messages last: received: the key is 42"
    ])
    // An empty message continues from the saved conversation: no user message, the prompt not run again.
    const empty = await call(server(), "POST", `/api/v1/agent/runs/${runId}/followups`, { token: member, body: { message: "" } })
    expect(empty.body).toMatchObject({ route: "new_execution", execution_count: 3 })
    const third = await waitFor(runId, (r) => ended(r) && r.execution_count === 3)
    expect(third.state).toBe("SUCCEEDED")
    expect(dialogue((await conversation(runId)).steps).slice(5)).toEqual(["assistant: Continued with 5 messages of history"])
  })

  test("capacity", "keeps follow-ups sent before the agent starts, and admits waiting runs when capacity frees", async () => {
    const team = await makeTeam(server(), `capacity-${kind}`)
    const adminToken = server().adminToken
    expect((await call(server(), "PATCH", `/api/v1/admin/teams/${team.uid}`, { token: adminToken, body: { max_concurrent_runs: 1 } })).status).toBe(200)
    const token = team.tokens.member
    const busy = await create("@sleep 1500", {}, token)
    const waiting = await call(server(), "POST", "/api/v1/agent/runs", { token, body: { prompt: "Second" } })
    expect(waiting.body).toMatchObject({ state: "PENDING", at_capacity: true })
    const stored = await call(server(), "POST", `/api/v1/agent/runs/${waiting.body.run_id}/followups`, {
      token,
      body: { message: "remember this" }
    })
    expect(stored.body).toMatchObject({ route: "store_for_start" })
    expect((await call(server(), "POST", `/api/v1/agent/runs/${waiting.body.run_id}/cancel`, { token })).status).toBe(409)
    const second = await waitFor(waiting.body.run_id, ended, token)
    expect(second.state).toBe("SUCCEEDED")
    expect((await waitFor(busy, ended, token)).state).toBe("SUCCEEDED")
    const said = texts((await call(server(), "GET", `/api/v1/agent/runs/${waiting.body.run_id}/conversation`, { token })).body.steps)
    expect(said).toEqual(["Done: Second", "received: remember this"])
  })

  test("cancel", "cancels a running agent: CANCELLED quickly, the agent stopped", async () => {
    const runId = await create("@sleep 60000")
    await waitFor(runId, (r) => r.state === "INPROGRESS")
    const started = Date.now()
    const cancelled = await call(server(), "POST", `/api/v1/agent/runs/${runId}/cancel`, { token: member })
    expect(cancelled).toMatchObject({ status: 200, body: runId })
    const run = await waitFor(runId, (r) => r.state === "CANCELLED" && r.is_sandbox_running === false)
    expect(run).toMatchObject({ state: "CANCELLED", status_message: { message: "cancelled by request" } })
    expect(Date.now() - started).toBeLessThan(10_000)
    // The agent gets the cancel message, says so and exits (its transcript shows it).
    const deadline = Date.now() + 5_000
    let raw = ""
    while (Date.now() < deadline && !raw.includes("\"cancelled\"")) {
      const transcript = await call(server(), "GET", `/api/v1/agent/runs/${runId}/transcript`, { token: member })
      if (transcript.status === 302) raw = await fetch(transcript.headers.get("location")!).then((r) => r.text())
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(raw).toContain("\"cancelled\"")
  })

  test("repositories", "clones the environment's repositories and runs its setup commands before the agent", async () => {
    const env = await call(server(), "POST", "/api/v1/agent/environments", {
      token: admin,
      body: {
        config: {
          name: `repos-${kind}`,
          github_repos: [{ owner: "acme", repo: "widgets" }, { owner: "acme", repo: "tools" }],
          setup_commands: ["test -f widgets/README.md", "grep -q tools tools/TOOLS.md", "test \"$(pwd)\" = \"$(cd widgets/.. && pwd)\""]
        },
        team: true
      }
    })
    expect(env.status).toBe(201)
    const runId = await create("With repositories", { config: { environment_id: env.body.uid } })
    // While it runs: an environment naming a repository the team does not have is refused, naming it.
    const missing = await call(server(), "POST", "/api/v1/agent/environments", {
      token: admin,
      body: { config: { name: `missing-${kind}`, github_repos: [{ owner: "acme", repo: "nowhere" }] }, team: true }
    })
    expect(missing.status).toBe(400)
    expect(missing.body.error).toContain("config.github_repos[0]")
    expect(missing.body.error).toContain("acme/nowhere")
    // One removed since the environment was made: its runs are refused, naming the environment.
    const reposDir = server().config.execution.reposDir
    writeRepository(reposDir, teamUid, "acme/gone", { "README.md": "soon gone\n" })
    const gone = await call(server(), "POST", "/api/v1/agent/environments", {
      token: admin,
      body: { config: { name: `gone-${kind}`, github_repos: [{ owner: "acme", repo: "gone" }] }, team: true }
    })
    expect(gone.status).toBe(201)
    rmSync(join(reposDir, teamUid, "acme", "gone"), { recursive: true, force: true })
    const refused = await call(server(), "POST", "/api/v1/agent/runs", {
      token: member,
      body: { prompt: "No such repository", config: { environment_id: gone.body.uid } }
    })
    expect(refused.status).toBe(400)
    expect(refused.body.error).toContain("config.environment_id")
    expect(refused.body.error).toContain("acme/gone")
    const run = await waitFor(runId)
    expect(run, JSON.stringify(run.status_message)).toMatchObject({ state: "SUCCEEDED", environment_id: env.body.uid })
  })

  test("stubborn agent", "cancel stops an agent that ignores the cancel message and SIGTERM (SIGKILL after the grace)", async () => {
    const stubborn = `node -e 'process.on("SIGTERM", () => {}); console.log(JSON.stringify({ type: "session", session_id: "stubborn" })); setInterval(() => {}, 1000)'`
    const env = await call(server(), "POST", "/api/v1/agent/environments", {
      token: admin,
      body: { config: { name: `stubborn-${kind}`, harness: stubborn }, team: true }
    })
    expect(env.status).toBe(201)
    const runId = await create("Ignore everything", { config: { environment_id: env.body.uid } })
    await waitFor(runId, (r) => r.state === "INPROGRESS" && r.session_id === "stubborn")
    expect((await cancel(runId)).status).toBe(200)
    // Cancel message, 1 s, SIGTERM, 1 s, SIGKILL: then the sandbox is released (an agent that is
    // never killed is never gone; a loaded machine may take its time to remove a container).
    const gone = async () =>
      executor === "docker"
        ? execFileSync("docker", ["ps", "-aq", "--filter", `label=agent-runs.run-id=${runId}`]).toString().trim() === ""
        : executor === "kubernetes"
        ? !cluster!().list("jobs", "agents").some((job) => job.metadata?.labels?.["agent-runs/run-id"] === runId)
        : !existsSync(join(server().dataDir, "sandboxes", runId))
    const deadline = Date.now() + 30_000
    while (Date.now() < deadline && !(await gone())) await new Promise((resolve) => setTimeout(resolve, 100))
    expect(await gone()).toBe(true)
    expect((await get(`/agent/runs/${runId}`)).body.state).toBe("CANCELLED")
  }, 60_000)

  test("setup", "cancels during environment setup, and fails a setup with the debug window", async () => {
    const slow = await call(server(), "POST", "/api/v1/agent/environments", {
      token: admin,
      body: { config: { name: `slow-${kind}`, setup_commands: ["sleep 2"] }, team: true }
    })
    expect(slow.status).toBe(201)
    const runId = await create("never runs", { config: { environment_id: slow.body.uid } })
    await waitFor(runId, (r) => r.state === "CLAIMED")
    expect((await cancel(runId)).status).toBe(200)
    const cancelled = await waitFor(runId)
    expect(cancelled.state).toBe("CANCELLED")

    const broken = await call(server(), "POST", "/api/v1/agent/environments", {
      token: admin,
      body: {
        config: { name: `broken-${kind}`, setup_commands: ["echo preparing", "echo broken >&2; exit 7"], failure_session_retention_minutes: 0.05 },
        team: true
      }
    })
    expect(broken.status).toBe(201)
    const failedId = await create("set me up", { config: { environment_id: broken.body.uid } })
    const failed = await waitFor(failedId)
    expect(failed).toMatchObject({
      state: "FAILED",
      is_sandbox_running: true,
      status_message: { error_code: "environment_setup_failed" }
    })
    expect(failed.status_message.message).toMatch(/exit/)
    expect(failed.status_message.session_debug_until).toBeDefined()
    const env = (await get(`/agent/environments/${broken.body.uid}`, admin)).body
    expect(env.setup_failed).toBe(true)

    const debug = await call(server(), "POST", `/api/v1/agent/runs/${failedId}/followups`, { token: member, body: { message: "what broke?" } })
    expect(debug.body).toMatchObject({ route: "debug_session", state: "FAILED" })
    const deadline = Date.now() + 5_000
    let said: Array<string> = []
    while (Date.now() < deadline && !said.includes("debug: what broke?")) {
      said = texts((await conversation(failedId)).steps)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(said).toContain("debug: what broke?")
    const still = (await get(`/agent/runs/${failedId}`)).body
    expect(still).toMatchObject({ state: "FAILED", status_message: { error_code: "environment_setup_failed" } })
    // The window (3 s) ends: the sandbox is released.
    const released = await waitFor(failedId, (r) => r.is_sandbox_running === false)
    expect(released.is_sandbox_running).toBe(false)
    const timeline = (await get(`/agent/runs/${failedId}/timeline`)).body.events.map((e: Json) => e.event_type)
    expect(timeline).toEqual(expect.arrayContaining(["environment_setup_failed", "run_failed", "followup_received", "debug_session_started"]))
  })
})
