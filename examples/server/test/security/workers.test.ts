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
 * worker of that name (ids are per team) and never sees team A's run. While A holds the run, B
 * cannot act for it as "box" either (events, report, renew, transcript, follow-ups, conversation,
 * artifacts: 403), even with A's execution id.
 *
 * The team secrets a run's agent gets (its agent CLI's key) are in the claim's answer to A only:
 * B's claim is a 403 and the other team's worker gets no run, so neither ever sees the key.
 *
 * Handing an id over: revoking A's token keeps the id A's (a new token of A works, B still gets
 * 403); only a team admin may release the id (a member, B or a run's creator get 403); once
 * released, the next service account to call binds it and A is refused.
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
  const tokens = { a: "", b: "", otherTeam: "", member: "", admin: "" }
  const principals = { a: "" }
  let tokenIdA = ""

  const newToken = async (principal: string, name: string) => {
    const token = await call(server, "POST", `/api/v1/admin/principals/${principal}/tokens`, {
      token: server.adminToken,
      body: { name }
    })
    expect(token.status).toBe(201)
    return { token: token.body.token as string, id: token.body.token_id as string }
  }
  const serviceAccount = async (team: string, name: string) => {
    const principal = await call(server, "POST", "/api/v1/admin/principals", {
      token: server.adminToken,
      body: { type: "service_account", display_name: name, memberships: [{ team_uid: team, role: "member" }] }
    })
    return { uid: principal.body.uid as string, ...(await newToken(principal.body.uid, name)) }
  }

  beforeAll(async () => {
    server = await Effect.runPromise(Scope.extend(startServer("sqlite"), scope))
    const team = await makeTeam(server, "workers-a")
    const other = await makeTeam(server, "workers-b")
    tokens.member = team.tokens.member
    tokens.admin = team.tokens.admin
    const a = await serviceAccount(team.uid, "worker a")
    tokens.a = a.token
    tokenIdA = a.id
    principals.a = a.uid
    tokens.b = (await serviceAccount(team.uid, "worker b")).token
    tokens.otherTeam = (await serviceAccount(other.uid, "worker of another team")).token
  })
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

  const asWorker = (token: string) => ({
    heartbeat: () => call(server, "POST", "/api/v1/workers/box/heartbeat", { token, body: { capacity: 4 } }),
    claim: () => call(server, "POST", "/api/v1/workers/box/claim", { token, body: { wait_seconds: 0, protocol: 3, secrets: true } }),
    followups: (runId: string, execution = executionId()) =>
      call(server, "POST", `/api/v1/workers/box/runs/${runId}/followups`, { token, body: { execution_id: execution } }),
    disconnect: () => call(server, "DELETE", "/api/v1/workers/box/heartbeat", { token })
  })

  /** A run of the team for the worker id "box", created by its member. */
  const createForBox = (prompt: string) =>
    call(server, "POST", "/api/v1/agent/runs", { token: tokens.member, body: { prompt, config: { worker_host: "box" } } })

  it("another service account of the team is refused on every worker endpoint, and gets no run", async () => {
    const a = asWorker(tokens.a)
    const b = asWorker(tokens.b)
    expect((await a.heartbeat()).status).toBe(200)
    const created = await createForBox("for box")
    expect(created.status).toBe(200)
    const runId = created.body.run_id as string
    const attempts = async () => [await b.heartbeat(), await b.claim(), await b.followups(runId), await b.disconnect()]
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
    expect((await foreign.claim()).body.claim).toBeNull()
    expect((await foreign.followups(runId)).status).toBe(404)
    // The owner comes back and takes its run.
    expect((await a.heartbeat()).status).toBe(200)
    const claimed = await a.claim()
    expect(claimed.status).toBe(200)
    expect(claimed.body.claim.run.run_id).toBe(runId)
  })

  it("another service account cannot write the run the owner holds, even with its execution id", async () => {
    const a = asWorker(tokens.a)
    expect((await a.heartbeat()).status).toBe(200)
    const created = await createForBox("held by box")
    expect(created.status).toBe(200)
    const claimed = await a.claim()
    expect(claimed.body.claim.run.run_id).toBe(created.body.run_id)
    // The server names the execution.
    const execution = claimed.body.claim.execution_id as string
    const runId = created.body.run_id as string
    const path = `/api/v1/workers/box/runs/${runId}`
    const writes = [
      ["POST", `${path}/events`, { execution_id: execution, events: [{ _tag: "Start" }] }],
      ["POST", `${path}/report`, { execution_id: execution, report: { request_usage: { input_tokens: 1, output_tokens: 1, inference_cost: 0, compute_cost: 0 } } }],
      ["POST", `${path}/renew`, { execution_id: execution, protocol: 3 }],
      ["POST", `${path}/transcript`, { execution_id: execution, data_base64: Buffer.from("forged\n").toString("base64"), offset: 0 }],
      ["POST", `${path}/followups`, { execution_id: execution }],
      ["POST", `${path}/conversation/parts`, { execution_id: execution, seq: 1, ops: [{ op: "step", key: 1, parent: null, id: "forged", at: 0 }] }],
      ["POST", `${path}/artifacts`, { execution_id: execution, artifact: { artifact_type: "PULL_REQUEST", created_at: new Date().toISOString(), data: { url: "https://x.example/pr/1", branch: "b" } } }]
    ] as const
    for (const [method, url, body] of writes) {
      const reply = await call(server, method, url, { token: tokens.b, body })
      expect(reply.status, `${method} ${url}`).toBe(403)
      expect(reply.body.error).toContain("box")
    }
    // A worker of the previous protocol (claims and renews without `protocol`, writes whole runs
    // and conversations) is told which releases it may be: even in the middle of a run it cannot keep renewing.
    const olds = [
      ["POST", "/api/v1/workers/box/claim", { execution_id: executionId(), wait_seconds: 0 }],
      ["POST", `${path}/update`, { guard: { state: "CLAIMED", execution_id: execution }, run: {}, events: [] }],
      ["PUT", `${path}/conversation`, { execution_id: execution, steps: [] }],
      ["POST", `${path}/renew`, { execution_id: execution }]
    ] as const
    for (const [method, url, body] of olds) {
      const old = await call(server, method, url, { token: tokens.a, body })
      expect(old.status, `${method} ${url}`).toBe(422)
      expect(old.body.error).toContain("run a worker (agent-runs worker) of the server's release or one minor release apart")
    }
    // The run is still the owner's, as it was.
    const still = await call(server, "GET", `/api/v1/agent/runs/${runId}`, { token: tokens.member })
    expect(still.status).toBe(200)
    expect(still.body.state).toBe("CLAIMED")
    const transcript = await call(server, "GET", `/api/v1/agent/runs/${runId}/transcript`, { token: tokens.member })
    expect(JSON.stringify(transcript.body ?? null)).not.toContain("forged")
    // The owner's execution still holds it.
    expect((await a.followups(runId, execution)).status).toBe(200)
  })

  it("the key of a run's agent CLI goes to the worker bound to its id alone, in the claim's answer", async () => {
    const key = `sk-${randomBytes(12).toString("hex")}`
    expect((await call(server, "PUT", "/api/v1/agent/secrets/ANTHROPIC_API_KEY", { token: tokens.admin, body: { value: key } })).status)
      .toBeLessThan(300)
    const created = await call(server, "POST", "/api/v1/agent/runs", {
      token: tokens.member,
      body: { prompt: "use the key", config: { worker_host: "box", harness: { type: "claude" } } }
    })
    expect(created.status).toBe(200)
    const a = asWorker(tokens.a)
    const b = asWorker(tokens.b)
    const foreign = asWorker(tokens.otherTeam)
    expect((await a.heartbeat()).status).toBe(200)
    expect((await foreign.heartbeat()).status).toBe(200)
    // The unbound service account of the team, and another team's worker of the same name.
    const refused = await b.claim()
    expect(refused.status).toBe(403)
    const elsewhere = await foreign.claim()
    expect(elsewhere.body.claim).toBeNull()
    for (const reply of [refused, elsewhere]) expect(JSON.stringify(reply.body)).not.toContain(key)
    // The bound worker gets it with the run.
    const claimed = await a.claim()
    expect(claimed.body.claim.run.run_id).toBe(created.body.run_id)
    expect(claimed.body.claim.secrets.agent_auth).toEqual({ value: key })
    // Nowhere in what the team can read about the run.
    for (const path of ["", "/timeline"]) {
      const read = await call(server, "GET", `/api/v1/agent/runs/${created.body.run_id}${path}`, { token: tokens.member })
      expect(JSON.stringify(read.body)).not.toContain(key)
    }
  })

  it("a revoked token keeps the id its account's; only a team admin releases it, then the next service account binds it", async () => {
    const a = asWorker(tokens.a)
    const b = asWorker(tokens.b)
    expect((await call(server, "DELETE", `/api/v1/admin/tokens/${tokenIdA}`, { token: server.adminToken })).status).toBe(200)
    expect((await a.heartbeat()).status).toBe(401)
    const renewed = await newToken(principals.a, "worker a again")
    expect((await asWorker(renewed.token).heartbeat()).status).toBe(200)
    expect((await b.heartbeat()).status).toBe(403)
    // Releasing: a member, the other service account and an unknown id.
    const release = (token: string, id = "box") => call(server, "DELETE", `/api/v1/workers/${id}/binding`, { token })
    for (const token of [tokens.member, tokens.b, renewed.token]) {
      const refused = await release(token)
      expect(refused.status).toBe(403)
      expect(refused.body.error_code).toBe("not_authorized")
    }
    expect((await b.heartbeat()).status).toBe(403)
    expect((await release(tokens.admin, "never-used")).body).toEqual({ released: false })
    // The admin retires A's account's token, then releases the id: B binds it, A is refused.
    expect((await call(server, "DELETE", `/api/v1/admin/tokens/${renewed.id}`, { token: server.adminToken })).status).toBe(200)
    const released = await release(tokens.admin)
    expect(released.status).toBe(200)
    expect(released.body).toEqual({ released: true })
    expect((await b.heartbeat()).status).toBe(200)
    const third = await newToken(principals.a, "worker a, later")
    const refused = await asWorker(third.token).heartbeat()
    expect(refused.status).toBe(403)
    expect(refused.body.error).toContain("box")
  })
})
