/**
 * Outbound webhooks through the server on SQLite and PostgreSQL with the scripted agent
 * (docs/outbound-webhooks.md): a receiver that checks every signature, fails on purpose and is
 * killed and restarted mid-stream still gets every event of every run, in order per run; a rotated
 * secret signs beside the new one during its overlap; an endpoint failing for the whole retry
 * period is turned off and says why, and what failed is redelivered in order once it is on again;
 * filters narrow what an endpoint hears; only the team's admins manage endpoints, and URLs to
 * addresses deliveries may not reach are refused naming `url`.
 */
import { afterAll, describe, expect, it } from "vitest"
import { call, type DatabaseKind, makeTeam, suiteServer, waitForRun } from "./harness.js"
import { eventually, type Received, Receiver } from "@agent-runs/testing"

const ALL_EVENTS = ["run.created", "run.state_changed", "run.succeeded", "run.failed", "run.cancelled"]

/** Checks one run's events as received: created first, then each change from the state before, then its end. */
const expectInOrder = (events: ReadonlyArray<Received>, runId: string, finalState: string) => {
  expect(events[0]!.body.type).toBe("run.created")
  expect(events[0]!.body.data.previous_state).toBeNull()
  let state = events[0]!.body.data.state as string
  for (const event of events.slice(1)) {
    expect(event.body.data.run.run_id).toBe(runId)
    if (event.body.type === "run.state_changed") {
      expect(event.body.data.previous_state).toBe(state)
      state = event.body.data.state
    } else {
      // The event naming the end comes right after the change to it.
      expect(event.body.type).toBe(`run.${finalState.toLowerCase()}`)
      expect(event.body.data.state).toBe(state)
    }
  }
  expect(state).toBe(finalState)
  expect(events[events.length - 1]!.body.type).toBe(`run.${finalState.toLowerCase()}`)
}

describe.each<DatabaseKind>(["sqlite", "postgres"])("outbound webhooks (%s)", (kind) => {
  const server = suiteServer(kind, {
    outboundWebhooks: {
      allowedRanges: ["127.0.0.0/8"],
      dispatch: { everyMs: 50, retry: { first_delay_ms: 100, max_delay_ms: 400, give_up_after_ms: 3_000 } }
    }
  }, { concurrency: 4 })
  const receivers: Array<Receiver> = []
  const receiver = async () => {
    const made = new Receiver()
    await made.start()
    receivers.push(made)
    return made
  }
  afterAll(() => Promise.all(receivers.map((r) => r.kill())))

  const register = async (token: string, url: string, body: Record<string, unknown> = {}) => {
    const created = await call(server(), "POST", "/api/v1/agent/outbound-webhooks", { token, body: { url, events: ALL_EVENTS, ...body } })
    expect(created.status).toBe(201)
    expect(created.body.secret).toMatch(/^whsec_/)
    return created.body
  }

  it("every event of every run arrives, signed and in order per run, through failures and a receiver killed mid-stream", async () => {
    const { tokens } = await makeTeam(server(), `outbound-${kind}`)
    const hooks = await receiver()
    const endpoint = await register(tokens.admin, hooks.url)
    hooks.secrets = [endpoint.secret]
    // Narrowed to an environment no run has: hears nothing.
    const narrow = await receiver()
    narrow.secrets = [(await register(tokens.admin, narrow.url, { filters: { environment_ids: ["AAAAAAAAAAAAAAAAAAAAAA"] } })).secret]
    hooks.failNext = 3

    const prompts = ["@say one", "@say two", "@fail some_code on purpose", "@say three", "@say four", "@say five"]
    const ids: Array<string> = []
    for (const prompt of prompts) {
      const created = await call(server(), "POST", "/api/v1/agent/runs", { token: tokens.member, body: { prompt, team: true } })
      expect(created.status).toBe(200)
      ids.push(created.body.run_id)
    }
    // Killed once the stream has started; back a moment later on the same port.
    expect(await eventually(() => hooks.accepted.length > 0)).toBe(true)
    await hooks.kill()
    await new Promise((resolve) => setTimeout(resolve, 700))
    await hooks.start()

    const runs = await Promise.all(ids.map((id) => waitForRun(server(), tokens.member, id)))
    const ended = (id: string, state: string) => () =>
      hooks.distinct().some((r) => r.body.data.run.run_id === id && r.body.type === `run.${state.toLowerCase()}`)
    for (const run of runs) expect(await eventually(ended(run.run_id, run.state))).toBe(true)

    expect(hooks.badSignatures).toBe(0)
    for (const run of runs) {
      const events = hooks.distinct().filter((r) => r.body.data.run.run_id === run.run_id)
      expectInOrder(events, run.run_id, run.state)
      // The run as the API shows it, at the time of the event.
      expect(events[events.length - 1]!.body.data.run.state).toBe(run.state)
    }
    expect(runs.map((r) => r.state)).toEqual(["SUCCEEDED", "SUCCEEDED", "FAILED", "SUCCEEDED", "SUCCEEDED", "SUCCEEDED"])
    expect(narrow.requests).toBe(0)

    // The log: every delivery delivered, the failed tries counted, newest first. (A delivery is
    // marked delivered once the receiver's answer is back: the receiver may have it just before.)
    const readLog = () => call(server(), "GET", `/api/v1/agent/outbound-webhooks/${endpoint.uid}/deliveries?limit=100`, { token: tokens.admin })
    expect(await eventually(async () => (await readLog()).body.deliveries.every((d: { state: string }) => d.state === "delivered"))).toBe(true)
    const log = await readLog()
    expect(log.status).toBe(200)
    expect(log.body.deliveries.length).toBe(hooks.distinct().length)
    expect(log.body.deliveries.every((d: { state: string }) => d.state === "delivered")).toBe(true)
    expect(log.body.deliveries.some((d: { attempts: number }) => d.attempts > 1)).toBe(true)
    expect(log.body.deliveries.every((d: { last_latency_ms: number }) => d.last_latency_ms >= 0)).toBe(true)
    // The Overview's health: the same deliveries, by state; the filtered endpoint has none.
    const health = await call(server(), "GET", "/api/v1/agent/team/outbound-webhook-health?hours=1", { token: tokens.admin })
    expect(health.status).toBe(200)
    expect(health.body.endpoints.map((e: Record<string, unknown>) => [e["uid"], e["delivered"], e["failed"], e["pending"]])).toEqual([
      [endpoint.uid, log.body.deliveries.length, 0, 0],
      [expect.any(String), 0, 0, 0]
    ])
    expect((await call(server(), "GET", "/api/v1/agent/team/outbound-webhook-health", { token: tokens.member })).status).toBe(403)
  }, 120_000)

  it("a receiver answering control characters (a NUL) is logged printable, and the service stays ready", async () => {
    const { tokens } = await makeTeam(server(), `outbound-nul-${kind}`)
    const hooks = await receiver()
    hooks.answer = "ok\u0000done\u0007"
    hooks.secrets = [(await register(tokens.admin, hooks.url, { events: ["run.created"] })).secret]
    const endpoint = (await call(server(), "GET", "/api/v1/agent/outbound-webhooks", { token: tokens.admin })).body.outbound_webhooks[0]
    await call(server(), "POST", "/api/v1/agent/runs", { token: tokens.member, body: { prompt: "@say hi", team: true } })
    const log = async () => (await call(server(), "GET", `/api/v1/agent/outbound-webhooks/${endpoint.uid}/deliveries`, { token: tokens.admin })).body
    expect(await eventually(async () => (await log()).deliveries[0]?.state === "delivered")).toBe(true)
    expect((await log()).deliveries[0].last_response_excerpt).toBe("ok\ufffddone\ufffd")
    expect(hooks.accepted).toHaveLength(1)
    expect((await call(server(), "GET", "/readyz", {})).status).toBe(200)
  }, 60_000)

  it("a rotated secret signs beside the new one while they overlap", async () => {
    const { tokens } = await makeTeam(server(), `outbound-rotate-${kind}`)
    const hooks = await receiver()
    const endpoint = await register(tokens.admin, hooks.url, { events: ["run.created"] })
    const rotated = await call(server(), "POST", `/api/v1/agent/outbound-webhooks/${endpoint.uid}/rotate-secret`, {
      token: tokens.admin,
      body: { overlap_seconds: 600 }
    })
    expect(rotated.status).toBe(200)
    expect(rotated.body.secret).not.toBe(endpoint.secret)
    expect(Date.parse(rotated.body.previous_secret_expires_at) - Date.now()).toBeGreaterThan(500_000)
    // A receiver that knows only the new secret, or only the old one, accepts the delivery.
    hooks.secrets = [rotated.body.secret]
    await call(server(), "POST", "/api/v1/agent/runs", { token: tokens.member, body: { prompt: "@say hi", team: true } })
    expect(await eventually(() => hooks.accepted.length === 1)).toBe(true)
    expect(hooks.accepted[0]!.signatures).toHaveLength(2)
    hooks.secrets = [endpoint.secret]
    await call(server(), "POST", "/api/v1/agent/runs", { token: tokens.member, body: { prompt: "@say hi", team: true } })
    expect(await eventually(() => hooks.accepted.length === 2)).toBe(true)
    expect(hooks.badSignatures).toBe(0)
    const secrets = await call(server(), "GET", `/api/v1/agent/outbound-webhooks/${endpoint.uid}`, { token: tokens.admin })
    expect(secrets.body.secret).toBeUndefined()
  }, 60_000)

  it("an endpoint failing for the whole retry period is turned off, says why, and gets what failed again once on", async () => {
    const { tokens } = await makeTeam(server(), `outbound-off-${kind}`)
    const hooks = await receiver()
    const endpoint = await register(tokens.admin, hooks.url)
    hooks.secrets = [endpoint.secret]
    hooks.failAll = true
    const since = new Date(Date.now() - 1_000).toISOString()
    const run = await call(server(), "POST", "/api/v1/agent/runs", { token: tokens.member, body: { prompt: "@say hi", team: true } })
    const ended = await waitForRun(server(), tokens.member, run.body.run_id)
    const off = async () => (await call(server(), "GET", `/api/v1/agent/outbound-webhooks/${endpoint.uid}`, { token: tokens.admin })).body
    expect(await eventually(async () => (await off()).enabled === false, 20_000)).toBe(true)
    const disabled = await off()
    expect(disabled.disabled_reason).toContain("failed")
    expect(disabled.disabled_at).not.toBeNull()
    const failed = await call(server(), "GET", `/api/v1/agent/outbound-webhooks/${endpoint.uid}/deliveries?state=failed`, { token: tokens.admin })
    expect(failed.body.deliveries.length).toBeGreaterThan(0)
    expect(hooks.accepted).toHaveLength(0)

    hooks.failAll = false
    const on = await call(server(), "PATCH", `/api/v1/agent/outbound-webhooks/${endpoint.uid}`, { token: tokens.admin, body: { enabled: true } })
    expect(on.body).toMatchObject({ enabled: true, disabled_reason: null, disabled_at: null })
    const again = await call(server(), "POST", `/api/v1/agent/outbound-webhooks/${endpoint.uid}/redeliver`, { token: tokens.admin, body: { since } })
    expect(again.status).toBe(200)
    expect(again.body.redelivered).toBeGreaterThan(0)
    expect(await eventually(() => hooks.distinct().some((r) => r.body.type === `run.${ended.state.toLowerCase()}`))).toBe(true)
    expectInOrder(hooks.distinct(), run.body.run_id, ended.state)

    // One delivery again, by id: the same webhook-id.
    const first = hooks.distinct()[0]!
    const one = await call(server(), "POST", `/api/v1/agent/outbound-webhooks/${endpoint.uid}/deliveries/${first.id}/redeliver`, { token: tokens.admin })
    expect(one.status).toBe(200)
    expect(await eventually(() => hooks.accepted.filter((r) => r.id === first.id).length === 2)).toBe(true)
  }, 60_000)

  it("only the team's admins manage endpoints; bad input and unreachable URLs are refused naming the field", async () => {
    const { tokens } = await makeTeam(server(), `outbound-access-${kind}`)
    const other = await makeTeam(server(), `outbound-access-other-${kind}`)
    const hooks = await receiver()
    const endpoint = await register(tokens.admin, hooks.url)
    const path = `/api/v1/agent/outbound-webhooks/${endpoint.uid}`
    for (const token of [tokens.member, tokens.viewer]) {
      expect((await call(server(), "GET", "/api/v1/agent/outbound-webhooks", { token })).status).toBe(403)
      expect((await call(server(), "POST", "/api/v1/agent/outbound-webhooks", { token, body: { url: hooks.url, events: ALL_EVENTS } })).status).toBe(403)
      expect((await call(server(), "PATCH", path, { token, body: { enabled: false } })).status).toBe(403)
      expect((await call(server(), "POST", `${path}/rotate-secret`, { token, body: {} })).status).toBe(403)
    }
    expect((await call(server(), "GET", path, { token: other.tokens.admin })).status).toBe(404)
    expect((await call(server(), "DELETE", path, { token: other.tokens.admin })).status).toBe(404)
    expect((await call(server(), "GET", `${path}/deliveries`, { token: other.tokens.admin })).status).toBe(404)
    expect((await call(server(), "GET", "/api/v1/agent/outbound-webhooks", {})).status).toBe(401)

    const refused = async (body: Record<string, unknown>, field: string) => {
      const reply = await call(server(), "POST", "/api/v1/agent/outbound-webhooks", { token: tokens.admin, body: { url: hooks.url, events: ALL_EVENTS, ...body } })
      expect(reply.status).toBe(400)
      expect(reply.body.error).toContain(field)
    }
    for (const url of ["ftp://example.com/", "not a url", "http://user:pw@example.com/", `https://example.com/${"a".repeat(2_100)}`,
      "http://10.0.0.1/", "http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/", "http://no-such-host.invalid/"]) {
      await refused({ url }, "url")
    }
    await refused({ events: [] }, "events")
    await refused({ events: ["run.nope"] }, "events")
    await refused({ events: ["run.created", "run.created"] }, "events")
    await refused({ filters: { environment_ids: ["short"] } }, "environment_ids")
    const patched = await call(server(), "PATCH", path, { token: tokens.admin, body: { url: "http://192.168.0.1/" } })
    expect(patched.status).toBe(400)
    expect(patched.body.error).toContain("url")
    const rotate = await call(server(), "POST", `${path}/rotate-secret`, { token: tokens.admin, body: { overlap_seconds: 8 * 86_400 } })
    expect(rotate.status).toBe(400)
    expect(rotate.body.error).toContain("overlap_seconds")

    expect((await call(server(), "DELETE", path, { token: tokens.admin })).status).toBe(200)
    expect((await call(server(), "GET", path, { token: tokens.admin })).status).toBe(404)
    const list = await call(server(), "GET", "/api/v1/agent/outbound-webhooks", { token: tokens.admin })
    expect(list.body.outbound_webhooks).toEqual([])
  }, 60_000)

  it("an endpoint may have a name, unique in the team, and sign with a team secret's value, never shown", async () => {
    const { tokens } = await makeTeam(server(), `outbound-named-${kind}`)
    const hooks = await receiver()
    const value = `whsec_${Buffer.from("0123456789abcdef0123456789abcdef").toString("base64")}`
    const put = (name: string, v: string) => call(server(), "PUT", `/api/v1/agent/secrets/${name}`, { token: tokens.admin, body: { value: v } })
    expect((await put("OUT_SIGNING", value)).status).toBe(200)
    expect((await put("PLAIN", "not base64 at all!")).status).toBe(200)
    expect((await put("SHORT", `whsec_${Buffer.from("sixteen bytes!!!").toString("base64")}`)).status).toBe(200)
    const create = (body: Record<string, unknown>) =>
      call(server(), "POST", "/api/v1/agent/outbound-webhooks", { token: tokens.admin, body: { url: hooks.url, events: ["run.created"], ...body } })

    const named = await create({ name: "  alerts ", secret_name: "OUT_SIGNING" })
    expect(named.status).toBe(201)
    expect(named.body).toMatchObject({ name: "alerts", secret_name: "OUT_SIGNING", secret: "" })
    expect(JSON.stringify(named.body)).not.toContain(value.slice(6))
    const taken = await create({ name: "alerts" })
    expect(taken.status).toBe(409)
    expect(taken.body.error).toContain("name")
    for (const [secretName, problem] of [["PLAIN", "Standard Webhooks"], ["MISSING", "MISSING"], ["SHORT", "at least 24"]]) {
      const refused = await create({ secret_name: secretName })
      expect(refused.status).toBe(400)
      expect(refused.body.error).toContain("secret_name")
      expect(refused.body.error).toContain(problem)
    }
    expect((await create({ name: "x".repeat(101) })).status).toBe(400)
    expect((await create({ name: "line\nbreak" })).status).toBe(400)
    // The same checks without creating anything; members may not ask.
    const check = (token: string, body: Record<string, unknown>) =>
      call(server(), "POST", "/api/v1/agent/outbound-webhooks/check", { token, body })
    expect((await check(tokens.admin, { url: hooks.url, secret_name: "OUT_SIGNING" })).body).toEqual({ url_problem: null, secret_name_problem: null })
    const bad = (await check(tokens.admin, { url: "http://10.0.0.1/", secret_name: "SHORT" })).body
    expect(bad.url_problem).toEqual(expect.any(String))
    expect(bad.secret_name_problem).toContain("at least 24")
    expect((await check(tokens.member, { url: hooks.url })).status).toBe(403)
    // The team secret it signs with cannot be deleted while it does.
    const deleted = await call(server(), "DELETE", "/api/v1/agent/secrets/OUT_SIGNING", { token: tokens.admin })
    expect(deleted.status).toBe(409)
    expect(deleted.body.error).toContain(named.body.uid)

    // Deliveries are signed with the team secret's value.
    hooks.secrets = [value]
    const run = await call(server(), "POST", "/api/v1/agent/runs", { token: tokens.member, body: { prompt: "@say hi", team: true } })
    expect(await eventually(() => hooks.accepted.some((r) => r.body.data.run.run_id === run.body.run_id))).toBe(true)
    expect(hooks.badSignatures).toBe(0)

    // Renamed to a free name; not to a taken one. Rotating to a generated secret shows it and clears secret_name.
    const other = await create({ name: "other" })
    const path = `/api/v1/agent/outbound-webhooks/${named.body.uid}`
    expect((await call(server(), "PATCH", path, { token: tokens.admin, body: { name: "other" } })).status).toBe(409)
    const renamed = await call(server(), "PATCH", path, { token: tokens.admin, body: { name: "pager" } })
    expect(renamed.body).toMatchObject({ name: "pager", secret_name: "OUT_SIGNING" })
    const rotated = await call(server(), "POST", `${path}/rotate-secret`, { token: tokens.admin, body: {} })
    expect(rotated.body).toMatchObject({ secret_name: null, secret: expect.stringMatching(/^whsec_/) })
    const back = await call(server(), "POST", `${path}/rotate-secret`, { token: tokens.admin, body: { secret_name: "OUT_SIGNING" } })
    expect(back.body).toMatchObject({ secret_name: "OUT_SIGNING", secret: "" })
    expect(other.body.name).toBe("other")
  }, 60_000)
})
