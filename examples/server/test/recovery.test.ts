/**
 * Crashes: the built server as a process, killed with SIGKILL while runs are in flight, then
 * started again on the same data directory (and database) with a one-second lease. Every run
 * reaches a terminal state or runs again under the attempt rule: none is lost, none stays
 * CLAIMED or INPROGRESS, none runs twice at once; a run whose executor is lost three times ends
 * ERROR `resource_unavailable`. On the process executor (both databases) and on Docker (the
 * containers outlive the server; the restarted one removes them).
 */
import { testImage } from "@agent-runs/executor-docker/testing"
import { randomBytes } from "node:crypto"
import { describe, expect, it } from "vitest"
import { makeTeam } from "./harness.js"
import { lifecycle } from "./lifecycle.js"
import { call, type ServerProcess } from "./process.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const ENDED = ["SUCCEEDED", "FAILED", "BLOCKED", "ERROR", "CANCELLED"]

/** Polls the runs until `done` holds for all (or the time is up); returns them. */
const waitForRuns = async (server: ServerProcess, token: string, ids: ReadonlyArray<string>, done: (run: Json) => boolean, timeoutMs = 30_000) => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const runs = await Promise.all(ids.map(async (id) => (await call(server, "GET", `/api/v1/agent/runs/${id}`, { token })).body))
    if (runs.every(done) || Date.now() > deadline) return runs
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

const kill = async (life: ReturnType<typeof lifecycle>, server: ServerProcess) => {
  process.kill(server.pid, "SIGKILL")
  const exited = await life.stop()
  expect(exited.signal).toBe("SIGKILL")
}

describe.each([
  ["sqlite", "process"],
  ["postgres", "process"],
  ["sqlite", "docker"]
] as const)("recovery after SIGKILL (%s, %s executor)", (kind, executor) => {
  const adminToken = `ar_${randomBytes(32).toString("base64url")}`
  const life = lifecycle(kind, {
    AGENT_RUNS_ADMIN_TOKEN: adminToken,
    AGENT_RUNS_LEASE_SECONDS: "1",
    AGENT_RUNS_EXECUTOR: executor,
    AGENT_RUNS_DOCKER_IMAGE: testImage
  })

  it("loses no run: those in flight run again (attempt 2), the queued ones run", async () => {
    let server = await life.start()
    const team = await makeTeam({ url: server.url, adminToken }, `recovery-${kind}`)
    const token = team.tokens.member
    const create = async (prompt: string) =>
      (await call(server, "POST", "/api/v1/agent/runs", { token, body: { prompt } })).body.run_id as string
    const inFlight = await Promise.all([1, 2, 3].map((i) => create(`In flight ${i}\n@sleep 1500\n@say finished ${i}`)))
    await waitForRuns(server, token, inFlight, (r) => r.state === "INPROGRESS", 10_000)
    await kill(life, server)

    server = await life.start()
    const queued = await create("Created after the crash")
    const runs = await waitForRuns(server, token, [...inFlight, queued], (r) => ENDED.includes(r.state))
    const seen = JSON.stringify(runs.map((r) => [r.state, r.attempt, r.status_message]))
    expect(runs.map((r) => r.state), seen).toEqual(["SUCCEEDED", "SUCCEEDED", "SUCCEEDED", "SUCCEEDED"])
    expect(runs.slice(0, 3).map((r) => r.attempt), seen).toEqual([2, 2, 2])
    expect(runs[3].attempt).toBe(1)
    for (const id of inFlight) {
      const timeline = (await call(server, "GET", `/api/v1/agent/runs/${id}/timeline`, { token })).body.events.map((e: Json) => e.event_type)
      expect(timeline).toEqual(expect.arrayContaining(["lease_expired", "requeued"]))
      expect(timeline.filter((t: string) => t === "run_in_progress")).toHaveLength(2)
      expect(timeline.filter((t: string) => t === "run_succeeded")).toHaveLength(1)
    }
    await life.stop()
  }, 90_000)

  it("ends ERROR resource_unavailable when the executor is lost three times", async () => {
    let server = await life.start()
    const team = await makeTeam({ url: server.url, adminToken }, `attempts-${kind}`)
    const token = team.tokens.member
    const runId = (await call(server, "POST", "/api/v1/agent/runs", { token, body: { prompt: "@sleep 60000" } })).body.run_id as string
    for (const attempt of [1, 2, 3]) {
      const [run] = await waitForRuns(server, token, [runId], (r) => r.state === "INPROGRESS" && r.attempt === attempt, 20_000)
      expect(run, JSON.stringify(run.status_message)).toMatchObject({ state: "INPROGRESS", attempt })
      await kill(life, server)
      server = await life.start()
    }
    const [run] = await waitForRuns(server, token, [runId], (r) => ENDED.includes(r.state), 20_000)
    expect(run).toMatchObject({ state: "ERROR", attempt: 3, status_message: { error_code: "resource_unavailable", retryable: true } })
    await life.stop()
  }, 120_000)
})
