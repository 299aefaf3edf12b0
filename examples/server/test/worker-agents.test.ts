/**
 * A real agent CLI on a self-hosted worker (docs/workers.md): the built CLI's `agent-runs worker`
 * runs Claude Code (the pinned devDependency that fits this Node, first on the worker's PATH) on
 * local processes against a fake Anthropic server on 127.0.0.1. The run goes through the API, with
 * `worker_host`, the team secret `ANTHROPIC_API_KEY` as the CLI's key and the environment's
 * `ANTHROPIC_BASE_URL`: it succeeds with its conversation and session; a follow-up after the end
 * continues the run on the worker, resuming the same Claude session from the session files the
 * server kept. The key reached the model (the fake server refuses any other), and is nowhere in
 * what the service shows nor left in the worker's data directory. And a worker stops an agent that
 * runs past the run's maximum runtime, or the server's ceiling it learns from the heartbeat.
 */
import { claudeCodePackage, cliPath, fakeModel } from "@agent-runs/testing"
import { Effect, Exit, Scope } from "effect"
import { readdirSync, readFileSync, statSync, symlinkSync } from "node:fs"
import { delimiter, join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, ENDED_STATES, startServer, type TestServer, waitForRun } from "./harness.js"
import { startWorker, teamWithWorker, tempDir } from "./workerDaemon.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const KEY = "sk-worker-team-key"

const blocks = (steps: ReadonlyArray<Json>): Array<Json> =>
  steps.flatMap((step) => [...step.messages.flatMap((m: Json) => m.content), ...blocks(step.steps)])

/** Every file under `dir` whose bytes contain `text`. */
const filesContaining = (dir: string, text: string): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    const stat = statSync(path, { throwIfNoEntry: false })
    if (stat === undefined) return []
    if (stat.isDirectory()) return filesContaining(path, text)
    return stat.isFile() && readFileSync(path).includes(text) ? [path] : []
  })

describe("agent CLIs on a self-hosted worker", () => {
  const scope = Effect.runSync(Scope.make())
  let server: TestServer
  let team: Awaited<ReturnType<typeof teamWithWorker>>
  let modelUrl = ""
  const dataDir = tempDir()

  beforeAll(async () => {
    const bin = tempDir()
    symlinkSync(cliPath(claudeCodePackage(), "claude"), join(bin, "claude"))
    modelUrl = (await Effect.runPromise(Scope.extend(fakeModel({ apiKey: KEY }), scope))).url
    // The server runs nothing itself: the worker's runs are claimed by the worker alone.
    server = await Effect.runPromise(Scope.extend(startServer("sqlite"), scope))
    team = await teamWithWorker(server, server.adminToken, "worker-agents")
    // No per-sandbox users: the CLI is this checkout's devDependency (see harnesses.test.ts).
    await startWorker({
      url: server.url,
      token: team.worker,
      workerId: "agents-box",
      dataDir,
      extra: ["--process-isolation", "none"],
      env: { PATH: `${bin}${delimiter}${process.env["PATH"] ?? ""}` }
    })
  }, 60_000)
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)), 60_000)

  it("runs Claude Code to SUCCEEDED with the team's key, and resumes its session for a follow-up", async () => {
    const admin = team.tokens.admin
    expect((await call(server, "PUT", "/api/v1/agent/secrets/ANTHROPIC_API_KEY", { token: admin, body: { value: KEY } })).status)
      .toBeLessThan(300)
    const env = await call(server, "POST", "/api/v1/agent/environments", {
      token: admin,
      body: { config: { name: "claude-on-worker", harness: { type: "claude", model_id: "claude-sonnet-4-5" }, env: { ANTHROPIC_BASE_URL: modelUrl } }, team: true }
    })
    expect(env.status).toBe(201)
    const member = team.tokens.member
    const created = await call(server, "POST", "/api/v1/agent/runs", {
      token: member,
      body: { prompt: "RUN: echo hi > g.txt && ls", config: { environment_id: env.body.uid, worker_host: "agents-box" } }
    })
    expect(created.status).toBe(200)
    const runId = created.body.run_id
    const run = await waitForRun(server, member, runId, undefined, 90_000)
    expect(run.state, JSON.stringify(run.status_message)).toBe("SUCCEEDED")
    expect(run.session_id).toBeTruthy()
    expect(run.request_usage.input_tokens).toBeGreaterThan(0)
    const all = blocks((await call(server, "GET", `/api/v1/agent/runs/${runId}/conversation`, { token: member })).body.steps)
    expect(all.find((b) => b.type === "action")).toMatchObject({ category: "command", name: "Bash" })
    expect(all.some((b) => b.type === "text" && b.text.includes("DONE:") && b.text.includes("g.txt"))).toBe(true)
    const transcript = await call(server, "GET", `/api/v1/agent/runs/${runId}/transcript`, { token: member })
    const raw = await fetch(transcript.headers.get("location")!).then((r) => r.text())
    expect(raw).toContain(`"session_id":"${run.session_id}"`)
    expect(raw).not.toContain(KEY)

    // A follow-up after the end: a new execution on the worker resumes the same Claude session.
    const followup = await call(server, "POST", `/api/v1/agent/runs/${runId}/followups`, { token: member, body: { message: "AND-THEN" } })
    expect(followup.status).toBeLessThan(300)
    const again = await waitForRun(server, member, runId, (r: Json) => r.execution_count === 2 && ENDED_STATES.includes(r.state), 90_000)
    expect(again.state, JSON.stringify(again.status_message)).toBe("SUCCEEDED")
    expect(again.session_id).toBe(run.session_id)
    const later = blocks((await call(server, "GET", `/api/v1/agent/runs/${runId}/conversation`, { token: member })).body.steps)
    expect(later.some((b) => b.type === "text" && b.text === "ANSWER: AND-THEN")).toBe(true)
    // Nothing of the key on the worker's disk once its executions ended (their sandboxes are gone).
    expect(filesContaining(dataDir, KEY)).toEqual([])
  }, 240_000)
})

describe("the maximum runtime on a self-hosted worker", () => {
  const scope = Effect.runSync(Scope.make())
  let server: TestServer
  let team: Awaited<ReturnType<typeof teamWithWorker>>

  beforeAll(async () => {
    // The server's ceiling (2 s) reaches the worker with its heartbeat's answer.
    server = await Effect.runPromise(Scope.extend(startServer("sqlite", {}, { maxRuntimeSeconds: 2 }), scope))
    team = await teamWithWorker(server, server.adminToken, "worker-runtime")
    await startWorker({ url: server.url, token: team.worker, workerId: "slow-box", dataDir: tempDir(), extra: ["--process-isolation", "none"] })
  }, 60_000)
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)), 60_000)

  it("stops an agent that runs past the run's limit, or the server's ceiling: FAILED max_runtime_exceeded", async () => {
    const member = team.tokens.member
    const create = async (config: Json) => {
      const created = await call(server, "POST", "/api/v1/agent/runs", {
        token: member,
        body: { prompt: "@say started\n@sleep 600000", config: { worker_host: "slow-box", ...config } }
      })
      expect(created.status).toBe(200)
      return created.body.run_id as string
    }
    for (const [config, seconds] of [[{ max_runtime_seconds: 1 }, 1], [{}, 2], [{ max_runtime_seconds: 600 }, 2]] as const) {
      const run = await waitForRun(server, member, await create(config), undefined, 30_000)
      expect(run.state, JSON.stringify(config)).toBe("FAILED")
      expect(run.status_message).toMatchObject({ error_code: "max_runtime_exceeded", message: expect.stringContaining(`${seconds} s`) })
    }
  }, 120_000)
})

