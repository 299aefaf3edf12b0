/**
 * `Idempotency-Key` on the creates (docs/reference/idempotency.md), through the server on SQLite
 * and on PostgreSQL: a repeat answers the first answer and creates nothing; another request with
 * the key is a 422 naming the header; concurrent repeats create once; keys are per caller; the
 * run-now of a schedule, follow-ups and the admin creates take one too.
 */
import { randomUUID } from "node:crypto"
import { describe, expect, it } from "vitest"
import { call, type DatabaseKind, makeTeam, suiteServer } from "./harness.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const keyed = (key: string) => ({ "idempotency-key": key })

describe.each<DatabaseKind>(["sqlite", "postgres"])("idempotency keys (%s)", (kind) => {
  const server = suiteServer(kind)

  /** The runs of the caller's team whose prompt is `prompt`. */
  const runsWithPrompt = async (token: string, prompt: string) => {
    const list = await call(server(), "GET", "/api/v1/agent/runs?limit=100", { token })
    expect(list.status).toBe(200)
    return (list.body.runs as Array<Json>).filter((run) => run.prompt === prompt)
  }

  it("answers a repeated create with its first answer, and creates one run", async () => {
    const { tokens } = await makeTeam(server(), `repeat-${kind}`)
    const key = randomUUID()
    const body = { prompt: `once ${key}` }
    const first = await call(server(), "POST", "/api/v1/agent/runs", { token: tokens.member, body, headers: keyed(key) })
    expect(first.status).toBe(200)
    expect(first.headers.get("idempotent-replayed")).toBeNull()
    const again = await call(server(), "POST", "/api/v1/agent/runs", { token: tokens.member, body, headers: keyed(key) })
    expect(again.status).toBe(first.status)
    expect(again.body).toEqual(first.body)
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    // The same JSON spaced and ordered otherwise is the same request.
    const respaced = await call(server(), "POST", "/api/v1/agent/runs", {
      token: tokens.member,
      body: `{ "prompt" : ${JSON.stringify(body.prompt)} }`,
      headers: keyed(key)
    })
    expect(respaced.body).toEqual(first.body)
    expect(await runsWithPrompt(tokens.member, body.prompt)).toHaveLength(1)
    // Without a key, the same body creates another run.
    expect((await call(server(), "POST", "/api/v1/agent/runs", { token: tokens.member, body })).status).toBe(200)
    expect(await runsWithPrompt(tokens.member, body.prompt)).toHaveLength(2)
  })

  it("refuses the key with another request (422 naming the header), and a malformed key (400)", async () => {
    const { tokens } = await makeTeam(server(), `mismatch-${kind}`)
    const key = randomUUID()
    const first = await call(server(), "POST", "/api/v1/agent/runs", { token: tokens.member, body: { prompt: "a" }, headers: keyed(key) })
    expect(first.status).toBe(200)
    const other = await call(server(), "POST", "/api/v1/agent/runs", { token: tokens.member, body: { prompt: "b" }, headers: keyed(key) })
    expect(other.status).toBe(422)
    expect(other.body.error).toContain("Idempotency-Key")
    expect(await runsWithPrompt(tokens.member, "b")).toHaveLength(0)
    for (const bad of ["with space", "x".repeat(256)]) {
      const reply = await call(server(), "POST", "/api/v1/agent/runs", { token: tokens.member, body: { prompt: "c" }, headers: keyed(bad) })
      expect(reply.status).toBe(400)
      expect(reply.body.error).toContain("Idempotency-Key")
    }
    expect(await runsWithPrompt(tokens.member, "c")).toHaveLength(0)
  })

  it("creates once when requests with one key arrive together", async () => {
    const { tokens } = await makeTeam(server(), `concurrent-${kind}`)
    const key = randomUUID()
    const body = { prompt: `together ${key}` }
    const replies = await Promise.all(
      Array.from({ length: 12 }, () => call(server(), "POST", "/api/v1/agent/runs", { token: tokens.member, body, headers: keyed(key) }))
    )
    const ok = replies.filter((reply) => reply.status === 200)
    const busy = replies.filter((reply) => reply.status === 409)
    expect(ok.length + busy.length).toBe(replies.length)
    expect(ok.length).toBeGreaterThanOrEqual(1)
    expect(new Set(ok.map((reply) => reply.body.run_id)).size).toBe(1)
    for (const reply of busy) {
      expect(reply.body).toMatchObject({ error_code: "conflict", retryable: true })
      expect(reply.headers.get("x-should-retry")).toBe("true")
    }
    expect(await runsWithPrompt(tokens.member, body.prompt)).toHaveLength(1)
  })

  it("keeps keys per caller (principal and token), and frees the key of a request that failed", async () => {
    const { tokens, principals } = await makeTeam(server(), `callers-${kind}`)
    const key = randomUUID()
    const body = { prompt: `mine ${key}`, team: true }
    const member = await call(server(), "POST", "/api/v1/agent/runs", { token: tokens.member, body, headers: keyed(key) })
    const admin = await call(server(), "POST", "/api/v1/agent/runs", { token: tokens.admin, body, headers: keyed(key) })
    expect(member.status).toBe(200)
    expect(admin.status).toBe(200)
    expect(admin.body.run_id).not.toBe(member.body.run_id)
    // Another token of the same principal has keys of its own.
    const second = await call(server(), "POST", `/api/v1/admin/principals/${principals.member}/tokens`, {
      token: server().adminToken,
      body: { name: "second" }
    })
    const other = await call(server(), "POST", "/api/v1/agent/runs", { token: second.body.token, body, headers: keyed(key) })
    expect(other.status).toBe(200)
    expect(other.body.run_id).not.toBe(member.body.run_id)
    // A viewer may not create (its own keys; nothing stored for a refusal).
    const refused = await call(server(), "POST", "/api/v1/agent/runs", { token: tokens.viewer, body, headers: keyed(key) })
    expect(refused.status).toBe(403)
    const failing = { prompt: "x", config: { environment_id: "AAAAAAAAAAAAAAAAAAAAAA" } }
    const failed = await call(server(), "POST", "/api/v1/agent/runs", { token: tokens.member, body: failing, headers: keyed("fails-once") })
    expect(failed.status).toBeGreaterThanOrEqual(400)
    const retried = await call(server(), "POST", "/api/v1/agent/runs", { token: tokens.member, body: failing, headers: keyed("fails-once") })
    expect(retried.status).toBe(failed.status)
    expect(retried.headers.get("idempotent-replayed")).toBeNull()
  })

  it("answers follow-ups, a schedule's run-now and the admin creates once per key (not a token's creation)", async () => {
    const { principals, tokens } = await makeTeam(server(), `others-${kind}`)
    const run = await call(server(), "POST", "/api/v1/agent/runs", { token: tokens.member, body: { prompt: "with follow-ups" } })
    const followup = () =>
      call(server(), "POST", `/api/v1/agent/runs/${run.body.run_id}/followups`, {
        token: tokens.member,
        body: { message: "one more thing" },
        headers: keyed("followup-1")
      })
    const firstFollowup = await followup()
    expect(firstFollowup.status).toBe(200)
    expect((await followup()).headers.get("idempotent-replayed")).toBe("true")

    const schedule = await call(server(), "POST", "/api/v1/agent/schedules", {
      token: tokens.member,
      body: { name: "nightly", cron_schedule: "0 3 * * *", prompt: `scheduled ${randomUUID()}`, enabled: false }
    })
    expect(schedule.status).toBe(201)
    const runNow = () =>
      call(server(), "POST", `/api/v1/agent/schedules/${schedule.body.id}/run`, { token: tokens.member, headers: keyed("now-1") })
    const started = await runNow()
    expect(started.status).toBe(200)
    const again = await runNow()
    expect(again.body.run_id).toBe(started.body.run_id)
    expect(await runsWithPrompt(tokens.member, schedule.body.prompt)).toHaveLength(1)

    const admin = server().adminToken
    const team = () =>
      call(server(), "POST", "/api/v1/admin/teams", { token: admin, body: { name: `keyed-${kind}` }, headers: keyed(`team-${kind}`) })
    const madeTeam = await team()
    expect(madeTeam.status).toBe(201)
    const sameTeam = await team()
    expect(sameTeam.status).toBe(201)
    expect(sameTeam.body.uid).toBe(madeTeam.body.uid)
    const teams = await call(server(), "GET", "/api/v1/admin/teams", { token: admin })
    expect((teams.body.teams as Array<Json>).filter((t) => t.name === `keyed-${kind}`)).toHaveLength(1)
    // A token's secret is never stored for a replay: the key is not taken there.
    const tokenOnce = () =>
      call(server(), "POST", `/api/v1/admin/principals/${principals.member}/tokens`, {
        token: admin,
        body: { name: "keyed" },
        headers: keyed(`token-${kind}`)
      })
    const [one, two] = [await tokenOnce(), await tokenOnce()]
    expect([one.status, two.status]).toEqual([201, 201])
    expect(two.headers.get("idempotent-replayed")).toBeNull()
    expect(two.body.token).not.toBe(one.body.token)
  })
})
