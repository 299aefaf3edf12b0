/**
 * Threat: any member service account of a team used any worker id: it could heartbeat as another
 * team member's worker, claim the runs queued for it (prompts, run tokens, secrets of their MCP
 * servers) and write their results.
 *
 * Attack: service account A registers worker "box" (its first heartbeat) and a member queues a run
 * for it; service account B of the same team then heartbeats, claims, reads the run and
 * disconnects as "box" — also after A disconnected.
 *
 * Expected: every call of B as "box" is a 403 `not_authorized` naming the worker id, B gets no
 * run, and A still claims the run. Another team's service account using the same id has its own
 * worker of that name (ids are per team) and never sees team A's run.
 */
import { Ids } from "@agent-runs/core"
import { Effect, Exit, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, makeTeam, startServer, type TestServer } from "../harness.js"

const executionId = () => Ids.formatUuidV7(Date.now(), new Uint8Array(randomBytes(10)))

describe("worker ids belong to the service account that registered them", () => {
  const scope = Effect.runSync(Scope.make())
  let server: TestServer
  const tokens = { a: "", b: "", otherTeam: "", member: "" }

  const serviceAccount = async (team: string, name: string) => {
    const principal = await call(server, "POST", "/api/v1/admin/principals", {
      token: server.adminToken,
      body: { type: "service_account", display_name: name, memberships: [{ team_uid: team, role: "member" }] }
    })
    const token = await call(server, "POST", `/api/v1/admin/principals/${principal.body.uid}/tokens`, {
      token: server.adminToken,
      body: { name }
    })
    return token.body.token as string
  }

  beforeAll(async () => {
    server = await Effect.runPromise(Scope.extend(startServer("sqlite"), scope))
    const team = await makeTeam(server, "workers-a")
    const other = await makeTeam(server, "workers-b")
    tokens.member = team.tokens.member
    tokens.a = await serviceAccount(team.uid, "worker a")
    tokens.b = await serviceAccount(team.uid, "worker b")
    tokens.otherTeam = await serviceAccount(other.uid, "worker of another team")
  })
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

  const asWorker = (token: string) => ({
    heartbeat: () => call(server, "POST", "/api/v1/workers/box/heartbeat", { token, body: { capacity: 1 } }),
    claim: () => call(server, "POST", "/api/v1/workers/box/claim", { token, body: { execution_id: executionId(), wait_seconds: 0 } }),
    get: (runId: string) => call(server, "GET", `/api/v1/workers/box/runs/${runId}`, { token }),
    disconnect: () => call(server, "DELETE", "/api/v1/workers/box/heartbeat", { token })
  })

  it("another service account of the team is refused on every worker endpoint, and gets no run", async () => {
    const a = asWorker(tokens.a)
    const b = asWorker(tokens.b)
    expect((await a.heartbeat()).status).toBe(200)
    const created = await call(server, "POST", "/api/v1/agent/runs", {
      token: tokens.member,
      body: { prompt: "for box", config: { worker_host: "box" } }
    })
    expect(created.status).toBe(200)
    const runId = created.body.run_id as string
    const attempts = async () => [await b.heartbeat(), await b.claim(), await b.get(runId), await b.disconnect()]
    for (const reply of await attempts()) {
      expect(reply.status).toBe(403)
      expect(reply.body).toMatchObject({ error_code: "not_authorized" })
      expect(reply.body.error).toContain("box")
    }
    // The owner away: still its id.
    expect((await a.disconnect()).status).toBe(200)
    for (const reply of await attempts()) expect(reply.status).toBe(403)
    // Another team's service account: its own "box", which never sees team A's run.
    const foreign = asWorker(tokens.otherTeam)
    expect((await foreign.heartbeat()).status).toBe(200)
    expect((await foreign.claim()).body.run).toBeNull()
    expect((await foreign.get(runId)).status).toBe(404)
    // The owner comes back and takes its run.
    expect((await a.heartbeat()).status).toBe(200)
    const claimed = await a.claim()
    expect(claimed.status).toBe(200)
    expect(claimed.body.run.item.run_id).toBe(runId)
  })
})
