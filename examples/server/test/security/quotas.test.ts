/**
 * Threat (issue 15, finding 11): a member exhausts the service's storage, memory and bandwidth
 * with requests each of which is allowed. Prompts were limited only by the 1 MiB request body, a
 * run list page returned up to 500 of those prompts in one response, a queued run took any number
 * of follow-ups, and a team could create runs as fast as it could send requests.
 *
 * Attack, with a member's token through the bundled server (SQLite and PostgreSQL, runs kept
 * QUEUED) and its default quotas:
 * - a prompt of a million bytes (just under the body limit), a base prompt and a title as large;
 * - 200 follow-ups sent at once to one queued run, and a follow-up of 100 KB to another;
 * - 40 runs with prompts of 60 KB each, then one list request for 500 runs;
 * - 121 runs created in a minute by one team (one of them by a webhook delivery, replayed four
 *   times), and then a webhook delivery for the same team.
 *
 * And with the quotas set (a prompt of 50,000 bytes, 3 waiting follow-ups, 5 runs a minute), the
 * same attacks against those numbers: the settings are the limits.
 *
 * Must happen: the oversized fields are refused with 413 `payload_too_large` naming the field and
 * nothing is stored; exactly the first 60 follow-ups (a minute's) are accepted and the others get 429
 * `rate_limited` with `Retry-After`, recording nothing; a list page's JSON stays under 1 MiB and
 * its cursor leads to every run, complete; the 121st run is a 429 with `Retry-After` and is not
 * stored, another team is not affected, replays spend nothing of the quota, and the delivery past
 * it is a 429 too, neither logged nor started.
 */
import { Effect, Exit, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, type DatabaseKind, makeTeam, startServer, suiteServer, type TestServer } from "../harness.js"

/** The defaults this test holds the server to (core's `DEFAULT_QUOTAS`, docs/security.md). */
const MAX_PROMPT_BYTES = 64 * 1024
const FOLLOWUPS_PER_MINUTE = 60
const MAX_LIST_BYTES = 1024 * 1024
const RUNS_PER_MINUTE = 120

const started = (kind: DatabaseKind) => suiteServer(kind)

describe.each(["sqlite", "postgres"] as const)("quotas (%s)", (kind) => {
  const server = started(kind)

  const as = (token: string) => (method: string, path: string, body?: unknown) =>
    call(server(), method, `/api/v1${path}`, { token, ...(body === undefined ? {} : { body }) })

  /** Every run the caller sees, through every page; and the largest page's size in bytes. */
  const allRuns = async (token: string, limit = 500) => {
    const runs: Array<{ run_id: string; prompt: string }> = []
    let cursor: string | undefined
    let largest = 0
    for (let page = 0; page < 200; page++) {
      const query = `limit=${limit}${cursor === undefined ? "" : `&cursor=${encodeURIComponent(cursor)}`}`
      const response = await fetch(`${server().url}/api/v1/agent/runs?${query}`, {
        headers: { authorization: `Bearer ${token}` }
      })
      const bytes = Buffer.from(await response.arrayBuffer())
      expect(response.status).toBe(200)
      largest = Math.max(largest, bytes.length)
      const body = JSON.parse(bytes.toString("utf8"))
      runs.push(...body.runs)
      if (!body.page_info.has_next_page) return { runs, largest, pages: page + 1 }
      cursor = body.page_info.next_cursor
    }
    throw new Error("too many pages")
  }

  it("a prompt, base prompt or title over its limit is a 413 naming the field, and nothing is stored", async () => {
    const team = await makeTeam(server(), `prompts ${kind}`)
    const api = as(team.tokens.member)
    const huge = "x".repeat(1_000_000)
    const cases: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
      ["prompt", { prompt: huge }],
      ["prompt", { prompt: "é".repeat(MAX_PROMPT_BYTES / 2 + 1) }],
      ["config.base_prompt", { prompt: "hi", config: { base_prompt: "y".repeat(500_000) } }],
      ["title", { prompt: "hi", title: "t".repeat(100_000) }]
    ]
    for (const [field, body] of cases) {
      const reply = await api("POST", "/agent/runs", body)
      expect(reply.status, field).toBe(413)
      expect(reply.body.error_code).toBe("payload_too_large")
      expect(reply.body.error).toMatch(new RegExp(`^${field.replace(".", "\\.")}: `))
    }
    // At the limit is fine.
    expect((await api("POST", "/agent/runs", { prompt: "p".repeat(MAX_PROMPT_BYTES) })).status).toBe(200)
    const { runs } = await allRuns(team.tokens.member)
    expect(runs.map((r) => r.prompt.length)).toEqual([MAX_PROMPT_BYTES])
    // Schedules keep prompts too.
    const schedule = await api("POST", "/agent/schedules", { name: "big", cron_schedule: "0 * * * *", enabled: true, prompt: huge })
    expect(schedule.status).toBe(413)
    expect(schedule.body.error).toMatch(/^prompt: /)
    expect((await api("GET", "/agent/schedules")).body.schedules).toEqual([])
  })

  it("a queued run takes 60 follow-ups a minute; the others are 429 with Retry-After and record nothing", async () => {
    const team = await makeTeam(server(), `follow-ups ${kind}`)
    const api = as(team.tokens.member)
    const created = await api("POST", "/agent/runs", { prompt: "wait for me" })
    expect(created.status).toBe(200)
    const runId = created.body.run_id as string
    const replies = await Promise.all(
      Array.from({ length: 200 }, (_, i) => api("POST", `/agent/runs/${runId}/followups`, { message: `follow-up ${i}` }))
    )
    const statuses = replies.map((r) => r.status)
    expect(statuses.filter((s) => s === 200)).toHaveLength(FOLLOWUPS_PER_MINUTE)
    expect(statuses.filter((s) => s === 429)).toHaveLength(200 - FOLLOWUPS_PER_MINUTE)
    const refused = replies.find((r) => r.status === 429)!
    expect(refused.body.error_code).toBe("rate_limited")
    expect(refused.body.error).toMatch(/^message: run \S+ takes at most 60 follow-ups \(1048576 bytes\) a minute/)
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0)
    // Only the accepted ones were recorded.
    const timeline = await api("GET", `/agent/runs/${runId}/timeline`)
    const received = timeline.body.events.filter((e: { event_type: string }) => e.event_type === "followup_received")
    expect(received).toHaveLength(FOLLOWUPS_PER_MINUTE)
    expect((await api("POST", `/agent/runs/${runId}/followups`, { message: "one more" })).status).toBe(429)
  })

  it("a follow-up message over 64 KiB is a 413 naming the field, and records nothing", async () => {
    const team = await makeTeam(server(), `follow-up size ${kind}`)
    const api = as(team.tokens.member)
    const created = await api("POST", "/agent/runs", { prompt: "wait for me" })
    const runId = created.body.run_id as string
    const tooLong = await api("POST", `/agent/runs/${runId}/followups`, { message: "m".repeat(100_000) })
    expect(tooLong.status).toBe(413)
    expect(tooLong.body.error_code).toBe("payload_too_large")
    expect(tooLong.body.error).toMatch(/^message: /)
    const timeline = await api("GET", `/agent/runs/${runId}/timeline`)
    expect(timeline.body.events.map((e: { event_type: string }) => e.event_type)).not.toContain("followup_received")
    expect((await api("POST", `/agent/runs/${runId}/followups`, { message: "m".repeat(60_000) })).status).toBe(200)
  })

  it("a list page of runs with large prompts stays under 1 MiB, and its cursor leads to every run, complete", async () => {
    const team = await makeTeam(server(), `list ${kind}`)
    const api = as(team.tokens.member)
    const prompt = (i: number) => `${i} `.padEnd(60_000, "abcdefghij")
    for (let i = 0; i < 40; i++) expect((await api("POST", "/agent/runs", { prompt: prompt(i) })).status).toBe(200)
    const { largest, pages, runs } = await allRuns(team.tokens.member)
    expect(largest).toBeLessThanOrEqual(MAX_LIST_BYTES)
    expect(pages).toBeGreaterThan(1)
    expect(runs).toHaveLength(40)
    expect(new Set(runs.map((r) => r.run_id)).size).toBe(40)
    expect(runs.map((r) => r.prompt).sort()).toEqual(Array.from({ length: 40 }, (_, i) => prompt(i)).sort())
    // The detail endpoint gives the same item.
    const one = await api("GET", `/agent/runs/${runs[0]!.run_id}`)
    expect(one.body.prompt).toBe(runs[0]!.prompt)
  })

  it("a team creates at most 120 runs a minute (API and webhooks); past it 429 with Retry-After, nothing stored", async () => {
    const team = await makeTeam(server(), `rate ${kind}`)
    const api = as(team.tokens.member)
    const admin = as(team.tokens.admin)
    const hook = await admin("POST", "/agent/webhooks", { name: "rate" })
    expect(hook.status).toBe(201)
    const automation = await admin("POST", "/agent/automations", {
      name: "rate",
      prompt: "handle it",
      trigger: { provider: "webhook", event: "received", filter: { webhook_ids: [hook.body.uid] } }
    })
    expect(automation.status).toBe(201)

    // One delivery starts a run; its replays are duplicates and spend nothing of the quota.
    const deliver = async (body = `{"event":"push"}`) => {
      const response = await fetch(`${server().url}/webhooks/w/${hook.body.uid}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${hook.body.secret}` },
        body
      })
      await response.text()
      return response
    }
    for (let i = 0; i < 5; i++) expect((await deliver()).status).toBe(202)
    for (let i = 1; i < RUNS_PER_MINUTE; i++) {
      const reply = await api("POST", "/agent/runs", { prompt: `run ${i}` })
      expect(reply.status, `run ${i}`).toBe(200)
    }
    const over = await api("POST", "/agent/runs", { prompt: "one too many" })
    expect(over.status).toBe(429)
    expect(over.body.error_code).toBe("rate_limited")
    expect(over.body.error).toMatch(/^runs: over the team's quota of 120 runs in the last minute/)
    const retryAfter = Number(over.headers.get("retry-after"))
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(60)
    // The deprecated alias is the same endpoint.
    expect((await api("POST", "/agent/run", { prompt: "again" })).status).toBe(429)

    // A webhook delivery for the team is refused the same way: nothing logged, nothing started.
    const delivery = await deliver(`{"event":"push","after":"quota"}`)
    expect(delivery.status).toBe(429)
    expect(Number(delivery.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
    const log = await admin("GET", `/agent/webhooks/${hook.body.uid}/deliveries?limit=100`)
    expect(log.body.deliveries.map((d: { outcome: string }) => d.outcome).sort()).toEqual([
      "ACCEPTED",
      "DUPLICATE",
      "DUPLICATE",
      "DUPLICATE",
      "DUPLICATE"
    ])

    const { runs } = await allRuns(team.tokens.member)
    expect(runs).toHaveLength(RUNS_PER_MINUTE)
    expect(runs.some((r) => r.prompt === "one too many" || r.prompt === "again")).toBe(false)
    // Another team has its own quota.
    const other = await makeTeam(server(), `rate other ${kind}`)
    expect((await as(other.tokens.member)("POST", "/agent/runs", { prompt: "mine" })).status).toBe(200)
  })
})

describe("quotas as configured (sqlite)", () => {
  const scope = Effect.runSync(Scope.make())
  let server: TestServer

  beforeAll(async () => {
    server = await Effect.runPromise(Scope.extend(
      startServer("sqlite", { quotas: { promptBytes: 50_000, followupBytes: 64 * 1024, pendingFollowups: 3, runsPerMinute: 5 } }),
      scope
    ))
  })
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

  const runsOf = async (token: string) => (await call(server, "GET", "/api/v1/agent/runs?limit=100", { token })).body.runs as Array<unknown>

  it("a prompt or base prompt over the size quota is a 413 naming it, and stores no run", async () => {
    const team = await makeTeam(server, "quota-prompt")
    const token = team.tokens.member
    const big = "x".repeat(200_000)
    for (const body of [{ prompt: big }, { prompt: "small", config: { base_prompt: big } }]) {
      const reply = await call(server, "POST", "/api/v1/agent/runs", { token, body })
      expect(reply.status).toBe(413)
      expect(reply.body).toMatchObject({ error_code: "payload_too_large" })
      expect(reply.body.error).toMatch(/^(prompt|config\.base_prompt): 200000 bytes; at most 50000/)
    }
    expect(await runsOf(token)).toEqual([])
    // Just under the quota (multi-byte characters counted as bytes) is fine.
    const fits = await call(server, "POST", "/api/v1/agent/runs", { token, body: { prompt: "é".repeat(25_000) } })
    expect(fits.status).toBe(200)
  })

  it("follow-ups: over the size quota 413; past the waiting quota 429; none of them stored", async () => {
    const team = await makeTeam(server, "quota-followups")
    const token = team.tokens.member
    const run = await call(server, "POST", "/api/v1/agent/runs", { token, body: { prompt: "waits" } })
    expect(run.status).toBe(200)
    const send = (message: string) => call(server, "POST", `/api/v1/agent/runs/${run.body.run_id}/followups`, { token, body: { message } })
    const big = await send("y".repeat(200_000))
    expect(big.status).toBe(413)
    expect(big.body.error).toContain("message")
    const statuses = []
    for (let i = 0; i < 6; i++) statuses.push((await send(`follow-up ${i}`)).status)
    expect(statuses).toEqual([200, 200, 200, 429, 429, 429])
    const refused = await send("one more")
    expect(refused.body).toMatchObject({ error_code: "rate_limited" })
    expect(refused.body.error).toContain("follow-ups waiting")
    expect(refused.headers.get("retry-after")).not.toBeNull()
    const timeline = (await call(server, "GET", `/api/v1/agent/runs/${run.body.run_id}/timeline`, { token })).body.events as Array<{ event_type: string }>
    expect(timeline.filter((e) => e.event_type === "followup_received")).toHaveLength(3)
  })

  it("runs per team and minute: past the quota 429 with Retry-After, nothing stored; other teams unaffected", async () => {
    const team = await makeTeam(server, "quota-rate")
    const other = await makeTeam(server, "quota-rate-other")
    const statuses = []
    let last
    for (let i = 0; i < 8; i++) {
      last = await call(server, "POST", "/api/v1/agent/runs", { token: team.tokens.member, body: { prompt: `run ${i}` } })
      statuses.push(last.status)
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429])
    expect(last!.body).toMatchObject({ error_code: "rate_limited" })
    expect(last!.body.error).toContain("runs in the last minute")
    expect(Number(last!.headers.get("retry-after"))).toBeGreaterThan(0)
    expect(await runsOf(team.tokens.member)).toHaveLength(5)
    expect((await call(server, "POST", "/api/v1/agent/runs", { token: other.tokens.member, body: { prompt: "mine" } })).status).toBe(200)
  })
})
