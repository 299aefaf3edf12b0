/**
 * Budgets (docs/budgets.md), through the server on SQLite and on PostgreSQL with the scripted agent:
 * a run past `max_cost_usd` or `max_turns` is stopped and FAILED `budget_exceeded`; a run's budget
 * comes from its request, its environment or its team, within the team's ceiling; a child draws on
 * its parent's budget; the team's spend by day adds up what its runs reported.
 */
import { describe, expect, it } from "vitest"
import { call, type DatabaseKind, makeTeam, suiteServer, waitForRun } from "./harness.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

/** Long enough that a run still going at the end of a test has not been stopped. */
const FOREVER = "@sleep 600000"

describe.each<DatabaseKind>(["sqlite", "postgres"])("budgets (%s)", (kind) => {
  // A short lease: an execution reads what its run's children hold at each renewal (a third of it).
  const server = suiteServer(kind, {}, { concurrency: 4, leaseSeconds: 3 })

  const create = async (token: string, body: Json) => {
    const reply = await call(server(), "POST", "/api/v1/agent/runs", { token, body })
    expect(reply.status).toBe(200)
    return reply.body.run_id as string
  }
  const ended = (token: string, runId: string) => waitForRun(server(), token, runId, undefined, 60_000)

  it("stops the agent of a run that spends past max_cost_usd: FAILED budget_exceeded naming it", async () => {
    const { tokens } = await makeTeam(server(), `cost-${kind}`)
    const runId = await create(tokens.member, { prompt: ["@spend 0.6", "@spend 0.5", FOREVER].join("\n"), config: { max_cost_usd: 1 } })
    const run = await ended(tokens.member, runId)
    expect(run.state).toBe("FAILED")
    expect(run.status_message).toMatchObject({ error_code: "budget_exceeded", retryable: false })
    expect(run.status_message.message).toContain("config.max_cost_usd")
    expect(run.request_usage.inference_cost).toBeCloseTo(1.1)
    expect(run.agent_config.max_cost_usd).toBe(1)
  }, 90_000)

  it("stops the agent at the turn past max_turns", async () => {
    const { tokens } = await makeTeam(server(), `turns-${kind}`)
    const within = await create(tokens.member, { prompt: "@tool a {}\n@tool b {}", config: { max_turns: 2 } })
    expect((await ended(tokens.member, within)).state).toBe("SUCCEEDED")
    const past = await create(tokens.member, { prompt: ["@tool a {}", "@tool b {}", "@tool c {}", FOREVER].join("\n"), config: { max_turns: 2 } })
    const run = await ended(tokens.member, past)
    expect(run.state).toBe("FAILED")
    expect(run.status_message).toMatchObject({ error_code: "budget_exceeded" })
    expect(run.status_message.message).toContain("config.max_turns")
  }, 90_000)

  it("takes a run's budget from its request, its environment or its team, within the team's ceiling", async () => {
    const { tokens } = await makeTeam(server(), `team-budgets-${kind}`)
    const budgets = { default_max_cost_usd: 2, max_cost_usd: 5, max_turns: 50 }
    // Only the team's admins set them; anyone in the team reads them.
    expect((await call(server(), "PUT", "/api/v1/agent/team/budgets", { token: tokens.member, body: budgets })).status).toBe(403)
    const above = await call(server(), "PUT", "/api/v1/agent/team/budgets", { token: tokens.admin, body: { default_max_turns: 60, max_turns: 50 } })
    expect(above.status).toBe(400)
    expect(above.body.error).toContain("default_max_turns")
    const set = await call(server(), "PUT", "/api/v1/agent/team/budgets", { token: tokens.admin, body: budgets })
    expect(set.status).toBe(200)
    expect((await call(server(), "GET", "/api/v1/agent/team/budgets", { token: tokens.viewer })).body).toEqual(budgets)

    const config = async (runConfig: Json) => {
      const runId = await create(tokens.member, { prompt: "@say hi", ...(runConfig === undefined ? {} : { config: runConfig }) })
      return (await call(server(), "GET", `/api/v1/agent/runs/${runId}`, { token: tokens.member })).body.agent_config
    }
    expect(await config(undefined)).toMatchObject({ max_cost_usd: 2, max_turns: 50 })
    expect(await config({ max_cost_usd: 4, max_turns: 10 })).toMatchObject({ max_cost_usd: 4, max_turns: 10 })
    expect(await config({ max_cost_usd: 40, max_turns: 1000 })).toMatchObject({ max_cost_usd: 5, max_turns: 50 })
    const env = await call(server(), "POST", "/api/v1/agent/environments", {
      token: tokens.admin,
      body: { config: { name: `budgeted-${kind}`, max_cost_usd: 3, max_turns: 20 }, team: true }
    })
    expect(env.status).toBe(201)
    expect(await config({ environment_id: env.body.uid })).toMatchObject({ max_cost_usd: 3, max_turns: 20 })
    // A value out of range is a 400 naming the field; nothing is created.
    const bad = await call(server(), "POST", "/api/v1/agent/runs", { token: tokens.member, body: { prompt: "x", config: { max_cost_usd: -1 } } })
    expect(bad.status).toBe(400)
    expect(bad.body.error).toContain("max_cost_usd")
  }, 90_000)

  it("gives a child what its parent has left, and refuses one when nothing is", async () => {
    const { tokens } = await makeTeam(server(), `children-${kind}`)
    const parent = await create(tokens.member, { prompt: "@spend 0.4", config: { max_cost_usd: 1 } })
    expect((await ended(tokens.member, parent)).state).toBe("SUCCEEDED")
    const first = await create(tokens.member, { prompt: "@spend 0.5", parent_run_id: parent, config: { max_cost_usd: 10 } })
    const child = await ended(tokens.member, first)
    expect(child.agent_config.max_cost_usd).toBeCloseTo(0.6)
    expect(child.state).toBe("SUCCEEDED")
    // The parent's budget now has 0.1 left: its next child gets that much, and is stopped past it.
    const second = await create(tokens.member, { prompt: `@spend 0.2\n${FOREVER}`, parent_run_id: parent })
    const stopped = await ended(tokens.member, second)
    expect(stopped.agent_config.max_cost_usd).toBeCloseTo(0.1)
    expect(stopped.status_message).toMatchObject({ error_code: "budget_exceeded" })
    // Everything is spent now (0.4 + 0.5 + 0.2): no more children.
    const refused = await call(server(), "POST", "/api/v1/agent/runs", { token: tokens.member, body: { prompt: "x", parent_run_id: parent } })
    expect(refused.status).toBe(409)
    expect(refused.body.error).toContain("parent_run_id")

    // The team's spend today is what its runs reported.
    const spend = await call(server(), "GET", "/api/v1/agent/team/spend?days=7", { token: tokens.viewer })
    expect(spend.status).toBe(200)
    // (Its runs were created today, or yesterday and today around midnight UTC.)
    const days = spend.body.days as Array<Json>
    expect(days.map((d) => d.day)).toContain((await call(server(), "GET", `/api/v1/agent/runs/${second}`, { token: tokens.member })).body.created_at.slice(0, 10))
    expect(days.reduce((sum, d) => sum + d.runs, 0)).toBe(3)
    expect(days.reduce((sum, d) => sum + d.cost_usd, 0)).toBeCloseTo(1.1)
    expect(spend.body.total_cost_usd).toBeCloseTo(1.1)
    expect((await call(server(), "GET", "/api/v1/agent/team/spend?days=91", { token: tokens.viewer })).status).toBe(400)
  }, 120_000)

  it("keeps an agent's runs within its budget: a live child holds its share; no other parent, no schedules, no follow-ups elsewhere", async () => {
    const { tokens } = await makeTeam(server(), `agents-${kind}`)
    const elsewhere = await create(tokens.member, { prompt: "@say another run" })
    await ended(tokens.member, elsewhere)
    const prompt = [
      // The first child gets the whole dollar and holds it while it runs: nothing is left for a second.
      "@spawn @sleep 3000",
      '@api POST /agent/runs {"prompt":"a second child"}',
      // Runs under another parent, or schedules, would spend outside the budget.
      `@api POST /agent/runs {"prompt":"elsewhere","parent_run_id":"${elsewhere}"}`,
      '@api POST /agent/schedules {"name":"escape","cron_schedule":"0 * * * *","prompt":"x","enabled":true}',
      `@api POST /agent/runs/${elsewhere}/followups {"message":"spend for me"}`
    ].join("\n")
    const runId = await create(tokens.member, { prompt, config: { max_cost_usd: 1 } })
    expect((await ended(tokens.member, runId)).state).toBe("SUCCEEDED")
    const said = JSON.stringify((await call(server(), "GET", `/api/v1/agent/runs/${runId}/conversation`, { token: tokens.member })).body)
    expect(said).toMatch(/spawned: [0-9a-f-]{36}/)
    expect(said).toMatch(/api: POST \/agent\/runs -> 409 .{0,400}has spent its budget/)
    expect(said).toMatch(/api: POST \/agent\/runs -> 403 .{0,400}parent_run_id/)
    expect(said).toMatch(/api: POST \/agent\/schedules -> 403 .{0,400}config.max_cost_usd/)
    expect(said).toMatch(/api: POST \/agent\/runs\/[0-9a-f-]{36}\/followups -> 403 .{0,400}outside the budget/)
    const children = await call(server(), "GET", `/api/v1/agent/runs?ancestor_run_id=${runId}`, { token: tokens.member })
    expect(children.body.runs).toHaveLength(1)
    expect(children.body.runs[0].agent_config.max_cost_usd).toBe(1)
  }, 120_000)

  it("carves children created at the same moment one after the other: together they never get more than the parent has", async () => {
    const { tokens } = await makeTeam(server(), `burst-${kind}`)
    const parent = await create(tokens.member, { prompt: "@spend 0.2", config: { max_cost_usd: 1 } })
    expect((await ended(tokens.member, parent)).state).toBe("SUCCEEDED")
    const replies = await Promise.all(Array.from({ length: 12 }, () =>
      call(server(), "POST", "/api/v1/agent/runs", { token: tokens.member, body: { prompt: `@sleep 600000`, parent_run_id: parent, config: { max_cost_usd: 0.3 } } })))
    const made = replies.filter((r) => r.status === 200)
    for (const refused of replies.filter((r) => r.status !== 200)) expect(refused.status).toBe(409)
    const children = (await call(server(), "GET", `/api/v1/agent/runs?ancestor_run_id=${parent}`, { token: tokens.member })).body.runs as Array<Json>
    expect(children).toHaveLength(made.length)
    // 0.8 left: two children of 0.3 and one of what remained.
    const shares = children.map((c) => c.agent_config.max_cost_usd as number)
    expect(shares.reduce((sum, share) => sum + share, 0)).toBeLessThanOrEqual(0.8 + 1e-9)
    expect(made.length).toBeGreaterThanOrEqual(1)
    for (const child of children) await call(server(), "POST", `/api/v1/agent/runs/${child.run_id}/cancel`, { token: tokens.member })
  }, 120_000)

  it("counts against a running parent what the children it created meanwhile hold", async () => {
    const { tokens } = await makeTeam(server(), `meanwhile-${kind}`)
    // The child takes the whole dollar while it runs; after a renewal the parent has nothing left.
    const runId = await create(tokens.member, { prompt: ["@spawn @sleep 600000", "@sleep 4000", "@spend 0.01", FOREVER].join("\n"), config: { max_cost_usd: 1 } })
    const run = await ended(tokens.member, runId)
    expect(run.state).toBe("FAILED")
    expect(run.status_message).toMatchObject({ error_code: "budget_exceeded" })
    expect(run.status_message.message).toContain("$1.01")
    const children = (await call(server(), "GET", `/api/v1/agent/runs?ancestor_run_id=${runId}`, { token: tokens.member })).body.runs as Array<Json>
    expect(children).toHaveLength(1)
    expect((await call(server(), "POST", `/api/v1/agent/runs/${children[0].run_id}/cancel`, { token: tokens.member })).status).toBe(200)
  }, 120_000)
})
