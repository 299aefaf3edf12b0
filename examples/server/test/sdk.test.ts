/**
 * The published client `oz-agent-sdk` (1.0.0-alpha.8) against the built server as a process
 * (SQLite), as docs/reference/api.md promises: `new OzAPI({ apiKey, baseURL: "<url>/api/v1" })` and
 * `agent.run`, `agent.list`, `agent.runs.{list,retrieve,cancel}` (the state filter as an array,
 * sent as repeated keys) and every `agent.schedules` call, with the field values they return; and
 * the SDK's error classes and retry decisions, which follow our status codes and `x-should-retry`.
 * The team and tokens come from the admin API with the configured `AGENT_RUNS_ADMIN_TOKEN`.
 */
import OzAPI, { AuthenticationError, BadRequestError, ConflictError, NotFoundError } from "oz-agent-sdk"
import { randomBytes } from "node:crypto"
import { describe, expect, it } from "vitest"
import { suiteProcess } from "./lifecycle.js"
import { call } from "./process.js"

const UID22 = /^[A-Za-z0-9]{22}$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

const adminToken = `ar_${randomBytes(32).toString("base64url")}`
const server = suiteProcess({ AGENT_RUNS_ADMIN_TOKEN: adminToken, AGENT_RUNS_CONCURRENCY: "0" })

/** A team with a member (and its SDK client); `maxConcurrentRuns` lowers the team's capacity. */
const team = async (name: string, maxConcurrentRuns?: number) => {
  const admin = { token: adminToken }
  const created = await call(server(), "POST", "/api/v1/admin/teams", { ...admin, body: { name } })
  expect(created.status).toBe(201)
  if (maxConcurrentRuns !== undefined) {
    const patched = await call(server(), "PATCH", `/api/v1/admin/teams/${created.body.uid}`, {
      ...admin,
      body: { max_concurrent_runs: maxConcurrentRuns }
    })
    expect(patched.status).toBe(200)
  }
  const principal = await call(server(), "POST", "/api/v1/admin/principals", {
    ...admin,
    body: { type: "user", display_name: `${name} member`, memberships: [{ team_uid: created.body.uid, role: "member" }] }
  })
  expect(principal.status).toBe(201)
  const token = await call(server(), "POST", `/api/v1/admin/principals/${principal.body.uid}/tokens`, { ...admin, body: {} })
  expect(token.status).toBe(201)
  const client = new OzAPI({ apiKey: token.body.token, baseURL: `${server().url}/api/v1`, maxRetries: 0 })
  return { uid: created.body.uid as string, principal: principal.body.uid as string, token: token.body.token as string, client }
}

/** The rejection of `promise` (fails the test if it resolves). */
const rejection = async (promise: Promise<unknown>): Promise<unknown> => {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error("expected the call to fail")
}

describe("oz-agent-sdk against the built server", () => {
  it("agent.run creates runs; agent.runs.retrieve returns them with their fields", async () => {
    const { client, principal, uid } = await team("SDK runs")
    const response = await client.agent.run({
      prompt: "Fix the bug in auth.go\nIt panics on empty input",
      title: "Auth fix",
      config: { model_id: "model-x", name: "bug-fix-config", base_prompt: "Be brief." },
      team: true
    })
    expect(response.run_id).toMatch(UUID)
    expect(response.task_id).toBe(response.run_id)
    expect(response.state).toBe("QUEUED")

    const item = await client.agent.runs.retrieve(response.run_id)
    expect(item).toMatchObject({
      run_id: response.run_id,
      task_id: response.run_id,
      title: "Auth fix",
      prompt: "Fix the bug in auth.go\nIt panics on empty input",
      state: "QUEUED",
      source: "API",
      agent_config: { model_id: "model-x", name: "bug-fix-config", base_prompt: "Be brief." },
      creator: { type: "user", uid: principal, display_name: "SDK runs member" },
      scope: { type: "Team", uid },
      artifacts: [],
      is_sandbox_running: false,
      request_usage: { inference_cost: 0, compute_cost: 0 }
    })
    expect(item.created_at).toMatch(TIMESTAMP)
    expect(item.updated_at).toMatch(TIMESTAMP)
    expect(item.started_at).toBeNull()
    // What is not known yet is omitted where the SDK's type is optional but not nullable; no
    // field the SDK declares non-nullable is ever null.
    for (const key of ["session_id", "session_link", "agent_skill", "schedule", "status_message"]) {
      expect(item, key).not.toHaveProperty(key)
    }
    const listed = await client.agent.runs.list({})
    for (const run of listed.runs) {
      for (const key of ["session_id", "session_link", "conversation_id", "agent_skill", "schedule", "status_message"]) {
        expect((run as unknown as Record<string, unknown>)[key], key).not.toBeNull()
      }
    }
    // Without a title, the first line of the prompt; without `team`, the caller's own scope.
    const plain = await client.agent.run({ prompt: "Write the changelog\nfor 1.2" })
    const plainItem = await client.agent.runs.retrieve(plain.run_id)
    expect(plainItem).toMatchObject({ title: "Write the changelog", scope: { type: "User", uid: principal } })
  })

  it("agent.runs.list filters by states given as an array (repeated keys) and pages with the cursor", async () => {
    const { client } = await team("SDK list")
    const ids: Array<string> = []
    for (const prompt of ["one", "two", "three"]) ids.push((await client.agent.run({ prompt })).run_id)
    const [one, two, three] = ids as [string, string, string]
    expect(await client.agent.runs.cancel(two)).toBe(two)

    // The default order is updated_at, newest first (the cancel updated `two` last).
    const all = await client.agent.runs.list()
    expect(all.runs.map((r) => r.run_id)).toEqual([two, three, one])
    expect(all.page_info).toEqual({ has_next_page: false })

    const queued = await client.agent.runs.list({ state: ["QUEUED", "FAILED"] })
    expect(new Set(queued.runs.map((r) => r.run_id))).toEqual(new Set([one, three]))
    expect(queued.runs.every((r) => r.state === "QUEUED")).toBe(true)
    const ended = await client.agent.runs.list({ state: ["CANCELLED", "SUCCEEDED"] })
    expect(ended.runs.map((r) => [r.run_id, r.state])).toEqual([[two, "CANCELLED"]])
    const single = await client.agent.runs.list({ state: ["CANCELLED"] })
    expect(single.runs.map((r) => r.run_id)).toEqual([two])

    const first = await client.agent.runs.list({ limit: 2, state: ["QUEUED", "CANCELLED"] })
    expect(first.runs).toHaveLength(2)
    expect(first.page_info.has_next_page).toBe(true)
    expect(typeof first.page_info.next_cursor).toBe("string")
    const second = await client.agent.runs.list({ limit: 2, state: ["QUEUED", "CANCELLED"], cursor: first.page_info.next_cursor! })
    expect(second.runs).toHaveLength(1)
    expect(second.page_info.has_next_page).toBe(false)
    expect(new Set([...first.runs, ...second.runs].map((r) => r.run_id))).toEqual(new Set(ids))

    const bySearch = await client.agent.runs.list({ q: "three" })
    expect(bySearch.runs.map((r) => r.run_id)).toEqual([three])
  })

  it("agent.runs.cancel returns the run id; errors arrive as the SDK's error classes", async () => {
    const { client, token } = await team("SDK cancel")
    const { run_id } = await client.agent.run({ prompt: "cancel me" })
    const cancelled = await client.agent.runs.cancel(run_id)
    expect(cancelled).toBe(run_id)
    expect((await client.agent.runs.retrieve(run_id)).state).toBe("CANCELLED")

    const again = await rejection(client.agent.runs.cancel(run_id))
    expect(again).toBeInstanceOf(BadRequestError)
    expect(again).toMatchObject({ status: 400, error: { error_code: "invalid_request", retryable: false } })

    const unknown = run_id.slice(0, -4) + (run_id.endsWith("0000") ? "ffff" : "0000")
    const missing = await rejection(client.agent.runs.retrieve(unknown))
    expect(missing).toBeInstanceOf(NotFoundError)
    expect(missing).toMatchObject({ status: 404, error: { error_code: "resource_not_found" } })

    const invalid = await rejection(client.agent.run({ prompt: "" }))
    expect(invalid).toBeInstanceOf(BadRequestError)
    expect((invalid as BadRequestError).error).toMatchObject({ error_code: "invalid_request" })
    expect(String((invalid as { error: { error: string } }).error.error)).toMatch(/^prompt/)

    const stranger = new OzAPI({ apiKey: `${token.slice(0, -2)}zz`, baseURL: `${server().url}/api/v1`, maxRetries: 0 })
    const refused = await rejection(stranger.agent.runs.list())
    expect(refused).toBeInstanceOf(AuthenticationError)
    expect(refused).toMatchObject({ status: 401, error: { error_code: "authentication_required" } })
  })

  it("retries what the server marks retryable (x-should-retry) and nothing else", async () => {
    const { client, token } = await team("SDK retries", 1)
    await client.agent.run({ prompt: "holds the only slot" })
    const waiting = await client.agent.run({ prompt: "waits for capacity" })
    expect(waiting.state).toBe("PENDING")

    let requests = 0
    const counting = new OzAPI({
      apiKey: token,
      baseURL: `${server().url}/api/v1`,
      maxRetries: 2,
      fetch: (input, init) => {
        requests++
        return fetch(input, init)
      }
    })
    // Cancelling a PENDING run: 409 with retryable: true in the body (the specification), but
    // final for the SDK (x-should-retry: false): one request, not three.
    const conflict = await rejection(counting.agent.runs.cancel(waiting.run_id))
    expect(conflict).toBeInstanceOf(ConflictError)
    expect((conflict as ConflictError).error).toMatchObject({ error_code: "conflict", retryable: true })
    expect((conflict as ConflictError).headers.get("x-should-retry")).toBe("false")
    expect(requests).toBe(1)
    // A 404 says x-should-retry: false: one request.
    requests = 0
    const unknown = waiting.run_id.slice(0, -4) + (waiting.run_id.endsWith("0000") ? "ffff" : "0000")
    expect(await rejection(counting.agent.runs.cancel(unknown))).toBeInstanceOf(NotFoundError)
    expect(requests).toBe(1)
  })

  it("agent.list lists the team's agents (none without environments)", async () => {
    const { client } = await team("SDK agents")
    expect(await client.agent.list()).toEqual({ agents: [] })
    expect(await client.agent.list({ sort_by: "last_run", refresh: true })).toEqual({ agents: [] })
  })

  it("the 400s the specification demands name the missing field and what to send (a skill run without prompt, a schedule without enabled)", async () => {
    const { client } = await team("SDK missing fields")
    const skillOnly = await rejection(client.agent.run({ skill: "acme/tools:skills/review/SKILL.md" }))
    expect(skillOnly).toBeInstanceOf(BadRequestError)
    expect((skillOnly as BadRequestError).error).toMatchObject({
      error_code: "invalid_request",
      error: "prompt: is required, also when a skill is given: send the task as prompt (the skill gives the agent its base prompt)"
    })
    const body = { name: "No enabled", cron_schedule: "0 3 * * *", prompt: "p" }
    // A schedule without an environment omits it (the SDK's type is not nullable).
    expect(await client.agent.schedules.create({ ...body, name: "No environment", enabled: false })).not.toHaveProperty("environment")
    const created = await rejection(client.agent.schedules.create(body as Parameters<typeof client.agent.schedules.create>[0]))
    expect(created).toBeInstanceOf(BadRequestError)
    expect((created as BadRequestError).error).toMatchObject({
      error: "enabled: is required: send true to run the schedule on its cron, or false to create it paused"
    })
    const schedule = await client.agent.schedules.create({ ...body, enabled: true })
    const updated = await rejection(
      client.agent.schedules.update(schedule.id, body as Parameters<typeof client.agent.schedules.update>[1])
    )
    expect((updated as BadRequestError).error).toMatchObject({
      error: "enabled: is required (a PUT replaces every field): send true to keep the schedule running on its cron, or false to pause it"
    })
  })

  it("agent.schedules: create, list, retrieve, update, pause, resume and delete", async () => {
    const { client, principal, uid } = await team("SDK schedules")
    const nightly = await client.agent.schedules.create({
      name: "Nightly review",
      cron_schedule: "0 3 * * *",
      prompt: "Review yesterday's pull requests",
      enabled: true,
      agent_config: { model_id: "model-y" },
      team: true
    })
    expect(nightly.id).toMatch(UID22)
    expect(nightly).toMatchObject({
      name: "Nightly review",
      cron_schedule: "0 3 * * *",
      prompt: "Review yesterday's pull requests",
      enabled: true,
      agent_config: { model_id: "model-y" },
      created_by: { type: "user", uid: principal },
      updated_by: { type: "user", uid: principal },
      scope: { type: "Team", uid },
      history: { last_ran: null },
      last_spawn_error: null
    })
    expect(nightly).toMatchObject({ timezone: "UTC" })
    expect(nightly.created_at).toMatch(TIMESTAMP)
    const nextRun = nightly.history!.next_run!
    expect(nextRun).toMatch(/T03:00:00\.000Z$/)
    expect(Date.parse(nextRun)).toBeGreaterThan(Date.now())
    expect(Date.parse(nextRun) - Date.now()).toBeLessThanOrEqual(24 * 3600_000)

    const morning = await client.agent.schedules.create({
      name: "A morning check",
      cron_schedule: "30 8 * * 1-5",
      prompt: "Check the dashboards",
      enabled: false
    })
    expect(morning).toMatchObject({ enabled: false, scope: { type: "User", uid: principal }, history: { next_run: null } })

    const listed = await client.agent.schedules.list()
    expect(listed.schedules.map((s) => s.name)).toEqual(["A morning check", "Nightly review"])
    expect(await client.agent.schedules.retrieve(nightly.id)).toEqual(nightly)

    const updated = await client.agent.schedules.update(nightly.id, {
      name: "Nightly review (EU)",
      cron_schedule: "15 2 * * *",
      prompt: "Review yesterday's pull requests in the EU repositories",
      enabled: true
    })
    expect(updated).toMatchObject({
      id: nightly.id,
      name: "Nightly review (EU)",
      cron_schedule: "15 2 * * *",
      prompt: "Review yesterday's pull requests in the EU repositories",
      enabled: true,
      agent_config: { model_id: "model-y" },
      created_at: nightly.created_at
    })
    expect(updated.history!.next_run).toMatch(/T02:15:00\.000Z$/)
    expect(Date.parse(updated.updated_at)).toBeGreaterThanOrEqual(Date.parse(nightly.updated_at))

    const paused = await client.agent.schedules.pause(nightly.id)
    expect(paused).toMatchObject({ id: nightly.id, enabled: false, history: { next_run: null } })
    expect((await client.agent.schedules.retrieve(nightly.id)).enabled).toBe(false)
    const resumed = await client.agent.schedules.resume(nightly.id)
    expect(resumed).toMatchObject({ id: nightly.id, enabled: true })
    expect(resumed.history!.next_run).toMatch(/T02:15:00\.000Z$/)

    expect(await client.agent.schedules.delete(nightly.id)).toEqual({ success: true })
    expect(await rejection(client.agent.schedules.retrieve(nightly.id))).toBeInstanceOf(NotFoundError)
    expect((await client.agent.schedules.list()).schedules.map((s) => s.id)).toEqual([morning.id])

    const invalid = await rejection(
      client.agent.schedules.create({ name: "bad", cron_schedule: "61 * * * *", prompt: "x", enabled: true })
    )
    expect(invalid).toBeInstanceOf(BadRequestError)
    expect(String((invalid as { error: { error: string } }).error.error)).toMatch(/^cron_schedule/)
  })
})
