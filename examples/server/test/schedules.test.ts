/**
 * Scheduled agents, black-box: the built server as a process on SQLite (runs are not executed:
 * concurrency 0), with schedules firing every second. Runs are created with source
 * `SCHEDULED_AGENT` and `schedule` set, and the `schedule_id` filter finds them; history stays
 * current; pause fires nothing and resume catches nothing up; a schedule whose environment was
 * deleted records `last_spawn_error`; a PUT without a required field is a 400 naming it; after
 * the server was down for several ticks, one catch-up run (`backfilled`). The catch-up grace is
 * 0 s here, so that whichever tick is the latest when the server comes back is a missed one.
 */
import { randomBytes } from "node:crypto"
import { describe, expect, it } from "vitest"
import { makeTeam } from "./harness.js"
import { lifecycle } from "./lifecycle.js"
import { call, type ServerProcess } from "./process.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const EVERY_SECOND = { cron_schedule: "* * * * * *", prompt: "Check the build\nand report", enabled: true }

/** The runs a schedule started (the `schedule_id` filter), oldest first. */
const runsOf = async (server: ServerProcess, token: string, id: string): Promise<Array<Json>> => {
  const reply = await call(server, "GET", `/api/v1/agent/runs?schedule_id=${id}&limit=100&sort_by=created_at&sort_order=asc`, { token })
  expect(reply.status).toBe(200)
  return reply.body.runs
}

const scheduleOf = async (server: ServerProcess, token: string, id: string): Promise<Json> => {
  const reply = await call(server, "GET", `/api/v1/agent/schedules/${id}`, { token })
  expect(reply.status).toBe(200)
  return reply.body
}

/** Polls until `check` holds (it returns a value) or the time is up. */
const eventually = async <A>(check: () => Promise<A | undefined>, timeoutMs = 10_000): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error("timed out waiting")
    await sleep(100)
  }
}

const seconds = (iso: string) => Date.parse(iso) / 1000

describe("scheduled agents (built server, SQLite)", () => {
  const adminToken = `ar_${randomBytes(32).toString("base64url")}`
  const life = lifecycle("sqlite", {
    AGENT_RUNS_ADMIN_TOKEN: adminToken,
    AGENT_RUNS_CONCURRENCY: "0",
    AGENT_RUNS_SCHEDULER_GRACE_SECONDS: "0"
  })
  let server: ServerProcess
  let token: string

  const create = async (body: Json) => {
    const reply = await call(server, "POST", "/api/v1/agent/schedules", { token, body })
    expect(reply.status).toBe(201)
    return reply.body as Json
  }
  const pause = async (id: string) => {
    const reply = await call(server, "POST", `/api/v1/agent/schedules/${id}/pause`, { token })
    expect(reply.status).toBe(200)
    return reply.body as Json
  }

  it("fires SCHEDULED_AGENT runs with the schedule on them, found by schedule_id, and keeps the history current", async () => {
    server = await life.start()
    const team = await makeTeam({ url: server.url, adminToken }, "schedules")
    token = team.tokens.member
    const schedule = await create({ ...EVERY_SECOND, name: "every second", team: true })
    const other = await create({ ...EVERY_SECOND, name: "another" })
    await call(server, "POST", "/api/v1/agent/runs", { token, body: { prompt: "not scheduled" } })
    const runs = await eventually(async () => {
      const found = await runsOf(server, token, schedule.id)
      return found.length >= 3 ? found : undefined
    })
    await pause(schedule.id)
    await pause(other.id)
    for (const run of runs) {
      expect(run.source).toBe("SCHEDULED_AGENT")
      expect(run.schedule).toEqual({ schedule_id: schedule.id, schedule_name: "every second", cron_schedule: "* * * * * *" })
      expect(run.prompt).toBe(EVERY_SECOND.prompt)
      expect(run.title).toBe("Check the build")
      expect(run.scope.type).toBe("Team")
      expect(run.metadata).toEqual({})
    }
    // The other schedule's runs (and the API's run) are not in the filtered list.
    const all = (await runsOf(server, token, schedule.id)).map((r: Json) => r.run_id)
    expect((await runsOf(server, token, other.id)).some((r: Json) => all.includes(r.run_id))).toBe(false)

    const item = await scheduleOf(server, token, schedule.id)
    expect(item.enabled).toBe(false)
    expect(item.history.next_run).toBeNull()
    expect(item.last_spawn_error).toBeNull()
    const recent = item.history.recent_runs as Array<Json>
    expect(recent.map((r) => r.run_id).sort()).toEqual([...all].sort())
    // Newest first, one second apart, the newest being last_ran; each run created after its tick.
    const ticks = recent.map((r) => seconds(r.scheduled_for))
    expect(ticks).toEqual(ticks.map((_, i) => ticks[0]! - i))
    expect(item.history.last_ran).toBe(recent[0].scheduled_for)
    for (const r of recent) {
      const run = (await runsOf(server, token, schedule.id)).find((x: Json) => x.run_id === r.run_id)
      expect(Date.parse(run.created_at)).toBeGreaterThanOrEqual(Date.parse(r.scheduled_for))
      expect(r.state).toBe(run.state)
    }
  }, 30_000)

  it("pause fires nothing; resume fires on from then on, catching nothing up; next_run follows", async () => {
    const schedule = await create({ ...EVERY_SECOND, name: "paused and resumed" })
    await eventually(async () => ((await runsOf(server, token, schedule.id)).length >= 1 ? true : undefined))
    const paused = await pause(schedule.id)
    expect(paused.history.next_run).toBeNull()
    await sleep(300) // a pass already under way may still finish its tick
    const before = (await runsOf(server, token, schedule.id)).length
    await sleep(2_500)
    expect((await runsOf(server, token, schedule.id)).length).toBe(before)

    const resumedAt = Date.now()
    const resumed = await call(server, "POST", `/api/v1/agent/schedules/${schedule.id}/resume`, { token })
    expect(resumed.status).toBe(200)
    expect(resumed.body.enabled).toBe(true)
    expect(Date.parse(resumed.body.history.next_run)).toBeGreaterThan(resumedAt - 1_000)
    expect(Date.parse(resumed.body.history.next_run)).toBeLessThanOrEqual(resumedAt + 2_000)
    const after = await eventually(async () => {
      const runs = await runsOf(server, token, schedule.id)
      return runs.length >= before + 2 ? runs : undefined
    })
    await pause(schedule.id)
    expect(after.every((r: Json) => r.metadata.backfilled === undefined)).toBe(true)
    const item = await scheduleOf(server, token, schedule.id)
    const newer = (item.history.recent_runs as Array<Json>).filter((r) => !after.slice(0, before).some((b: Json) => b.run_id === r.run_id))
    // Every tick after the resume is one that came after it: the paused seconds were not caught up.
    expect(newer.length).toBeGreaterThanOrEqual(2)
    for (const r of newer) expect(Date.parse(r.scheduled_for)).toBeGreaterThan(resumedAt - 1_000)
  }, 30_000)

  it("records last_spawn_error once the schedule's environment is deleted, and starts no run", async () => {
    const env = await call(server, "POST", "/api/v1/agent/environments", { token, body: { config: { name: "doomed" }, team: true } })
    expect(env.status).toBe(201)
    const schedule = await create({ ...EVERY_SECOND, name: "needs an environment", agent_config: { environment_id: env.body.uid } })
    const [first] = await eventually(async () => {
      const runs = await runsOf(server, token, schedule.id)
      return runs.length >= 1 ? runs : undefined
    })
    expect(first.environment_id).toBe(env.body.uid)
    expect((await call(server, "DELETE", `/api/v1/agent/environments/${env.body.uid}`, { token })).status).toBe(200)
    const broken = await eventually(async () => {
      const item = await scheduleOf(server, token, schedule.id)
      return item.last_spawn_error !== null ? item : undefined
    })
    expect(broken.last_spawn_error).toMatch(/environment_id: no permission to use environment/)
    const count = (await runsOf(server, token, schedule.id)).length
    await sleep(1_500)
    expect((await runsOf(server, token, schedule.id)).length).toBe(count)
    // Still active: it tries each tick (next_run moves on) and runs again once it can.
    const later = await scheduleOf(server, token, schedule.id)
    expect(later.enabled).toBe(true)
    expect(Date.parse(later.history.next_run)).toBeGreaterThan(Date.now() - 1_500)
    const fixed = await call(server, "PUT", `/api/v1/agent/schedules/${schedule.id}`, {
      token,
      body: { name: "needs an environment", cron_schedule: "* * * * * *", prompt: "p", enabled: true, agent_config: {} }
    })
    expect(fixed.status).toBe(200)
    await eventually(async () => ((await scheduleOf(server, token, schedule.id)).last_spawn_error === null ? true : undefined))
    await pause(schedule.id)
  }, 30_000)

  it("PUT requires every field but agent_config (400 naming it)", async () => {
    const schedule = await create({ ...EVERY_SECOND, name: "put", enabled: false, agent_config: { model_id: "m1" } })
    const full = { name: "put", cron_schedule: "0 3 * * *", prompt: "nightly", enabled: false }
    for (const field of ["name", "cron_schedule", "prompt", "enabled"] as const) {
      const { [field]: _omitted, ...body } = full
      const reply = await call(server, "PUT", `/api/v1/agent/schedules/${schedule.id}`, { token, body })
      expect(reply.status).toBe(400)
      expect(reply.body.error_code).toBe("invalid_request")
      expect(reply.body.error).toContain(field)
    }
    const replaced = await call(server, "PUT", `/api/v1/agent/schedules/${schedule.id}`, { token, body: full })
    expect(replaced.status).toBe(200)
    expect(replaced.body).toMatchObject({ ...full, agent_config: { model_id: "m1" } })
  })

  it("after the server was down for several ticks, one catch-up run marked backfilled, then on time again", async () => {
    const schedule = await create({ ...EVERY_SECOND, name: "survives downtime" })
    await eventually(async () => ((await runsOf(server, token, schedule.id)).length >= 2 ? true : undefined))
    await life.stop()
    const stoppedAt = Date.now()
    await sleep(4_000)
    server = await life.start()
    const runs = await eventually(async () => {
      const found = await runsOf(server, token, schedule.id)
      return found.filter((r: Json) => Date.parse(r.created_at) > stoppedAt).length >= 3 ? found : undefined
    })
    await pause(schedule.id)
    const backfilled = runs.filter((r: Json) => r.metadata.backfilled === "true")
    expect(backfilled).toHaveLength(1)
    const item = await scheduleOf(server, token, schedule.id)
    const ticks = new Map<string, number>((item.history.recent_runs as Array<Json>).map((r) => [r.run_id, seconds(r.scheduled_for)]))
    const catchUp = ticks.get(backfilled[0].run_id)!
    expect(catchUp).toBeGreaterThan(stoppedAt / 1000 - 1)
    // The ticks before the catch-up's, back to the last one handled before the stop, have no run.
    const sorted = [...ticks.values()].sort((a, b) => a - b)
    const i = sorted.indexOf(catchUp)
    expect(i).toBeGreaterThan(0)
    expect(catchUp - sorted[i - 1]!).toBeGreaterThanOrEqual(3)
    // After it, every tick on time (one second apart), none backfilled.
    const following = sorted.slice(i + 1)
    expect(following.length).toBeGreaterThanOrEqual(2)
    expect(following).toEqual(following.map((_, k) => following[0]! + k))
    expect(following[0]! - catchUp).toBeLessThanOrEqual(3)
  }, 40_000)
})
