/**
 * Threat: a member queues runs for a self-hosted worker that does not exist (or never comes back).
 * Each such run is QUEUED, so it holds one of the team's `max_concurrent_runs` slots forever, and
 * its cancel answered 422: a few of them stopped the whole team's runs for good.
 *
 * Attack: with a team capacity of 1, a run for worker "ghost" takes the slot and the next run waits
 * PENDING behind it.
 *
 * Expected: the ghost run can be cancelled at once (the waiting run is then admitted), and a ghost
 * run left alone fails `resource_unavailable` once it has waited `AGENT_RUNS_WORKER_WAIT_SECONDS`
 * (2 s here) for a worker that sent no heartbeat for as long, freeing the slot; its timeline says so.
 */
import { Effect, Exit, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, makeTeam, startServer, type TestServer } from "../harness.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

describe("runs for an absent self-hosted worker do not hold a team's capacity", () => {
  const scope = Effect.runSync(Scope.make())
  let server: TestServer
  let token: string

  beforeAll(async () => {
    server = await Effect.runPromise(Scope.extend(startServer("sqlite", {}, { workerWaitSeconds: 2 }), scope))
    const team = await makeTeam(server, "ghosts")
    token = team.tokens.member
    const limited = await call(server, "PATCH", `/api/v1/admin/teams/${team.uid}`, { token: server.adminToken, body: { max_concurrent_runs: 1 } })
    expect(limited.status).toBe(200)
  })
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

  const create = async (body: Json) => {
    const reply = await call(server, "POST", "/api/v1/agent/runs", { token, body })
    expect(reply.status).toBe(200)
    return reply.body as { run_id: string; state: string }
  }
  const get = async (id: string): Promise<Json> => (await call(server, "GET", `/api/v1/agent/runs/${id}`, { token })).body
  const until = async (id: string, done: (run: Json) => boolean, timeoutMs = 10_000) => {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const run = await get(id)
      if (done(run) || Date.now() > deadline) return run
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }

  it("a run queued for a worker that never came is cancelled at once, and the waiting run gets the slot", async () => {
    const ghost = await create({ prompt: "for nobody", config: { worker_host: "ghost" } })
    expect(ghost.state).toBe("QUEUED")
    const waiting = await create({ prompt: "@sleep 60000", config: { worker_host: "ghost-2" } })
    expect(waiting.state).toBe("PENDING")
    const cancelled = await call(server, "POST", `/api/v1/agent/runs/${ghost.run_id}/cancel`, { token })
    expect(cancelled.status).toBe(200)
    expect((await get(ghost.run_id)).state).toBe("CANCELLED")
    expect((await until(waiting.run_id, (r) => r.state !== "PENDING")).state).toBe("QUEUED")
  })

  it("a run left waiting for an absent worker fails resource_unavailable after the wait, freeing the slot", async () => {
    // The previous test's second run (for ghost-2) holds the slot now; it fails after the wait.
    const next = await create({ prompt: "after the ghosts", config: { worker_host: "ghost-3" } })
    expect(next.state).toBe("PENDING")
    const runs = (await call(server, "GET", "/api/v1/agent/runs?state=QUEUED", { token })).body.runs as Array<Json>
    expect(runs).toHaveLength(1)
    const failed = await until(runs[0].run_id, (r) => r.state !== "QUEUED")
    expect(failed.state).toBe("FAILED")
    expect(failed.status_message).toMatchObject({ error_code: "resource_unavailable" })
    expect(failed.status_message.message).toContain("ghost-2")
    const timeline = (await call(server, "GET", `/api/v1/agent/runs/${runs[0].run_id}/timeline`, { token })).body.events as Array<Json>
    expect(timeline.map((e) => e.event_type)).toContain("run_failed")
    expect((await until(next.run_id, (r) => r.state !== "PENDING")).state).not.toBe("PENDING")
  })
})
