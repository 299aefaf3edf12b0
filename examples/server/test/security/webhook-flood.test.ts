/**
 * Threat (issue 15, finding 9): unauthenticated senders exhaust the service through a webhook's
 * ingress URL. Every rejected delivery used to add a row to the delivery log, and the log kept
 * everything of the last 7 days, so anyone who knows a webhook's URL could grow the database
 * without bound (from many addresses, the per-address failure budget does not stop them); replays
 * of a captured signed delivery grew it the same way with DUPLICATE rows. And a sender that sends
 * its headers but dribbles its body held a connection for as long as it liked, never counted in
 * the authentication-failure budget (the budget only counts deliveries whose body arrived).
 *
 * Attack, through the bundled server on SQLite and PostgreSQL behind a trusted proxy (loopback), so
 * that `X-Forwarded-For` gives each delivery its own sender:
 * - 500 unauthenticated deliveries to one webhook from 500 addresses;
 * - 120 replays of one captured delivery from as many addresses, with the log capped at 50;
 * - slow-loris bodies: headers sent, then one byte every 200 ms, past the 1 s body timeout set here.
 *
 * Must happen: the log holds at most the newest 20 rejected deliveries and the 500 are counted
 * (`counts` of the deliveries list); duplicates stay under the cap and never push out the delivery
 * they duplicate; a slow body is cut off (408 / connection closed) soon after the timeout and counts
 * as a failure, so after 10 of them the sender gets 429 even with the right secret.
 */
import { Signatures } from "@agent-runs/core"
import { Effect, Exit, Scope } from "effect"
import { connect } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, type DatabaseKind, makeTeam, startServer, type TestServer } from "../harness.js"
import { postRaw } from "../support.js"

const BODY_TIMEOUT_SECONDS = 1
const LOG_MAX = 50
const REJECTED_KEPT = 20

const started = (kind: DatabaseKind) => {
  const scope = Effect.runSync(Scope.make())
  let server: TestServer | undefined
  beforeAll(async () => {
    server = await Effect.runPromise(Scope.extend(
      startServer(kind, {
        ingress: {
          trustedProxies: ["127.0.0.1"],
          deliveriesPerMinute: 60,
          logMax: LOG_MAX,
          bodyTimeoutSeconds: BODY_TIMEOUT_SECONDS
        }
      }),
      scope
    ))
  }, 60_000)
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))
  return () => server!
}

/** The `i`-th of many sender addresses. */
const sender = (i: number) => `198.18.${(i >> 8) & 255}.${i & 255}`

/**
 * Sends a delivery's headers, then its body one byte every 200 ms (for at most `maxMs`). Answers
 * the status line the server answered with (`none` when it closed without one, `open` when it
 * still waited for the body at the end), after how long, and whether the server then closed the
 * connection (within 2 s of its answer).
 */
const slowLoris = (url: string, path: string, headers: Record<string, string>, maxMs: number) =>
  new Promise<{ readonly status: string; readonly afterMs: number; readonly closed: boolean }>((resolve) => {
    const { hostname, port } = new URL(url)
    const socket = connect(Number(port), hostname)
    const start = Date.now()
    let received = ""
    let answeredAt: number | undefined
    let done = false
    const statusLine = () => (received.includes("\r\n") ? received.split("\r\n")[0]! : "none")
    const finish = (closed: boolean) => {
      if (done) return
      done = true
      clearInterval(drip)
      clearTimeout(deadline)
      socket.destroy()
      resolve({ status: answeredAt === undefined && !closed ? "open" : statusLine(), afterMs: (answeredAt ?? Date.now()) - start, closed })
    }
    socket.on("data", (chunk) => {
      received += chunk.toString("latin1")
      if (answeredAt === undefined && received.includes("\r\n")) {
        answeredAt = Date.now()
        // The answer is in: give the server 2 s to close the connection.
        clearTimeout(deadline)
        deadline = setTimeout(() => finish(false), 2_000)
      }
    })
    socket.on("close", () => finish(true))
    socket.on("error", () => finish(true))
    const head = [
      `POST ${path} HTTP/1.1`,
      `Host: ${hostname}:${port}`,
      "Content-Type: application/json",
      "Content-Length: 1000",
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
      "",
      ""
    ].join("\r\n")
    socket.write(`${head}{"a":"`)
    const drip = setInterval(() => {
      if (!socket.destroyed) socket.write("x")
    }, 200)
    let deadline = setTimeout(() => finish(false), maxMs)
  })

describe.each(["sqlite", "postgres"] as const)("webhook ingress floods (%s)", (kind) => {
  const server = started(kind)
  let admin = ""

  const api = (method: string, path: string, body?: unknown) =>
    call(server(), method, `/api/v1${path}`, { token: admin, ...(body === undefined ? {} : { body }) })

  const createWebhook = async (body: Record<string, unknown> = {}) => {
    const created = await api("POST", "/agent/webhooks", { name: `flood ${Math.random()}`, ...body })
    expect(created.status).toBe(201)
    return created.body as { uid: string; secret: string }
  }

  const post = async (uid: string, body: string, headers: Record<string, string>) =>
    (await postRaw(server(), `/webhooks/w/${uid}`, body, headers)).status

  /** The whole log, every page, and the counts. */
  const wholeLog = async (uid: string) => {
    const entries: Array<{ delivery_id: string; outcome: string }> = []
    let cursor: string | undefined
    let counts: Record<string, number> | undefined
    for (let page = 0; page < 100; page++) {
      const reply = await api("GET", `/agent/webhooks/${uid}/deliveries?limit=100${cursor === undefined ? "" : `&cursor=${cursor}`}`)
      expect(reply.status).toBe(200)
      entries.push(...reply.body.deliveries)
      counts = reply.body.counts
      if (!reply.body.page_info.has_next_page) break
      cursor = encodeURIComponent(reply.body.page_info.next_cursor)
    }
    return { entries, counts }
  }

  /** Runs `task` for 0..n-1, `width` at a time. */
  const inBatches = async <A>(n: number, width: number, task: (i: number) => Promise<A>) => {
    const out: Array<A> = []
    for (let at = 0; at < n; at += width) {
      out.push(...await Promise.all(Array.from({ length: Math.min(width, n - at) }, (_, j) => task(at + j))))
    }
    return out
  }

  beforeAll(async () => {
    admin = (await makeTeam(server(), `flood ${kind}`)).tokens.admin
  })

  it("500 unauthenticated deliveries from 500 senders leave at most 20 rows, and are all counted", async () => {
    const hook = await createWebhook()
    const statuses = await inBatches(500, 10, (i) =>
      post(hook.uid, `{"i":${i}}`, { authorization: "Bearer guessed", "x-forwarded-for": sender(i) }))
    expect(statuses.every((s) => s === 401)).toBe(true)
    const { counts, entries } = await wholeLog(hook.uid)
    expect(entries.length).toBeLessThanOrEqual(REJECTED_KEPT)
    expect(entries.every((d) => d.outcome === "REJECTED_AUTH")).toBe(true)
    expect(counts).toEqual({ ACCEPTED: 0, DUPLICATE: 0, REJECTED_AUTH: 500, REJECTED_INVALID_JSON: 0, REJECTED_TOO_LARGE: 0 })
    // A genuine delivery still goes through and is kept.
    expect(await post(hook.uid, `{"ok":true}`, { authorization: `Bearer ${hook.secret}` })).toBe(202)
    expect((await wholeLog(hook.uid)).entries.filter((d) => d.outcome === "ACCEPTED").length).toBe(1)
  }, 120_000)

  it("120 replays of a captured delivery stay under the log's cap and never push the original out", async () => {
    const hook = await createWebhook({ auth_mode: "signature", signature_scheme: "github", secret: "gh" })
    const body = JSON.stringify({ action: "opened", number: 1 })
    const signed = await Effect.runPromise(
      Signatures.sign("github", { secret: "gh", body: new TextEncoder().encode(body), now: Date.now(), id: "g-1" })
    )
    expect(await post(hook.uid, body, signed)).toBe(202)
    const statuses = await inBatches(120, 10, (i) => post(hook.uid, body, { ...signed, "x-forwarded-for": sender(i) }))
    expect(statuses.every((s) => s === 202)).toBe(true)
    const { counts, entries } = await wholeLog(hook.uid)
    // Pruned every 16 deliveries of a webhook: the cap plus at most 15 between two prunes.
    expect(entries.filter((d) => d.outcome === "DUPLICATE").length).toBeLessThanOrEqual(LOG_MAX + 15)
    expect(entries.filter((d) => d.outcome === "ACCEPTED").length).toBe(1)
    expect(counts?.DUPLICATE).toBe(120)
    expect(await post(hook.uid, body, { ...signed, "x-forwarded-for": sender(999) })).toBe(202)
    expect((await wholeLog(hook.uid)).counts?.ACCEPTED).toBe(1)
  }, 120_000)

  it("a slow body is cut off after the timeout and counts as a failure: after 10, the sender gets 429", async () => {
    const hook = await createWebhook()
    const path = `/webhooks/w/${hook.uid}`
    const auth = { authorization: `Bearer ${hook.secret}` }
    const one = await slowLoris(server().url, path, auth, 5_000)
    expect(one).toMatchObject({ status: "HTTP/1.1 408 Request Timeout", closed: true })
    expect(one.afterMs).toBeGreaterThanOrEqual(BODY_TIMEOUT_SECONDS * 1000 - 50)
    expect(one.afterMs).toBeLessThan(BODY_TIMEOUT_SECONDS * 1000 + 2_000)
    // Nine more at once from the same sender (the budget is per webhook and address).
    const more = await Promise.all(Array.from({ length: 9 }, () => slowLoris(server().url, path, auth, 5_000)))
    expect(more.map((m) => [m.status, m.closed])).toEqual(more.map(() => ["HTTP/1.1 408 Request Timeout", true]))
    const spent = await fetch(`${server().url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...auth },
      body: `{"ok":true}`
    })
    expect(spent.status).toBe(429)
    expect(Number(spent.headers.get("retry-after"))).toBeGreaterThan(0)
    // Refused before its body is read, a slow sender is not waited for either.
    const refused = await slowLoris(server().url, path, auth, 5_000)
    expect(refused).toMatchObject({ status: "HTTP/1.1 429 Too Many Requests", closed: true })
    expect(refused.afterMs).toBeLessThan(BODY_TIMEOUT_SECONDS * 1000 + 2_000)
    // Another sender is not affected.
    expect(await post(hook.uid, `{"ok":true}`, { ...auth, "x-forwarded-for": sender(7) })).toBe(202)
  }, 60_000)
})
