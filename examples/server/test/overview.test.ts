/**
 * A team's overview (`GET /api/v1/agent/team/overview`, docs/dashboard.md), through the server on
 * SQLite and PostgreSQL with the scripted agent: the runs created in each hour by their state, the
 * same as the run list shows for that hour and state, and the percentiles of waits and durations,
 * for anyone in the team over the runs it may see, and for that team only; a window out of range is a
 * 400 naming `hours`.
 */
import { describe, expect, it } from "vitest"
import { call, type DatabaseKind, makeTeam, suiteServer, waitForRun } from "./harness.js"

describe.each<DatabaseKind>(["sqlite", "postgres"])("team overview (%s)", (kind) => {
  const server = suiteServer(kind, {}, { concurrency: 4 })

  it("counts the runs created in each hour by state, as the run list does; with waits and durations; another team sees none", async () => {
    const { tokens } = await makeTeam(server(), `overview-${kind}`)
    const other = await makeTeam(server(), `overview-other-${kind}`)
    const ids: Array<string> = []
    // Three team runs, and a personal one the team's viewer does not see (nor count).
    for (const body of [{ prompt: "@say hi", team: true }, { prompt: "@say hello", team: true }, { prompt: "@fail some_code it broke on purpose", team: true }, { prompt: "@say mine" }]) {
      const created = await call(server(), "POST", "/api/v1/agent/runs", { token: tokens.member, body })
      expect(created.status).toBe(200)
      ids.push(created.body.run_id)
    }
    const runs = await Promise.all(ids.map((id) => waitForRun(server(), tokens.member, id)))
    expect(runs.map((r) => r.state)).toEqual(["SUCCEEDED", "SUCCEEDED", "FAILED", "SUCCEEDED"])
    const members = await call(server(), "GET", "/api/v1/agent/team/overview?hours=2", { token: tokens.member })
    expect(members.body.hours.reduce((sum: number, h: { created: number }) => sum + h.created, 0)).toBe(4)

    const overview = await call(server(), "GET", "/api/v1/agent/team/overview?hours=2", { token: tokens.viewer })
    expect(overview.status).toBe(200)
    expect(overview.body.hours).toHaveLength(2)
    const total = (key: string) => overview.body.hours.reduce((sum: number, h: Record<string, number>) => sum + h[key]!, 0)
    expect([total("created"), total("SUCCEEDED"), total("FAILED"), total("ERROR"), total("live")]).toEqual([3, 2, 1, 0, 0])
    expect(overview.body.queue_wait_seconds.count).toBe(3)
    expect(overview.body.run_duration_seconds.count).toBe(3)
    expect(overview.body.run_duration_seconds.p50).toBeGreaterThanOrEqual(0)
    expect(overview.body.truncated).toBe(false)
    // Each hour's figure is what the run list shows for the hour and the state.
    for (const hour of overview.body.hours) {
      const start = Date.parse(hour.hour)
      const range = `created_after=${new Date(start - 1).toISOString()}&created_before=${new Date(start + 3_600_000).toISOString()}`
      for (const state of ["SUCCEEDED", "FAILED"]) {
        const list = await call(server(), "GET", `/api/v1/agent/runs?${range}&state=${state}&limit=100`, { token: tokens.viewer })
        expect(list.status).toBe(200)
        expect(list.body.runs.length).toBe(hour[state])
      }
    }

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
