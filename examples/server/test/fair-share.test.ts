/**
 * Fair share across teams (docs/fair-share.md), through the server on SQLite and on PostgreSQL with
 * the scripted agent and one execution slot: a team of weight 2 and one of weight 1, both with runs
 * waiting, start runs two to one (first come, first served would start all of the first team's
 * first); within a team a higher `config.priority` starts first. Setting a weight is an instance
 * administrator's; a priority out of range is a 400 naming it.
 */
import { describe, expect, it } from "vitest"
import { call, type DatabaseKind, makeTeam, suiteServer, waitForRun } from "./harness.js"

describe.each<DatabaseKind>(["sqlite", "postgres"])("fair share (%s)", (kind) => {
  // One slot: runs start one at a time, in the order the claimer takes them.
  const server = suiteServer(kind, {}, { concurrency: 1 })

  const create = async (token: string, body: object) => {
    const reply = await call(server(), "POST", "/api/v1/agent/runs", { token, body })
    expect(reply.status).toBe(200)
    return reply.body.run_id as string
  }

  it("sets a team's weight (instance administrators only) and refuses bad weights and priorities, naming them", async () => {
    const team = await makeTeam(server(), `weights-${kind}`)
    const patch = (token: string, body: object) => call(server(), "PATCH", `/api/v1/admin/teams/${team.uid}`, { token, body })
    expect((await patch(team.tokens.admin, { share_weight: 5 })).status).toBe(403)
    for (const bad of [0, 101, 1.5, "2"]) {
      const reply = await patch(server().adminToken, { share_weight: bad })
      expect(reply.status).toBe(400)
      expect(reply.body.error).toContain("share_weight")
    }
    const set = await patch(server().adminToken, { share_weight: 3 })
    expect(set.status).toBe(200)
    expect(set.body.share_weight).toBe(3)
    const listed = await call(server(), "GET", "/api/v1/admin/teams", { token: server().adminToken })
    expect(listed.body.teams.find((t: { uid: string }) => t.uid === team.uid).share_weight).toBe(3)

    for (const bad of [11, -11, 0.5]) {
      const reply = await call(server(), "POST", "/api/v1/agent/runs", { token: team.tokens.member, body: { prompt: "x", config: { priority: bad } } })
      expect(reply.status).toBe(400)
      expect(reply.body.error).toContain("priority")
    }
    const runs = await call(server(), "GET", "/api/v1/agent/runs", { token: team.tokens.member })
    expect(runs.body.runs).toEqual([])
  }, 60_000)

  it("starts runs by weight across teams, then by priority within a team", async () => {
    const heavy = await makeTeam(server(), `heavy-${kind}`)
    const light = await makeTeam(server(), `light-${kind}`)
    const blocking = await makeTeam(server(), `blocking-${kind}`)
    expect((await call(server(), "PATCH", `/api/v1/admin/teams/${heavy.uid}`, { token: server().adminToken, body: { share_weight: 2 } })).status).toBe(200)
    // Holds the one slot while the others queue.
    const blocker = await create(blocking.tokens.member, { prompt: "@sleep 600000" })
    await waitForRun(server(), blocking.tokens.member, blocker, (run) => run.state === "INPROGRESS")

    const heavyRuns: Array<string> = []
    for (let i = 0; i < 6; i++) heavyRuns.push(await create(heavy.tokens.member, { prompt: "@say hi", title: `heavy ${i}` }))
    const lightRuns: Array<string> = []
    for (let i = 0; i < 2; i++) lightRuns.push(await create(light.tokens.member, { prompt: "@say hi", title: `light ${i}` }))
    // The light team's newest run, but urgent: its first to start.
    const urgent = await create(light.tokens.member, { prompt: "@say hi", title: "light urgent", config: { priority: 5 } })
    expect((await call(server(), "POST", `/api/v1/agent/runs/${blocker}/cancel`, { token: blocking.tokens.member })).status).toBeLessThan(300)

    const ended = await Promise.all([
      ...heavyRuns.map((id) => waitForRun(server(), heavy.tokens.member, id, undefined, 60_000)),
      ...[...lightRuns, urgent].map((id) => waitForRun(server(), light.tokens.member, id, undefined, 60_000))
    ])
    expect(ended.map((run) => run.state)).toEqual(Array(9).fill("SUCCEEDED"))
    const order = [...ended].sort((a, b) => Date.parse(a.started_at) - Date.parse(b.started_at))
    let heavyStarted = 0
    order.forEach((run, i) => {
      if (run.title.startsWith("heavy")) heavyStarted += 1
      // Two thirds of the starts are the heavy team's, within one, at every point.
      expect(Math.abs(heavyStarted - ((i + 1) * 2) / 3)).toBeLessThanOrEqual(1)
    })
    const lightOrder = order.filter((run) => run.title.startsWith("light")).map((run) => run.title)
    expect(lightOrder).toEqual(["light urgent", "light 0", "light 1"])
    const heavyOrder = order.filter((run) => run.title.startsWith("heavy")).map((run) => run.title)
    expect(heavyOrder).toEqual(heavyRuns.map((_, i) => `heavy ${i}`))
  }, 120_000)
})
