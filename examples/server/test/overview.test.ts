/**
 * A team's overview (`GET /api/v1/agent/team/overview`, docs/dashboard.md), through the server on
 * SQLite and PostgreSQL with the scripted agent: the runs created and ended this hour by outcome,
 * and the percentiles of waits and durations, for anyone in the team and for that team only; a
 * window out of range is a 400 naming `hours`.
 */
import { describe, expect, it } from "vitest"
import { call, type DatabaseKind, makeTeam, suiteServer, waitForRun } from "./harness.js"

describe.each<DatabaseKind>(["sqlite", "postgres"])("team overview (%s)", (kind) => {
  const server = suiteServer(kind, {}, { concurrency: 4 })

  it("counts this hour's runs by outcome, with waits and durations; another team sees none of them", async () => {
    const { tokens } = await makeTeam(server(), `overview-${kind}`)
    const other = await makeTeam(server(), `overview-other-${kind}`)
    const ids: Array<string> = []
    for (const prompt of ["@say hi", "@say hello", "@fail some_code it broke on purpose"]) {
      const created = await call(server(), "POST", "/api/v1/agent/runs", { token: tokens.member, body: { prompt } })
      expect(created.status).toBe(200)
      ids.push(created.body.run_id)
    }
    const runs = await Promise.all(ids.map((id) => waitForRun(server(), tokens.member, id)))
    expect(runs.map((r) => r.state)).toEqual(["SUCCEEDED", "SUCCEEDED", "FAILED"])

    const overview = await call(server(), "GET", "/api/v1/agent/team/overview?hours=2", { token: tokens.viewer })
    expect(overview.status).toBe(200)
    expect(overview.body.hours).toHaveLength(2)
    const total = (key: string) => overview.body.hours.reduce((sum: number, h: Record<string, number>) => sum + h[key]!, 0)
    // A run may end in the next hour than it was created in: counted over the window.
    expect([total("created"), total("SUCCEEDED"), total("FAILED"), total("ERROR")]).toEqual([3, 2, 1, 0])
    expect(overview.body.queue_wait_seconds.count).toBe(3)
    expect(overview.body.run_duration_seconds.count).toBe(3)
    expect(overview.body.run_duration_seconds.p50).toBeGreaterThanOrEqual(0)
    expect(overview.body.truncated).toBe(false)

    const theirs = await call(server(), "GET", "/api/v1/agent/team/overview", { token: other.tokens.admin })
    expect(theirs.status).toBe(200)
    expect(theirs.body.hours).toHaveLength(24)
    expect(theirs.body.queue_wait_seconds.count).toBe(0)

    for (const bad of ["0", "169", "1.5", "x"]) {
      const reply = await call(server(), "GET", `/api/v1/agent/team/overview?hours=${bad}`, { token: tokens.viewer })
      expect(reply.status).toBe(400)
      expect(reply.body.error).toContain("hours")
    }
    expect((await call(server(), "GET", "/api/v1/agent/team/overview", {})).status).toBe(401)
  }, 90_000)
})
