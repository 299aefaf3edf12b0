/**
 * Crashes: the built server as a process, killed with SIGKILL while runs are in flight, then
 * started again on the same data directory (and database) with a one-second lease. Every run
 * reaches a terminal state or runs again under the attempt rule: none is lost, none stays
 * CLAIMED or INPROGRESS, none runs twice at once. Each database and each executor once (what
 * survives a crash is the store's, what is left behind the executor's; neither depends on the
 * other): SQLite with the process executor (the default), PostgreSQL with Docker (the containers
 * outlive the server; the restarted one removes them).
 *
 * The attempt rule's end (ERROR `resource_unavailable` after the third lost execution) is the
 * same lease sweep whoever lost the execution: tested on the TestClock in core's DispatcherSuite
 * (memory, SQLite) and RunStoreConformance (memory, SQLite, PostgreSQL), and end to end once, with
 * a self-hosted worker lost three times (workers.test.ts).
 */
import { testImage } from "@agent-runs/executor-docker/testing"
import { Effect } from "effect"
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
  ["postgres", "docker"]
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
    const started = await waitForRuns(server, token, inFlight, (r) => r.state === "INPROGRESS")
    expect(started.map((r) => r.state), JSON.stringify(started)).toEqual(["INPROGRESS", "INPROGRESS", "INPROGRESS"])
    await kill(life, server)

    server = await life.start()
    // It takes back the sandboxes the crashed one left (their agents' processes, or containers).
    await Effect.runPromise(server.waitForOutput(/found 3 sandboxes of an earlier run of the service/))
    const queued = await create("Created after the crash")
    const runs = await waitForRuns(server, token, [...inFlight, queued], (r) => ENDED.includes(r.state))
    const seen = JSON.stringify(runs.map((r) => [r.state, r.attempt, r.status_message]))
    expect(runs.map((r) => r.state), seen).toEqual(["SUCCEEDED", "SUCCEEDED", "SUCCEEDED", "SUCCEEDED"])
    expect(runs.slice(0, 3).map((r) => r.attempt), seen).toEqual([2, 2, 2])
    expect(runs[3].attempt).toBe(1)
    for (const id of inFlight) {
      const events = (await call(server, "GET", `/api/v1/agent/runs/${id}/timeline`, { token })).body.events
      const timeline = events.map((e: Json) => e.event_type)
      const shown = JSON.stringify(events.map((e: Json) => [e.event_type, e.execution_id, e.message]))
      expect(timeline, shown).toEqual(expect.arrayContaining(["lease_expired", "requeued"]))
      expect(timeline.filter((t: string) => t === "run_in_progress"), shown).toHaveLength(2)
      expect(timeline.filter((t: string) => t === "run_succeeded"), shown).toHaveLength(1)
    }
    await life.stop()
  }, 90_000)
})
