/**
 * Threat: one member exhausts the service's storage or a team's share of it — 1 MiB prompts,
 * thousands of follow-ups queued for a run that has not started, runs created in a loop (an agent
 * spawning children, say).
 *
 * Attack: through the API of a server with its quotas (prompt 50,000 bytes, follow-up 64 KiB, 3 follow-ups
 * waiting per run, 5 runs per team and minute here), a member sends a 200 KB prompt, a 200 KB
 * follow-up, 6 follow-ups to a QUEUED run, and creates runs until refused.
 *
 * Expected: 413 `payload_too_large` naming `prompt` / `message`, 429 `rate_limited` (with
 * `Retry-After`) naming the quota; nothing past a quota is stored (no run, no follow-up event).
 */
import { Effect, Exit, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, makeTeam, startServer, type TestServer } from "../harness.js"

describe("quotas: no member exhausts the service", () => {
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
