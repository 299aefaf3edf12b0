/**
 * Threat: the identity lifecycle opens new ways up. A team's admins now manage its members,
 * service accounts and their tokens without an instance administrator; tokens can be limited to a
 * team and a role; principals can be disabled and deleted.
 *
 * Attacks and expected outcomes, through the HTTP API of the bundled server:
 * - a team admin names another team (in the TEAM header or the admin API's path), makes itself an
 *   instance administrator, or mints a token for a service account that is also another team's
 *   admin and uses it there: 403 (or a 400 naming `team_uid`), nothing changed;
 * - a token limited to a team or a role is used elsewhere or for more: 403;
 * - a disabled principal's token, and the run token of its running agent, are refused at once
 *   (401); enabling restores the token. A deleted principal's runs keep its name.
 */
import { Effect, Exit, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, makeTeam, startServer, type TestServer, waitForRun } from "../harness.js"

type Team = Awaited<ReturnType<typeof makeTeam>>

describe("team admins, limited tokens, disabled and deleted principals", () => {
  const scope = Effect.runSync(Scope.make())
  let server: TestServer
  let team: Team
  let other: Team

  beforeAll(async () => {
    server = await Effect.runPromise(Scope.extend(startServer("sqlite", {}, { concurrency: 4 }), scope))
    team = await makeTeam(server, "lifecycle-a")
    other = await makeTeam(server, "lifecycle-b")
  })
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

  const as = (token: string, teamUid?: string) => (method: string, path: string, body?: unknown) =>
    call(server, method, `/api/v1${path}`, {
      token,
      ...(body === undefined ? {} : { body }),
      ...(teamUid === undefined ? {} : { headers: { "x-team-uid": teamUid } })
    })
  const root = () => as(server.adminToken)

  it("a team admin reaches no other team and grants no instance administration", async () => {
    const admin = as(team.tokens.admin)
    const attempts: Array<[string, Promise<{ status: number }>]> = [
      ["other team by header", as(team.tokens.admin, other.uid)("PUT", `/agent/team/members/${team.principals.admin}`, { role: "admin" })],
      ["other team by path", admin("PUT", `/admin/principals/${team.principals.admin}/memberships/${other.uid}`, { role: "admin" })],
      ["instance admin", admin("PATCH", `/admin/principals/${team.principals.admin}`, { instance_admin: true })],
      ["any principal's token", admin("POST", `/admin/principals/${other.principals.admin}/tokens`, {})],
      ["principal list", admin("GET", "/admin/principals")],
      ["a member manages", as(team.tokens.member)("PUT", `/agent/team/members/${team.principals.member}`, { role: "admin" })]
    ]
    for (const [what, attempt] of attempts) expect((await attempt).status, what).toBe(403)
    const me = await admin("GET", "/agent/me")
    expect(me.body.instance_admin).toBe(false)
    expect(me.body.teams.map((t: { uid: string }) => t.uid)).toEqual([team.uid])
  })

  it("a service account's token made by a team admin acts in that team only, even once the account is also another team's admin", async () => {
    const made = await as(team.tokens.admin)("POST", "/agent/team/service-accounts", { display_name: "deploy-bot", role: "member" })
    expect(made.status).toBe(201)
    expect(made.body).toEqual({ uid: made.body.uid, type: "service_account", display_name: "deploy-bot", role: "member", disabled: false })
    const elsewhere = await as(team.tokens.admin)("POST", `/agent/team/service-accounts/${made.body.uid}/tokens`, { team_uid: other.uid })
    expect(elsewhere.status).toBe(400)
    expect(elsewhere.body.error).toContain("team_uid")
    const issued = await as(team.tokens.admin)("POST", `/agent/team/service-accounts/${made.body.uid}/tokens`, { name: "ci", max_role: "viewer" })
    expect(issued.status).toBe(201)
    // An instance administrator makes the account an admin of another team too.
    const joined = await root()("PUT", `/admin/principals/${made.body.uid}/memberships/${other.uid}`, { role: "admin" })
    expect(joined.status).toBe(200)
    expect((await as(issued.body.token, other.uid)("GET", "/agent/runs")).status).toBe(403)
    expect((await as(issued.body.token)("GET", "/agent/runs")).status).toBe(200)
    const write = await as(issued.body.token)("POST", "/agent/runs", { prompt: "@say hi" })
    expect(write.status).toBe(403)
    // Shared now: the team admin mints no more tokens for it, nor lists them.
    expect((await as(team.tokens.admin)("POST", `/agent/team/service-accounts/${made.body.uid}/tokens`, {})).status).toBe(404)
    expect((await as(team.tokens.admin)("GET", `/agent/team/service-accounts/${made.body.uid}/tokens`)).status).toBe(404)
    // Another team's admin can neither see nor revoke it; an instance administrator can.
    expect((await as(other.tokens.admin)("DELETE", `/agent/team/tokens/${issued.body.token_id}`)).status).toBe(404)
    const tokens = await root()("GET", `/admin/principals/${made.body.uid}/tokens`)
    expect(tokens.body.tokens).toEqual([expect.objectContaining({ token_id: issued.body.token_id, team_uid: team.uid, max_role: "viewer" })])
    expect(JSON.stringify(tokens.body)).not.toContain(issued.body.token)
    expect((await root()("DELETE", `/admin/tokens/${issued.body.token_id}`)).status).toBe(200)
    expect((await as(issued.body.token)("GET", "/agent/runs")).status).toBe(401)
  })

  it("a team admin takes over no other team's service account, and sees its members as the team sees them", async () => {
    const theirs = await as(other.tokens.admin)("POST", "/agent/team/service-accounts", { display_name: "their-bot", role: "admin" })
    const adopt = await as(team.tokens.admin)("PUT", `/agent/team/members/${theirs.body.uid}`, { role: "admin" })
    expect(adopt.status).toBe(403)
    const added = await as(team.tokens.admin)("PUT", `/agent/team/members/${other.principals.member}`, { role: "viewer" })
    expect(added.status).toBe(200)
    expect(Object.keys(added.body).sort()).toEqual(["disabled", "display_name", "role", "type", "uid"])
    expect(JSON.stringify(added.body)).not.toContain(other.uid)
  })

  it("disabling a principal stops its token and its running agent's run token at once; enabling restores the token", async () => {
    const member = as(team.tokens.member)
    const started = await member("POST", "/agent/runs", { prompt: "@await-followup", team: true })
    expect(started.status).toBe(200)
    const runId = started.body.run_id as string
    await waitForRun(server, team.tokens.admin, runId, (run) => run.state === "INPROGRESS")
    expect((await root()("PATCH", `/admin/principals/${team.principals.member}`, { disabled: true })).status).toBe(200)
    const refused = await member("GET", "/agent/runs")
    expect(refused.status).toBe(401)
    expect(refused.body.error).toContain("disabled")
    // The admin steers the running agent to call the API with its run token: refused too.
    expect((await as(team.tokens.admin)("POST", `/agent/runs/${runId}/followups`, { message: "@api GET /agent/me" })).status).toBe(200)
    await waitForRun(server, team.tokens.admin, runId)
    const said = await as(team.tokens.admin)("GET", `/agent/runs/${runId}/conversation`)
    expect(JSON.stringify(said.body)).toMatch(/api: GET \/agent\/me -> 401/)
    expect((await root()("PATCH", `/admin/principals/${team.principals.member}`, { disabled: false })).status).toBe(200)
    expect((await member("GET", "/agent/runs")).status).toBe(200)
  })

  it("deleting a principal revokes its tokens; its runs keep its name", async () => {
    const extra = await call(server, "POST", "/api/v1/admin/principals", {
      token: server.adminToken,
      body: { type: "user", display_name: "Leaver", memberships: [{ team_uid: team.uid, role: "member" }] }
    })
    const token = await root()("POST", `/admin/principals/${extra.body.uid}/tokens`, { expires_at: new Date(Date.now() + 3_600_000).toISOString() })
    const run = await as(token.body.token)("POST", "/agent/runs", { prompt: "@say bye", team: true })
    expect(run.status).toBe(200)
    await waitForRun(server, team.tokens.admin, run.body.run_id)
    expect((await root()("DELETE", `/admin/principals/${extra.body.uid}`)).status).toBe(200)
    expect((await as(token.body.token)("GET", "/agent/runs")).status).toBe(401)
    expect((await root()("GET", `/admin/principals/${extra.body.uid}`)).status).toBe(404)
    const kept = await as(team.tokens.admin)("GET", `/agent/runs/${run.body.run_id}`)
    expect(kept.body.creator).toMatchObject({ uid: extra.body.uid, display_name: "Leaver" })
    const tokens = await root()("GET", `/admin/principals/${team.principals.admin}/tokens`)
    expect(tokens.body.tokens[0]).toMatchObject({ name: "test", revoked_at: null, expires_at: null })
    expect(tokens.body.tokens[0].last_used_at).not.toBeNull()
  })
})
