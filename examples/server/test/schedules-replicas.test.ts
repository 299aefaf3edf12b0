/**
 * The scheduler on a fleet: built server processes on one PostgreSQL database, several schedules
 * firing every second. Replica A alone first, then A and B together (both fire every tick and
 * race on it), then B alone after A is stopped. Every tick (schedule id, scheduled time) in the
 * window has exactly one run, none missed, including the ticks around A's stop, up to a tick B
 * reached after A's stop (waited for, however slow the machine). A run's tick is
 * read from the schedule's `history.recent_runs`, polled every second (all schedules at once) so
 * that no run leaves that list (ten newest) unseen.
 */
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { postgresFleet } from "./fleet.js"
import { makeTeam } from "./harness.js"
import { call, type ServerProcess } from "./process.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe("the scheduler on two replicas on one PostgreSQL", () => {
  const { adminToken, spawn } = postgresFleet()

  it("every tick of every schedule starts exactly one run, with one replica, both, and the other", async () => {
    const a: ServerProcess = await spawn()
    const team = await makeTeam({ url: a.url, adminToken }, "fleet")
    const token = team.tokens.member
    const ids: Array<string> = []
    for (const name of ["one", "two", "three", "four"]) {
      const reply = await call(a, "POST", "/api/v1/agent/schedules", {
        token,
        body: { name, cron_schedule: "* * * * * *", prompt: `Schedule ${name}`, enabled: true, team: true }
      })
      expect(reply.status).toBe(201)
      ids.push(reply.body.id)
    }
    const createdAt = Date.now()
    /** Every run seen in a schedule's recent runs, with its tick (epoch seconds). */
    const ticks = new Map<string, Map<string, number>>(ids.map((id) => [id, new Map()]))
    const observe = (server: ServerProcess) =>
      Promise.all(ids.map(async (id) => {
        const reply = await call(server, "GET", `/api/v1/agent/schedules/${id}`, { token })
        expect(reply.status).toBe(200)
        for (const r of reply.body.history.recent_runs as Array<Json>) ticks.get(id)!.set(r.run_id, Date.parse(r.scheduled_for) / 1000)
      }))
    /** Observes every second (the history keeps ten runs; a loaded machine answers slowly) for `ms`. */
    const watch = async (server: ServerProcess, ms: number) => {
      const until = Date.now() + ms
      while (Date.now() < until) {
        await sleep(Math.min(1_000, Math.max(0, until - Date.now())))
        await observe(server)
      }
    }

    await watch(a, 2_000)
    const starting = Date.now()
    const b = await spawn()
    await observe(a)
    await watch(b, Math.max(0, 5_000 - (Date.now() - starting)))
    // B is watched while A stops too (a loaded machine may take longer than the history's ten runs to stop it).
    let stopped = false
    const stopping = Effect.runPromise(a.stop).finally(() => (stopped = true))
    try {
      while (!stopped) {
        await sleep(1_000)
        await observe(b)
      }
    } finally {
      await stopping
    }
    await watch(b, 3_000)
    // B alone has caught up: every schedule has run a tick at or after this second (a loaded
    // machine's scheduler may lag; the test waits for it, never for a time).
    const caughtUp = Math.floor(Date.now() / 1000)
    const latest = (id: string) => Math.max(...ticks.get(id)!.values())
    for (let deadline = Date.now() + 30_000; !ids.every((id) => latest(id) >= caughtUp);) {
      expect(Date.now() < deadline, "the scheduler on B reached no tick after its catch-up mark in 30 s").toBe(true)
      await sleep(500)
      await observe(b)
    }
    for (const id of ids) expect((await call(b, "POST", `/api/v1/agent/schedules/${id}/pause`, { token })).status).toBe(200)
    await sleep(500)
    await observe(b)

    for (const id of ids) {
      const listed = await call(b, "GET", `/api/v1/agent/runs?schedule_id=${id}&limit=100`, { token })
      expect(listed.status).toBe(200)
      const runs = listed.body.runs as Array<Json>
      const seen = ticks.get(id)!
      // Every run is one a tick recorded, and no two runs share a tick.
      expect(runs.map((r) => r.run_id).sort()).toEqual([...seen.keys()].sort())
      const sorted = [...seen.values()].sort((x, y) => x - y)
      expect(new Set(sorted).size).toBe(sorted.length)
      // No tick missed: consecutive seconds from just after creation to the pause.
      expect(sorted).toEqual(sorted.map((_, i) => sorted[0]! + i))
      expect(sorted[0]!).toBeLessThanOrEqual(createdAt / 1000 + 2)
      expect(sorted[sorted.length - 1]!).toBeGreaterThanOrEqual(caughtUp)
      expect(sorted.length).toBeGreaterThanOrEqual(10)
      for (const run of runs) {
        expect(run.source).toBe("SCHEDULED_AGENT")
        expect(run.schedule.schedule_id).toBe(id)
        expect(run.metadata).toEqual({})
      }
    }
  }, 90_000)
})
