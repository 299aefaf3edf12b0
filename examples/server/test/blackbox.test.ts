/**
 * Black-box tests of the built server (`node examples/server/dist/main.js`) as a child process, on
 * SQLite (the default: a file in the data directory) and on a fresh PostgreSQL database
 * (`AGENT_RUNS_DATABASE_URL`), driven over HTTP only. Per database, in order, on one data
 * directory: the first start without `AGENT_RUNS_ADMIN_TOKEN` generates a token, prints it once and
 * writes `<data dir>/admin-token` (0600); that token drives the admin API (team, principal, token)
 * and the member's token drives runs (create, list, get, cancel); the server stops on SIGTERM; a
 * restart prints no new token, both tokens still work and the data survived; a later start with
 * `AGENT_RUNS_ADMIN_TOKEN` makes that token an instance admin too, without echoing it.
 * The tests of a database share its process, so they run in order.
 */
import { Effect, Exit, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest"
import { lifecycle } from "./lifecycle.js"
import { assertBuilt, call, type ServerProcess, spawnServer, tempDataDir } from "./process.js"

const TOKEN = /ar_[A-Za-z0-9_-]{20,}/g
const UID22 = /^[A-Za-z0-9]{22}$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/
/** The first line of the start-up banner, printed once start-up work is done. */
const BANNER = /Agent Runs is serving/

const tokensIn = (text: string) => text.match(TOKEN) ?? []

describe.each(["sqlite", "postgres"] as const)("the built server as a process (%s)", (kind) => {
  // Runs stay QUEUED here (an API-only server): these tests are about the API, not execution.
  const life = lifecycle(kind, { AGENT_RUNS_CONCURRENCY: "0" })
  /** What the tests learn, in order. */
  const known = {
    server: undefined as ServerProcess | undefined,
    adminToken: "",
    memberToken: "",
    teamUid: "",
    principalUid: "",
    runIds: [] as Array<string>,
    cancelled: ""
  }
  const server = () => known.server!

  it("first start without AGENT_RUNS_ADMIN_TOKEN: generates a token, prints it once and writes admin-token (0600)", async () => {
    known.server = await life.start()
    const printed = await Effect.runPromise(server().waitForOutput(TOKEN))
    await Effect.runPromise(server().waitForOutput(BANNER))
    const file = join(life.dataDir, "admin-token")
    expect(readFileSync(file, "utf8").trim()).toBe(printed)
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(tokensIn(server().stdout())).toEqual([printed])
    expect(server().stderr()).not.toContain(printed)
    known.adminToken = printed
    // The banner names the web dashboard, which the bundled server serves (npm run build built it).
    expect(server().stdout()).toMatch(/ {2}Dashboard: http:\/\/\S+\/app \(sign in with the token\)/)
    const dashboard = await fetch(`${server().url}/app`)
    expect(dashboard.status).toBe(200)
    expect(await dashboard.text()).toContain(`<base href="/app/">`)

    const teams = await call(server(), "GET", "/api/v1/admin/teams", { token: printed })
    expect(teams.status).toBe(200)
    expect(Array.isArray(teams.body.teams)).toBe(true)
    const wrong = await call(server(), "GET", "/api/v1/admin/teams", { token: `${printed.slice(0, -1)}x` })
    expect(wrong.status).toBe(401)
  })

  it("creates a team, a principal and its token through the admin API", async () => {
    const team = await call(server(), "POST", "/api/v1/admin/teams", { token: known.adminToken, body: { name: "Black box" } })
    expect(team.status).toBe(201)
    expect(team.body).toMatchObject({
      name: "Black box",
      max_concurrent_runs: 8,
      features: { metadata_filtering: true, scheduled_agents: true }
    })
    expect(team.body.uid).toMatch(UID22)
    const principal = await call(server(), "POST", "/api/v1/admin/principals", {
      token: known.adminToken,
      body: { type: "user", display_name: "Ada", memberships: [{ team_uid: team.body.uid, role: "member" }] }
    })
    expect(principal.status).toBe(201)
    expect(principal.body).toMatchObject({
      type: "user",
      display_name: "Ada",
      instance_admin: false,
      memberships: [{ team_uid: team.body.uid, role: "member" }]
    })
    const token = await call(server(), "POST", `/api/v1/admin/principals/${principal.body.uid}/tokens`, {
      token: known.adminToken,
      body: { name: "black box" }
    })
    expect(token.status).toBe(201)
    expect(token.body.token).toMatch(/^ar_/)
    expect(typeof token.body.token_id).toBe("string")
    // A member is no instance administrator.
    expect((await call(server(), "GET", "/api/v1/admin/teams", { token: token.body.token })).status).toBe(403)
    Object.assign(known, { memberToken: token.body.token, teamUid: team.body.uid, principalUid: principal.body.uid })
  })

  it("creates, lists, gets and cancels runs over HTTP", async () => {
    const token = known.memberToken
    for (const prompt of ["Fix the login bug\nIt fails on Safari", "Write the release notes", "Bump the dependencies"]) {
      const created = await call(server(), "POST", "/api/v1/agent/runs", { token, body: { prompt, metadata: { suite: "blackbox" } } })
      expect(created.status).toBe(200)
      expect(created.body).toMatchObject({ state: "QUEUED", at_capacity: false })
      expect(created.body.run_id).toMatch(UUID)
      expect(created.body.task_id).toBe(created.body.run_id)
      known.runIds.push(created.body.run_id)
    }
    const [first, second, third] = known.runIds as [string, string, string]

    const list = await call(server(), "GET", "/api/v1/agent/runs?sort_by=created_at", { token })
    expect(list.status).toBe(200)
    expect(list.body.runs.map((r: { run_id: string }) => r.run_id)).toEqual([third, second, first])
    expect(list.body.page_info.has_next_page).toBe(false)
    const page = await call(server(), "GET", "/api/v1/agent/runs?sort_by=created_at&limit=2", { token })
    expect(page.body.runs.map((r: { run_id: string }) => r.run_id)).toEqual([third, second])
    expect(page.body.page_info.has_next_page).toBe(true)
    const rest = await call(
      server(),
      "GET",
      `/api/v1/agent/runs?sort_by=created_at&limit=2&cursor=${encodeURIComponent(page.body.page_info.next_cursor)}`,
      { token }
    )
    expect(rest.body.runs.map((r: { run_id: string }) => r.run_id)).toEqual([first])
    expect(rest.body.page_info.has_next_page).toBe(false)

    const item = await call(server(), "GET", `/api/v1/agent/runs/${first}`, { token })
    expect(item.status).toBe(200)
    expect(item.body).toMatchObject({
      run_id: first,
      task_id: first,
      title: "Fix the login bug",
      prompt: "Fix the login bug\nIt fails on Safari",
      state: "QUEUED",
      source: "API",
      execution_location: "REMOTE",
      metadata: { suite: "blackbox" },
      creator: { type: "user", uid: known.principalUid, display_name: "Ada" },
      scope: { type: "User", uid: known.principalUid },
      attempt: 1,
      execution_count: 1
    })
    expect(item.body.created_at).toMatch(TIMESTAMP)

    const cancelled = await call(server(), "POST", `/api/v1/agent/runs/${second}/cancel`, { token })
    expect(cancelled).toMatchObject({ status: 200, body: second })
    expect((await call(server(), "GET", `/api/v1/agent/runs/${second}`, { token })).body.state).toBe("CANCELLED")
    const again = await call(server(), "POST", `/api/v1/agent/runs/${second}/cancel`, { token })
    expect(again.status).toBe(400)
    expect(again.headers.get("content-type")).toBe("application/problem+json")
    expect(again.body).toMatchObject({ status: 400, error_code: "invalid_request", retryable: false })
    known.cancelled = second

    const byState = await call(server(), "GET", "/api/v1/agent/runs?sort_by=created_at&state=CANCELLED", { token })
    expect(byState.body.runs.map((r: { run_id: string }) => r.run_id)).toEqual([second])
    const live = await call(server(), "GET", "/api/v1/agent/runs?sort_by=created_at&state=QUEUED&state=FAILED", { token })
    expect(live.body.runs.map((r: { run_id: string }) => r.run_id)).toEqual([third, first])

    // A well-formed id of no run, and no token at all.
    const unknown = first.slice(0, -4) + (first.endsWith("0000") ? "ffff" : "0000")
    const missing = await call(server(), "GET", `/api/v1/agent/runs/${unknown}`, { token })
    expect(missing.status).toBe(404)
    expect(missing.body.error_code).toBe("resource_not_found")
    expect((await call(server(), "GET", "/api/v1/agent/runs")).status).toBe(401)
  })

  it("stops on SIGTERM; a restart prints no new token, the tokens still work and the data survived", async () => {
    expect(tokensIn(server().stdout())).toEqual([known.adminToken])
    const exited = await life.stop()
    expect(exited).toEqual({ code: 0, signal: null })

    known.server = await life.start()
    await Effect.runPromise(server().waitForOutput(BANNER))
    expect(tokensIn(server().stdout())).toEqual([])
    expect(readFileSync(join(life.dataDir, "admin-token"), "utf8").trim()).toBe(known.adminToken)

    const teams = await call(server(), "GET", "/api/v1/admin/teams", { token: known.adminToken })
    expect(teams.status).toBe(200)
    expect(teams.body.teams.map((t: { uid: string }) => t.uid)).toContain(known.teamUid)
    const list = await call(server(), "GET", "/api/v1/agent/runs?sort_by=created_at", { token: known.memberToken })
    expect(list.status).toBe(200)
    expect(list.body.runs.map((r: { run_id: string; state: string }) => [r.run_id, r.state])).toEqual(
      [...known.runIds].reverse().map((id) => [id, id === known.cancelled ? "CANCELLED" : "QUEUED"])
    )
    const timeline = await call(server(), "GET", `/api/v1/agent/runs/${known.cancelled}/timeline`, {
      token: known.memberToken
    })
    expect(timeline.body.events.map((e: { event_type: string }) => e.event_type)).toEqual([
      "run_created",
      "run_pending",
      "run_queued",
      "run_cancelled"
    ])
    const created = await call(server(), "POST", "/api/v1/agent/runs", { token: known.memberToken, body: { prompt: "after restart" } })
    expect(created.body.state).toBe("QUEUED")
    known.runIds.push(created.body.run_id)
  })

  it("a later start with AGENT_RUNS_ADMIN_TOKEN makes that token an instance admin, without printing it", async () => {
    await life.stop()
    const configured = `ar_${randomBytes(32).toString("base64url")}`
    known.server = await life.start({ AGENT_RUNS_ADMIN_TOKEN: configured })
    await Effect.runPromise(server().waitForOutput(BANNER))
    expect(server().stdout()).not.toContain(configured)
    expect(tokensIn(server().stdout())).toEqual([])
    const teams = await call(server(), "GET", "/api/v1/admin/teams", { token: configured })
    expect(teams.status).toBe(200)
    expect(teams.body.teams.map((t: { uid: string }) => t.uid)).toContain(known.teamUid)
    expect(readFileSync(join(life.dataDir, "admin-token"), "utf8").trim()).toBe(known.adminToken)
    const runs = await call(server(), "GET", "/api/v1/agent/runs", { token: known.memberToken })
    expect(runs.body.runs).toHaveLength(known.runIds.length)
    expect((await life.stop()).code).toBe(0)
  })
})

describe("the built server as a process, first start with AGENT_RUNS_ADMIN_TOKEN", () => {
  const scope = Effect.runSync(Scope.make())
  const configured = `ar_${randomBytes(32).toString("base64url")}`
  let server: ServerProcess
  beforeAll(async () => {
    assertBuilt(inject("serverBuild"))
    server = await Effect.runPromise(
      Effect.flatMap(tempDataDir, (dataDir) => spawnServer({ dataDir, env: { AGENT_RUNS_ADMIN_TOKEN: configured } })).pipe(
        Scope.extend(scope)
      )
    )
  }, 60_000)
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)), 60_000)

  it("uses the configured token, generates none, writes no admin-token file and never prints it", async () => {
    await Effect.runPromise(server.waitForOutput(BANNER))
    expect(tokensIn(server.stdout())).toEqual([])
    expect(() => statSync(join(server.dataDir, "admin-token"))).toThrow()
    const teams = await call(server, "GET", "/api/v1/admin/teams", { token: configured })
    expect(teams.status).toBe(200)
    expect(teams.body.teams.map((t: { name: string }) => t.name)).toContain("default")
    // The bootstrap admin is an admin of the team "default": it can run there.
    const run = await call(server, "POST", "/api/v1/agent/runs", { token: configured, body: { prompt: "hello" } })
    expect(run.status).toBe(200)
    expect(run.body.state).toBe("QUEUED")
  })
})
