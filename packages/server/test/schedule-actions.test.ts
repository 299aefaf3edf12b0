/**
 * The factory's actions over HTTP (docs/schedules.md, docs/webhooks.md), on the service served
 * standalone on SQLite: a cron expression previewed in words with its next fire times (400 naming
 * the field as creation does), a schedule run by hand (the run answered as a creation's, on the
 * schedule, listed in its history; another team's member gets a 404 and starts nothing), and an
 * automation's filter tested with a pasted payload (exactly one of delivery_id and payload; bounded
 * like a delivery's body).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type LocalService, startLocalService } from "./support/LocalService.js"

// Test code reads arbitrary JSON answers field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

describe("schedule preview, run now and pasted-payload filter tests over HTTP", () => {
  let service: LocalService
  let api: string
  /** Tokens: the admin of the default team, a member and a viewer of it, and a member of another team. */
  const tokens = { admin: "", member: "", viewer: "", outsider: "" }

  const call = async (token: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> => {
    const response = await fetch(`${api}${path}`, {
      method,
      headers: {
        ...(token === "" ? {} : { authorization: `Bearer ${token}` }),
        ...(body === undefined ? {} : { "content-type": "application/json" })
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    return { status: response.status, body: await response.json() }
  }

  const principal = async (team: string, role: string, name: string): Promise<string> =>
    (await service.api.principal(name, [{ team_uid: team, role }])).token

  beforeAll(async () => {
    service = await startLocalService({ name: "schedule-actions", executor: false })
    api = `${service.base}/api/v1`
    tokens.admin = service.adminToken
    const teams = await call(tokens.admin, "GET", "/admin/teams")
    const home = teams.body.teams[0].uid
    const other = await call(tokens.admin, "POST", "/admin/teams", { name: "elsewhere" })
    expect(other.status).toBe(201)
    tokens.member = await principal(home, "member", "Mia Member")
    tokens.viewer = await principal(home, "viewer", "Vic Viewer")
    tokens.outsider = await principal(other.body.uid, "member", "Otto Outsider")
  })

  afterAll(async () => {
    await service?.close()
  })

  it("previews an expression in words with its next fire times; any member may, with a token", async () => {
    const before = Date.now()
    const preview = await call(tokens.viewer, "POST", "/agent/schedules/preview", { cron_schedule: "*/15 * * * *" })
    expect(preview.status).toBe(200)
    expect(preview.body.description).toBe("every 15 minutes")
    const times: Array<string> = preview.body.next_runs
    expect(times).toHaveLength(5)
    expect(Date.parse(times[0]!)).toBeGreaterThan(before)
    expect(Date.parse(times[0]!) - before).toBeLessThanOrEqual(15 * 60_000)
    for (const [i, t] of times.entries()) {
      expect(new Date(Date.parse(t)).getUTCMinutes() % 15).toBe(0)
      if (i > 0) expect(Date.parse(t) - Date.parse(times[i - 1]!)).toBe(15 * 60_000)
    }
    const zoned = await call(tokens.member, "POST", "/agent/schedules/preview", {
      cron_schedule: "0 9 * * 1-5",
      timezone: "America/New_York",
      count: 20
    })
    expect(zoned.status).toBe(200)
    expect(zoned.body.description).toBe("at 09:00 on Monday through Friday")
    expect(zoned.body.next_runs).toHaveLength(20)

    const field = async (body: unknown) => {
      const answer = await call(tokens.member, "POST", "/agent/schedules/preview", body)
      expect(answer.status).toBe(400)
      expect(answer.body.error_code).toBe("invalid_request")
      return answer.body.field
    }
    expect(await field({ cron_schedule: "61 * * * *" })).toBe("cron_schedule")
    expect(await field({ cron_schedule: "0 0 30 2 *" })).toBe("cron_schedule")
    expect(await field({ cron_schedule: "0 9 * * *", timezone: "Mars/Olympus" })).toBe("timezone")
    expect(await field({ cron_schedule: "0 9 * * *", count: 21 })).toBe("count")
    expect(await field({ cron_schedule: "0 9 * * *", count: 0 })).toBe("count")
    expect(await field({})).toBe("cron_schedule")
    // Schedule creation names the same fields.
    const create = await call(tokens.member, "POST", "/agent/schedules", {
      name: "bad", cron_schedule: "0 9 * * *", timezone: "Mars/Olympus", prompt: "p", enabled: true
    })
    expect(create.status).toBe(400)
    expect(create.body.field).toBe("timezone")
    expect((await call("", "POST", "/agent/schedules/preview", { cron_schedule: "* * * * *" })).status).toBe(401)
  })

  it("runs a paused schedule now: the run of a creation, on the schedule, in its history; others get a 404", async () => {
    const created = await call(tokens.member, "POST", "/agent/schedules", {
      name: "nightly", cron_schedule: "0 3 * * *", prompt: "Tidy up", enabled: false, team: true
    })
    expect(created.status).toBe(201)
    const id = created.body.id
    const runsOf = async () => (await call(tokens.admin, "GET", `/agent/runs?schedule_id=${id}`)).body.runs as Array<Json>

    // Another team's member: 404, and nothing is created.
    const attack = await call(tokens.outsider, "POST", `/agent/schedules/${id}/run`)
    expect(attack.status).toBe(404)
    expect(attack.body.error_code).toBe("resource_not_found")
    expect(await runsOf()).toEqual([])
    // A viewer of the team: 403, as for pause.
    expect((await call(tokens.viewer, "POST", `/agent/schedules/${id}/pause`)).status).toBe(403)
    expect((await call(tokens.viewer, "POST", `/agent/schedules/${id}/run`)).status).toBe(403)
    expect(await runsOf()).toEqual([])

    const started = await call(tokens.admin, "POST", `/agent/schedules/${id}/run`)
    expect(started.status).toBe(200)
    expect(Object.keys(started.body).sort()).toEqual(["at_capacity", "run_id", "state", "task_id"])
    const run = (await call(tokens.admin, "GET", `/agent/runs/${started.body.run_id}`)).body
    expect(run.source).toBe("SCHEDULED_AGENT")
    expect(run.schedule).toMatchObject({ schedule_id: id, schedule_name: "nightly" })
    expect(run.metadata).toEqual({ manual: "true" })
    expect(run.prompt).toBe("Tidy up")
    expect((await runsOf()).map((r) => r.run_id)).toEqual([started.body.run_id])
    const after = (await call(tokens.member, "GET", `/agent/schedules/${id}`)).body
    expect(after.enabled).toBe(false)
    expect(after.history.recent_runs.map((r: Json) => r.run_id)).toEqual([started.body.run_id])
    expect(after.history.last_ran).toBeNull()
    expect((await call(tokens.admin, "POST", "/agent/schedules/AAAAAAAAAAAAAAAAAAAAAA/run")).status).toBe(404)
  })

  it("tests an automation's filter against a pasted payload, bounded like a delivery", async () => {
    const webhook = await call(tokens.admin, "POST", "/agent/webhooks", { name: "github" })
    expect(webhook.status).toBe(201)
    const automation = await call(tokens.admin, "POST", "/agent/automations", {
      name: "opened",
      prompt: "Review it",
      trigger: { provider: "webhook", event: "received", filter: { webhook_ids: [webhook.body.uid], payload: { action: ["opened"] } } }
    })
    expect(automation.status).toBe(201)
    const path = `/agent/automations/${automation.body.id}/test-filter`
    // A `headers` sent by an older client is ignored, as any unknown property (filters read only the body).
    const yes = await call(tokens.viewer, "POST", path, { payload: { action: "opened" }, headers: { "x-github-event": "pull_request" } })
    expect(yes.status).toBe(200)
    expect(yes.body.result).toBe("WOULD_TRIGGER")
    const no = await call(tokens.viewer, "POST", path, { payload: { action: "closed" } })
    expect(no.body.result).toBe("WOULD_NOT_TRIGGER")
    expect(no.body.reasons[0]).toContain("payload.action")

    const both = await call(tokens.admin, "POST", path, { payload: {}, delivery_id: "AAAAAAAAAAAAAAAAAAAAAA" })
    expect(both.status).toBe(400)
    expect(both.body.field).toBe("payload")
    const neither = await call(tokens.admin, "POST", path, {})
    expect(neither.status).toBe(400)
    expect(neither.body.field).toBe("delivery_id")
    const big = await call(tokens.admin, "POST", path, { payload: { text: "x".repeat(256 * 1024) } })
    expect(big.status).toBe(413)
    expect(big.body.error_code).toBe("payload_too_large")
    expect(big.body.error).toMatch(/^payload: /)
    expect((await call(tokens.outsider, "POST", path, { payload: {} })).status).toBe(404)
  })
})
