/**
 * The audit log through the bundled server (SQLite): every write endpoint leaves exactly one
 * entry naming who (principal, token, run), what (action, resource, team), from where and how it
 * ended; a refused write leaves one `denied` or `failed` entry; no entry holds a secret value or
 * a token; a team admin reads its team's log and nothing of another team's, an instance
 * administrator reads all, as pages and as exported JSON lines.
 */
import { Effect, Exit, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, makeTeam, startServer, type TestServer, waitForRun } from "./harness.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const USER_AGENT = "audit-test/1.0"
const SECRET_VALUE = "s3cret-value-that-must-never-be-logged"

describe("the audit log", () => {
  const scope = Effect.runSync(Scope.make())
  let server: TestServer
  let team: Awaited<ReturnType<typeof makeTeam>>
  let other: Awaited<ReturnType<typeof makeTeam>>
  const tokens: Array<string> = []

  beforeAll(async () => {
    server = await Effect.runPromise(Scope.extend(startServer("sqlite", {}, { concurrency: 2 }), scope))
    team = await makeTeam(server, "audited")
    other = await makeTeam(server, "elsewhere")
    tokens.push(server.adminToken, ...Object.values(team.tokens), ...Object.values(other.tokens))
  })
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

  const as = (token: string) => (method: string, path: string, body?: unknown) =>
    call(server, method, `/api/v1${path}`, { token, headers: { "user-agent": USER_AGENT }, ...(body === undefined ? {} : { body }) })
  const admin = () => as(team.tokens.admin)
  const root = () => as(server.adminToken)

  /** Every entry of the whole log, newest first (the instance administrator's export, reversed). */
  const everything = async (): Promise<Array<Json>> => {
    const response = await fetch(`${server.url}/api/v1/admin/audit-log/export`, { headers: { authorization: `Bearer ${server.adminToken}` } })
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toContain("application/x-ndjson")
    const text = await response.text()
    return text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l)).reverse()
  }

  /** Does `write`, then answers the entries it added (newest first). */
  const entriesOf = async (write: () => Promise<{ status: number; body: Json }>) => {
    const before = new Set((await everything()).map((e) => e.id))
    const reply = await write()
    const added = (await everything()).filter((e) => !before.has(e.id))
    return { reply, added }
  }

  it("every write endpoint leaves exactly one entry: who, what, which team, from where, succeeded", async () => {
    const ids: Record<string, string> = {}
    const steps: Array<[action: string, write: () => Promise<{ status: number; body: Json }>, resource: () => string | null]> = [
      ["environment.create", () => admin()("POST", "/agent/environments", { team: true, config: { name: "audited" } }), () => ids["env"]!],
      ["environment.update", () => admin()("PUT", `/agent/environments/${ids["env"]}`, { config: { name: "audited", setup_commands: ["true"] } }), () => ids["env"]!],
      ["secret.put", () => admin()("PUT", "/agent/secrets/AUDITED", { value: SECRET_VALUE }), () => "AUDITED"],
      ["schedule.create", () => admin()("POST", "/agent/schedules", { name: "nightly", cron_schedule: "0 3 * * *", prompt: "tidy", enabled: true, team: true }), () => ids["schedule"]!],
      ["schedule.update", () => admin()("PUT", `/agent/schedules/${ids["schedule"]}`, { name: "nightly", cron_schedule: "0 4 * * *", prompt: "tidy", enabled: true }), () => ids["schedule"]!],
      ["schedule.pause", () => admin()("POST", `/agent/schedules/${ids["schedule"]}/pause`), () => ids["schedule"]!],
      ["schedule.resume", () => admin()("POST", `/agent/schedules/${ids["schedule"]}/resume`), () => ids["schedule"]!],
      ["run.create", () => admin()("POST", `/agent/schedules/${ids["schedule"]}/run`), () => ids["scheduledRun"]!],
      ["schedule.delete", () => admin()("DELETE", `/agent/schedules/${ids["schedule"]}`), () => ids["schedule"]!],
      ["webhook.create", () => admin()("POST", "/agent/webhooks", { name: "hook" }), () => ids["webhook"]!],
      ["webhook.update", () => admin()("PATCH", `/agent/webhooks/${ids["webhook"]}`, { name: "renamed hook" }), () => ids["webhook"]!],
      ["webhook.rotate_secret", () => admin()("POST", `/agent/webhooks/${ids["webhook"]}/rotate-secret`), () => ids["webhook"]!],
      ["automation.create", () => admin()("POST", "/agent/automations", { name: "on push", prompt: "review", enabled: true, trigger: { provider: "webhook", event: "received", filter: { webhook_ids: [ids["webhook"]] } } }), () => ids["automation"]!],
      ["automation.update", () => admin()("PUT", `/agent/automations/${ids["automation"]}`, { name: "on push", prompt: "review it", enabled: true, trigger: { provider: "webhook", event: "received", filter: { webhook_ids: [ids["webhook"]] } } }), () => ids["automation"]!],
      ["automation.delete", () => admin()("DELETE", `/agent/automations/${ids["automation"]}`), () => ids["automation"]!],
      ["webhook.delete", () => admin()("DELETE", `/agent/webhooks/${ids["webhook"]}`), () => ids["webhook"]!],
      ["run.create", () => admin()("POST", "/agent/runs", { prompt: "@await-followup", team: true }), () => ids["run"]!],
      ["run.followup", () => admin()("POST", `/agent/runs/${ids["run"]}/followups`, { message: "@say thanks" }), () => ids["run"]!],
      ["run.create", () => admin()("POST", "/agent/runs", { prompt: "@sleep 60000", team: true }), () => ids["long"]!],
      ["run.cancel", () => admin()("POST", `/agent/runs/${ids["long"]}/cancel`), () => ids["long"]!],
      ["secret.delete", () => admin()("DELETE", "/agent/secrets/AUDITED"), () => "AUDITED"],
      ["environment.delete", () => admin()("DELETE", `/agent/environments/${ids["env"]}`), () => ids["env"]!],
      ["worker.release", () => admin()("DELETE", "/workers/builder-1/binding"), () => "builder-1"]
    ]
    const remember: Record<string, (body: Json) => void> = {
      "environment.create": (b) => (ids["env"] = b.uid),
      "schedule.create": (b) => (ids["schedule"] = b.id),
      "webhook.create": (b) => (ids["webhook"] = b.uid),
      "automation.create": (b) => (ids["automation"] = b.id)
    }
    let runs = 0
    for (const [action, write, resource] of steps) {
      const { added, reply } = await entriesOf(write)
      expect(reply.status, `${action}: ${JSON.stringify(reply.body)}`).toBeLessThan(300)
      remember[action]?.(reply.body)
      if (action === "run.create") ids[["scheduledRun", "run", "long"][runs++]!] = reply.body.run_id
      if (action === "run.create" && runs === 3) await waitForRun(server, team.tokens.admin, ids["long"]!, (r) => r.state === "INPROGRESS")
      if (action === "run.create" && runs === 2) await waitForRun(server, team.tokens.admin, ids["run"]!, (r) => r.state === "INPROGRESS")
      expect(added.map((e) => e.action), action).toEqual([action])
      expect(added[0]).toMatchObject({
        team_uid: team.uid,
        actor: { principal_uid: team.principals.admin, display_name: "audited admin", run_id: null, instance_admin: false },
        resource: { id: resource() },
        outcome: "succeeded",
        error_code: null,
        origin: { address: "127.0.0.1", user_agent: USER_AGENT }
      })
      expect(added[0].actor.token_id).toMatch(/^[A-Za-z0-9]{22}$/)
    }

    // The admin API, as the instance administrator.
    const adminSteps: Array<[action: string, write: () => Promise<{ status: number; body: Json }>]> = [
      ["team.create", () => root()("POST", "/admin/teams", { name: "new team" })],
      ["team.update", () => root()("PATCH", `/admin/teams/${ids["team"]}`, { max_concurrent_runs: 3 })],
      ["principal.create", () => root()("POST", "/admin/principals", { type: "user", display_name: "Newcomer", memberships: [{ team_uid: ids["team"], role: "member" }] })],
      ["token.create", () => root()("POST", `/admin/principals/${ids["principal"]}/tokens`, { name: "laptop" })],
      ["token.revoke", () => root()("DELETE", `/admin/tokens/${ids["token"]}`)],
      ["principal.update", () => root()("PATCH", `/admin/principals/${ids["principal"]}`, { disabled: true })],
      ["membership.set", () => root()("PUT", `/admin/principals/${ids["principal"]}/memberships/${team.uid}`, { role: "viewer" })],
      ["membership.remove", () => root()("DELETE", `/admin/principals/${ids["principal"]}/memberships/${team.uid}`)],
      ["principal.delete", () => root()("DELETE", `/admin/principals/${ids["principal"]}`)]
    ]
    for (const [action, write] of adminSteps) {
      const { added, reply } = await entriesOf(write)
      expect(reply.status, `${action}: ${JSON.stringify(reply.body)}`).toBeLessThan(300)
      if (action === "team.create") ids["team"] = reply.body.uid
      if (action === "principal.create") ids["principal"] = reply.body.uid
      if (action === "token.create") {
        ids["token"] = reply.body.token_id
        tokens.push(reply.body.token)
      }
      expect(added.map((e) => e.action), action).toEqual([action])
      expect(added[0]).toMatchObject({ outcome: "succeeded", actor: { instance_admin: true } })
    }

    // A team's admin manages its members and service accounts.
    const extra = await root()("POST", "/admin/principals", { type: "user", display_name: "Extra", memberships: [{ team_uid: team.uid, role: "member" }] })
    const teamSteps: Array<[action: string, write: () => Promise<{ status: number; body: Json }>]> = [
      ["principal.create", () => admin()("POST", "/agent/team/service-accounts", { display_name: "bot", role: "member" })],
      ["token.create", () => admin()("POST", `/agent/team/service-accounts/${ids["bot"]}/tokens`, { name: "ci" })],
      ["token.revoke", () => admin()("DELETE", `/agent/team/tokens/${ids["botToken"]}`)],
      ["membership.set", () => admin()("PUT", `/agent/team/members/${ids["bot"]}`, { role: "viewer" })],
      ["membership.remove", () => admin()("DELETE", `/agent/team/members/${extra.body.uid}`)],
      ["principal.delete", () => admin()("DELETE", `/agent/team/service-accounts/${ids["bot"]}`)]
    ]
    for (const [action, write] of teamSteps) {
      const { added, reply } = await entriesOf(write)
      expect(reply.status, `${action}: ${JSON.stringify(reply.body)}`).toBeLessThan(300)
      if (action === "principal.create") ids["bot"] = reply.body.uid
      if (action === "token.create") {
        ids["botToken"] = reply.body.token_id
        tokens.push(reply.body.token)
      }
      expect(added.map((e) => e.action), action).toEqual([action])
      expect(added[0]).toMatchObject({ outcome: "succeeded", team_uid: team.uid, actor: { principal_uid: team.principals.admin } })
    }
  })

  it("a refused write leaves one denied or failed entry with its error code, and changes nothing", async () => {
    const cases: Array<[action: string, outcome: string, code: string, write: () => Promise<{ status: number; body: Json }>]> = [
      ["secret.put", "denied", "not_authorized", () => as(team.tokens.member)("PUT", "/agent/secrets/NOT_MINE", { value: SECRET_VALUE })],
      ["environment.update", "denied", "resource_not_found", () => admin()("PUT", `/agent/environments/${"Z".repeat(22)}`, { config: { name: "x" } })],
      ["schedule.create", "failed", "invalid_request", () => admin()("POST", "/agent/schedules", { name: "bad", cron_schedule: "every day", prompt: "x", enabled: true })],
      ["run.create", "denied", "not_authorized", () => as(team.tokens.viewer)("POST", "/agent/runs", { prompt: "nope" })],
      ["team.create", "denied", "not_authorized", () => admin()("POST", "/admin/teams", { name: "not mine to make" })]
    ]
    for (const [action, outcome, code, write] of cases) {
      const { added, reply } = await entriesOf(write)
      expect(reply.status, action).toBeGreaterThanOrEqual(400)
      expect(added.map((e) => [e.action, e.outcome, e.error_code]), action).toEqual([[action, outcome, code]])
    }
    expect((await admin()("GET", "/agent/secrets")).body.secrets.map((s: Json) => s.name)).not.toContain("NOT_MINE")
  })

  it("an agent's write names the run it acted for", async () => {
    const parent = await admin()("POST", "/agent/runs", { prompt: "@spawn a child", team: true })
    expect((await waitForRun(server, team.tokens.admin, parent.body.run_id)).state).toBe("SUCCEEDED")
    const byAgent = (await everything()).filter((e) => e.actor.run_id === parent.body.run_id)
    expect(byAgent.map((e) => [e.action, e.actor.principal_uid, e.actor.token_id])).toEqual([["run.create", team.principals.admin, null]])
  })

  it("reading a transcript of someone else's run is recorded; reading one's own is not", async () => {
    const run = await admin()("POST", "/agent/runs", { prompt: "@say hello", team: true })
    expect((await waitForRun(server, team.tokens.admin, run.body.run_id)).state).toBe("SUCCEEDED")
    const reads = async () => (await everything()).filter((e) => e.action === "transcript.read" && e.resource.id === run.body.run_id)
    expect((await admin()("GET", `/agent/runs/${run.body.run_id}/transcript-link`)).status).toBe(200)
    expect(await reads()).toEqual([])
    expect((await as(team.tokens.member)("GET", `/agent/runs/${run.body.run_id}/transcript`)).status).toBe(302)
    expect((await reads()).map((e) => [e.actor.principal_uid, e.outcome])).toEqual([[team.principals.member, "succeeded"]])
    // Read again within the hour: nothing more to say (the log does not grow at the price of a GET).
    expect((await as(team.tokens.member)("GET", `/agent/runs/${run.body.run_id}/transcript-link`)).status).toBe(200)
    expect(await reads()).toHaveLength(1)
  })

  it("the secrets an execution reads are recorded, by the run's executor acting for the run, never their values", async () => {
    expect((await admin()("PUT", "/agent/secrets/MCP_TOKEN", { value: SECRET_VALUE })).status).toBe(200)
    const run = await admin()("POST", "/agent/runs", {
      prompt: "@mcp",
      team: true,
      config: { mcp_servers: { tools: { command: "tools", env: { TOKEN: "${{ secrets.MCP_TOKEN }}" } } } }
    })
    expect((await waitForRun(server, team.tokens.admin, run.body.run_id)).state).toBe("SUCCEEDED")
    const reads = (await everything()).filter((e) => e.action === "secret.read" && e.actor.run_id === run.body.run_id)
    expect(reads.map((e) => [e.resource.id, e.actor.principal_uid, e.team_uid, e.outcome])).toEqual([
      ["MCP_TOKEN", team.principals.admin, team.uid, "succeeded"]
    ])
  })

  it("team admins read their team's log only; members and other teams' admins do not", async () => {
    const page = await admin()("GET", "/agent/audit-log?limit=500")
    expect(page.status).toBe(200)
    expect(page.body.entries.length).toBeGreaterThan(20)
    expect(new Set(page.body.entries.map((e: Json) => e.team_uid))).toEqual(new Set([team.uid]))
    const theirs = await as(other.tokens.admin)("GET", "/agent/audit-log?limit=500")
    expect(theirs.body.entries.filter((e: Json) => e.team_uid !== other.uid)).toEqual([])
    expect(JSON.stringify(theirs.body)).not.toContain(team.uid)
    expect((await as(team.tokens.member)("GET", "/agent/audit-log")).status).toBe(403)
    expect((await admin()("GET", "/admin/audit-log")).status).toBe(403)
    // Naming another team changes nothing: the log is the request's team's (the parameter is the admin API's).
    const named = await admin()("GET", `/agent/audit-log?team_uid=${other.uid}&limit=500`)
    expect(named.body.entries.filter((e: Json) => e.team_uid !== team.uid)).toEqual([])
    // Filters and pages: one secret's entries, one at a time.
    const query = "resource_type=secret&resource_id=AUDITED&limit=1"
    const first = await admin()("GET", `/agent/audit-log?${query}`)
    expect(first.body.entries.map((e: Json) => e.action)).toEqual(["secret.delete"])
    const next = await admin()("GET", `/agent/audit-log?${query}&cursor=${first.body.page_info.next_cursor}`)
    expect(next.body.entries.map((e: Json) => [e.action, e.outcome])).toEqual([["secret.put", "succeeded"]])
    expect(next.body.page_info).toEqual({ has_next_page: false })
    const bad = await admin()("GET", "/agent/audit-log?outcome=maybe")
    expect([bad.status, bad.body.error]).toEqual([400, expect.stringMatching(/^outcome: /)])
  })

  it("no entry holds a secret's value or any token", async () => {
    const text = JSON.stringify(await everything())
    expect(text).not.toContain(SECRET_VALUE)
    for (const token of tokens) expect(text).not.toContain(token)
    expect(text).not.toMatch(/ar_[A-Za-z0-9_-]{20}|rt_[0-9a-f-]{36}\./)
  })
})
