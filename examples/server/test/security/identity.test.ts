/**
 * Threat: a member makes runs act as someone with more rights. Two ways were open:
 * - `config.agent_identity_uid` named any principal of the team (an admin, say): the run's
 *   executor, and so its run token, became that admin;
 * - a member edited an admin's Team schedule, which then ran the member's prompt and config as the
 *   admin (runs were created as the schedule's creator).
 *
 * Attack and expected outcome, through the HTTP API of the bundled server:
 * - a member names the team admin, a service account of the team, another user, or a principal of
 *   another team in `config.agent_identity_uid` (runs and schedules): 403 `not_authorized`, the
 *   error naming the field, nothing stored. Naming oneself works; a team admin may name a service
 *   account of the team (the run's executor is then that account, its token never above the admin).
 * - a member PUTs a new prompt into an admin's Team schedule firing every second (and the admin
 *   then pauses and resumes it): the runs that follow are created by, and executed as, the
 *   member — never as the admin.
 */
import { Effect, Exit, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, makeTeam, startServer, type TestServer } from "../harness.js"

type Team = Awaited<ReturnType<typeof makeTeam>>

describe("identities: no member acts as anyone with more rights", () => {
  const scope = Effect.runSync(Scope.make())
  let server: TestServer
  let team: Team
  let other: Team
  let robot: string

  beforeAll(async () => {
    server = await Effect.runPromise(Scope.extend(startServer("sqlite"), scope))
    team = await makeTeam(server, "identity-a")
    other = await makeTeam(server, "identity-b")
    const account = await call(server, "POST", "/api/v1/admin/principals", {
      token: server.adminToken,
      body: { type: "service_account", display_name: "robot", memberships: [{ team_uid: team.uid, role: "admin" }] }
    })
    expect(account.status).toBe(201)
    robot = account.body.uid
  })
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

  const runCount = async () =>
    (await call(server, "GET", "/api/v1/agent/runs?limit=100", { token: team.tokens.admin })).body.runs.length as number

  it("a member cannot name the admin, a service account, another user or another team's principal (403, nothing stored)", async () => {
    const before = await runCount()
    for (const uid of [team.principals.admin, robot, team.principals.viewer, other.principals.member]) {
      const reply = await call(server, "POST", "/api/v1/agent/runs", {
        token: team.tokens.member,
        body: { prompt: "escalate", team: true, config: { agent_identity_uid: uid } }
      })
      expect(reply.status, uid).toBe(403)
      expect(reply.body).toMatchObject({ error_code: "not_authorized" })
      expect(reply.body.error).toContain("config.agent_identity_uid")
      const schedule = await call(server, "POST", "/api/v1/agent/schedules", {
        token: team.tokens.member,
        body: { name: `escalate-${uid}`, cron_schedule: "0 3 * * *", prompt: "escalate", enabled: true, team: true, agent_config: { agent_identity_uid: uid } }
      })
      expect(schedule.status, uid).toBe(403)
      expect(schedule.body.error).toContain("agent_config.agent_identity_uid")
    }
    expect(await runCount()).toBe(before)
  })

  it("naming oneself works; a team admin may name a service account of the team, never another user", async () => {
    const self = await call(server, "POST", "/api/v1/agent/runs", {
      token: team.tokens.member,
      body: { prompt: "me", team: true, config: { agent_identity_uid: team.principals.member } }
    })
    expect(self.status).toBe(200)
    const asRobot = await call(server, "POST", "/api/v1/agent/runs", {
      token: team.tokens.admin,
      body: { prompt: "robot", team: true, config: { agent_identity_uid: robot } }
    })
    expect(asRobot.status).toBe(200)
    const run = await call(server, "GET", `/api/v1/agent/runs/${asRobot.body.run_id}`, { token: team.tokens.admin })
    expect(run.body.executor).toMatchObject({ type: "service_account", uid: robot })
    expect(run.body.creator).toMatchObject({ uid: team.principals.admin })
    const asMember = await call(server, "POST", "/api/v1/agent/runs", {
      token: team.tokens.admin,
      body: { prompt: "impersonate", team: true, config: { agent_identity_uid: team.principals.member } }
    })
    expect(asMember.status).toBe(403)
  })

  it("a member's edit of an admin's Team schedule makes its runs the member's, never the admin's", async () => {
    const created = await call(server, "POST", "/api/v1/agent/schedules", {
      token: team.tokens.admin,
      body: { name: "admin-nightly", cron_schedule: "0 3 1 1 *", prompt: "the admin's job", enabled: true, team: true }
    })
    expect(created.status).toBe(201)
    const edited = await call(server, "PUT", `/api/v1/agent/schedules/${created.body.id}`, {
      token: team.tokens.member,
      body: { name: "admin-nightly", cron_schedule: "* * * * * *", prompt: "the member's job", enabled: true }
    })
    expect(edited.status).toBe(200)
    expect(edited.body.updated_by.uid).toBe(team.principals.member)
    // The admin pausing and resuming it does not take the member's prompt on as theirs.
    for (const action of ["pause", "resume"]) {
      const reply = await call(server, "POST", `/api/v1/agent/schedules/${created.body.id}/${action}`, { token: team.tokens.admin })
      expect(reply.status, action).toBe(200)
      expect(reply.body.updated_by.uid).toBe(team.principals.member)
    }
    const deadline = Date.now() + 10_000
    let runs: Array<{ creator: { uid: string }; executor: { uid: string }; prompt: string }> = []
    while (runs.length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200))
      runs = (await call(server, "GET", `/api/v1/agent/runs?schedule_id=${created.body.id}&limit=10`, { token: team.tokens.admin })).body.runs
    }
    await call(server, "POST", `/api/v1/agent/schedules/${created.body.id}/pause`, { token: team.tokens.admin })
    expect(runs.length).toBeGreaterThan(0)
    for (const run of runs) {
      expect(run.prompt).toBe("the member's job")
      expect(run.creator.uid).toBe(team.principals.member)
      expect(run.executor.uid).toBe(team.principals.member)
    }
  })
})
