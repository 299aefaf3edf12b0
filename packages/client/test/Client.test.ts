/**
 * The Promise client against a tiny node:http server on 127.0.0.1: the token and TEAM header,
 * retries (429/503/no answer, `Retry-After` in seconds and as a date, the cap), no retry on other
 * answers, the error class and fields of each status, timeouts, connection refused, paging,
 * transcript URLs and the live event stream (resumed with `Last-Event-ID`).
 */
import { createServer } from "node:http"
import { afterEach, describe, expect, it } from "vitest"
import {
  AgentRunsError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  ConnectionError,
  createClient,
  InternalServerError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  TimeoutError,
  UnprocessableEntityError
} from "../src/index.js"
import {
  closedPort,
  json,
  problem,
  problemBody,
  RUN,
  runIdOf,
  runItem,
  startServer,
  type Handler,
  type TestServer
} from "./server.js"

const TOKEN = "ar_test-token"
const TEAM = "Tm7QpX2vLk9sRw4Yz1Ab3C"

let servers: Array<TestServer> = []
afterEach(async () => {
  await Promise.all(servers.map((server) => server.close()))
  servers = []
})

const serve = async (handler: Handler) => {
  const server = await startServer(handler)
  servers.push(server)
  return server
}

/** The rejection of `promise` (fails the test if it resolves). */
const rejection = async (promise: Promise<unknown>): Promise<AgentRunsError> => {
  try {
    await promise
  } catch (error) {
    return error as AgentRunsError
  }
  throw new Error("expected the call to fail")
}

describe("requests", () => {
  it("refuses a missing token or a URL that is not absolute when the client is made", () => {
    // @ts-expect-error: a caller without the type checker
    expect(() => createClient({ url: "http://127.0.0.1:1" })).toThrow("createClient: options.token is required")
    expect(() => createClient({ url: "/agents", token: TOKEN })).toThrow("createClient: options.url must be the server's absolute URL")
  })

  it("sends the bearer token and the TEAM header, and answers the API's JSON", async () => {
    const server = await serve((_request, response) => json(response, 200, runItem()))
    const client = createClient({ url: `${server.url}/`, token: TOKEN, teamUid: TEAM })
    const run = await client.runs.get(RUN)
    expect(run).toStrictEqual(runItem())
    expect(server.requests).toHaveLength(1)
    expect(server.requests[0]).toMatchObject({ method: "GET", url: `/api/v1/agent/runs/${RUN}` })
    expect(server.requests[0]!.headers["authorization"]).toBe(`Bearer ${TOKEN}`)
    expect(server.requests[0]!.headers["x-team-uid"]).toBe(TEAM)
  })

  it("accepts a URL ending in /api/v1, sends JSON bodies, and leaves out the TEAM header when not set", async () => {
    const server = await serve((_request, response) =>
      json(response, 200, { run_id: RUN, task_id: RUN, state: "QUEUED", at_capacity: false }))
    const client = createClient({ url: `${server.url}/api/v1`, token: TOKEN })
    const created = await client.runs.create({ prompt: "Fix the bug", title: "Bug", metadata: { ticket: "ENG-7" } })
    expect(created).toStrictEqual({ run_id: RUN, task_id: RUN, state: "QUEUED", at_capacity: false })
    const [request] = server.requests
    expect(request).toMatchObject({ method: "POST", url: "/api/v1/agent/runs" })
    expect(request!.headers["x-team-uid"]).toBeUndefined()
    expect(request!.headers["content-type"]).toContain("application/json")
    expect(JSON.parse(request!.body)).toStrictEqual({ prompt: "Fix the bug", title: "Bug", metadata: { ticket: "ENG-7" } })
  })

  it("identity.me() asks GET /agent/me and answers the caller and its teams as sent", async () => {
    const me = {
      principal: { type: "user", uid: "Pr7QpX2vLk9sRw4Yz1Ab3C", display_name: "Ada" },
      token: { token_id: "Tk7QpX2vLk9sRw4Yz1Ab3C", name: "laptop", expires_at: "2027-01-01T00:00:00.000Z", team_uid: null, max_role: null },
      instance_admin: false,
      teams: [{ uid: TEAM, name: "Platform", role: "member" }],
      teams_truncated: false,
      default_team_uid: TEAM
    }
    const server = await serve((_request, response) => json(response, 200, me))
    const client = createClient({ url: server.url, token: TOKEN })
    expect(await client.identity.me()).toStrictEqual(me)
    expect(server.requests[0]).toMatchObject({ method: "GET", url: "/api/v1/agent/me" })
    expect(server.requests[0]!.headers["authorization"]).toBe(`Bearer ${TOKEN}`)
  })

  it("audit.list() and audit.listAll() read the team's and the whole audit log with their filters", async () => {
    const entry = {
      id: "01a22446-8ae1-72c2-a357-85b9ebd3fcdb",
      at: "2026-11-28T22:28:52.578Z",
      team_uid: TEAM,
      actor: { principal_uid: "Pr7QpX2vLk9sRw4Yz1Ab3C", display_name: "Ada", token_id: "Tk7QpX2vLk9sRw4Yz1Ab3C", run_id: null, instance_admin: false },
      action: "secret.put",
      resource: { type: "secret", id: "DEPLOY_KEY" },
      outcome: "succeeded",
      error_code: null,
      origin: { address: "127.0.0.1", user_agent: "curl/8" }
    }
    const page = { entries: [entry], page_info: { has_next_page: true, next_cursor: entry.id } }
    const server = await serve((_request, response) => json(response, 200, page))
    const client = createClient({ url: server.url, token: TOKEN, teamUid: TEAM })
    expect(await client.audit.list({ action: "secret.put", limit: "10" })).toStrictEqual(page)
    expect(await client.audit.listAll({ team_uid: TEAM, cursor: entry.id })).toStrictEqual(page)
    expect(server.requests.map((r) => [r.method, r.url])).toEqual([
      ["GET", "/api/v1/agent/audit-log?action=secret.put&limit=10"],
      ["GET", `/api/v1/admin/audit-log?cursor=${entry.id}&team_uid=${TEAM}`]
    ])
    expect(server.requests[0]!.headers["x-team-uid"]).toBe(TEAM)
  })

  it("runs a schedule now, previews a cron expression and tests a filter with a pasted payload", async () => {
    const SCHEDULE = "Sc7QpX2vLk9sRw4Yz1Ab3C"
    const AUTOMATION = "Au7QpX2vLk9sRw4Yz1Ab3C"
    const answers = [
      { run_id: RUN, task_id: RUN, state: "QUEUED", at_capacity: false },
      { description: "every 15 minutes", next_runs: ["2026-11-28T04:15:00.000Z", "2026-11-28T04:30:00.000Z"] },
      { result: "WOULD_TRIGGER", reasons: ["the payload matches every condition of the filter"] }
    ]
    const server = await serve((_request, response, index) => json(response, 200, answers[index]))
    const client = createClient({ url: server.url, token: TOKEN })
    expect(await client.schedules.run(SCHEDULE)).toStrictEqual(answers[0])
    expect(await client.schedules.preview({ cron_schedule: "*/15 * * * *", count: 2 })).toStrictEqual(answers[1])
    expect(await client.automations.testFilter(AUTOMATION, { payload: { action: "opened" } }))
      .toStrictEqual(answers[2])
    expect(server.requests.map((r) => `${r.method} ${r.url}`)).toEqual([
      `POST /api/v1/agent/schedules/${SCHEDULE}/run`,
      "POST /api/v1/agent/schedules/preview",
      `POST /api/v1/agent/automations/${AUTOMATION}/test-filter`
    ])
    expect(JSON.parse(server.requests[1]!.body)).toMatchObject({ cron_schedule: "*/15 * * * *", count: 2 })
    expect(JSON.parse(server.requests[2]!.body)).toStrictEqual({ payload: { action: "opened" } })
    // A count out of range is refused before anything is sent.
    const error = await rejection(client.schedules.preview({ cron_schedule: "* * * * *", count: 21 }))
    expect(error).toBeInstanceOf(BadRequestError)
    expect(error.message).toContain("count")
    expect(server.requests).toHaveLength(3)
  })

  it("refuses input that does not fit the API before sending it (BadRequestError without status)", async () => {
    const server = await serve((_request, response) => json(response, 200, runItem()))
    const client = createClient({ url: server.url, token: TOKEN })
    const error = await rejection(client.runs.get("not-a-run-id"))
    expect(error).toBeInstanceOf(BadRequestError)
    expect(error.status).toBeUndefined()
    expect(error.errorCode).toBe("invalid_request")
    expect(error.message).toContain("runId")
    expect(server.requests).toHaveLength(0)
  })

  it("answers a transcript's signed URL (the 302's Location, resolved), without following it", async () => {
    const server = await serve((request, response) => {
      if (request.url.endsWith("/transcript")) {
        response.writeHead(302, { location: `/api/v1/downloads/transcripts/${RUN}?expires=1&signature=ab` })
        response.end()
      } else {
        response.writeHead(500)
        response.end("followed")
      }
    })
    const client = createClient({ url: server.url, token: TOKEN })
    expect(await client.runs.transcriptUrl(RUN)).toBe(
      `${server.url}/api/v1/downloads/transcripts/${RUN}?expires=1&signature=ab`
    )
    expect(server.requests.map((r) => r.url)).toEqual([`/api/v1/agent/runs/${RUN}/transcript`])
  })

  it("answers a transcript's link as JSON, and the run counts with the list's filters (metadata included)", async () => {
    const link = { url: `http://elsewhere.example/api/v1/downloads/transcripts/${RUN}?expires=1&signature=ab`, expires_at: "1970-01-01T00:00:01.000Z" }
    const counts = {
      counts: { QUEUED: 2, PENDING: 0, CLAIMED: 0, INPROGRESS: 1, SUCCEEDED: 0, FAILED: 0, BLOCKED: 0, ERROR: 0, CANCELLED: 0 },
      total: 3
    }
    const server = await serve((_request, response, index) => json(response, 200, index === 0 ? link : counts))
    const client = createClient({ url: server.url, token: TOKEN })
    expect(await client.runs.transcriptLink(RUN)).toStrictEqual(link)
    expect(await client.runs.counts({ state: ["QUEUED", "INPROGRESS"], q: "deploy", metadata: { env: "prod" } })).toStrictEqual(counts)
    expect(server.requests.map((r) => r.url)).toEqual([
      `/api/v1/agent/runs/${RUN}/transcript-link`,
      "/api/v1/agent/run-counts?state=QUEUED&state=INPROGRESS&q=deploy&metadata%5Benv%5D=prod"
    ])
    // A malformed run id is refused before anything is sent.
    expect(await rejection(client.runs.transcriptLink("not-a-run-id"))).toBeInstanceOf(BadRequestError)
    expect(server.requests).toHaveLength(2)
  })
})

describe("retries", () => {
  it("retries a 503 after its Retry-After (1 s), then answers the success", async () => {
    const server = await serve((_request, response, index) =>
      index === 0
        ? problem(response, 503, "resource_unavailable", "storage is unavailable", {}, { "retry-after": "1" })
        : json(response, 200, runItem()))
    const client = createClient({ url: server.url, token: TOKEN })
    const run = await client.runs.get(RUN)
    expect(run.run_id).toBe(RUN)
    expect(server.requests).toHaveLength(2)
    const waited = server.requests[1]!.at - server.requests[0]!.at
    expect(waited).toBeGreaterThanOrEqual(950)
    expect(waited).toBeLessThan(3000)
  })

  it("sends one Idempotency-Key with a create and the same key with its retries; a new key for the next create", async () => {
    const server = await serve((_request, response, index) =>
      index === 0
        ? problem(response, 503, "resource_unavailable", "storage is unavailable", {}, { "retry-after": "0" })
        : index === 3
        ? json(response, 200, runItem())
        : json(response, 200, { run_id: RUN, task_id: RUN, state: "QUEUED", at_capacity: false }))
    const client = createClient({ url: server.url, token: TOKEN })
    await client.runs.create({ prompt: "Fix the bug" })
    await client.runs.create({ prompt: "Fix the bug" })
    await client.runs.get(RUN)
    const keys = server.requests.map((request) => request.headers["idempotency-key"])
    expect(server.requests).toHaveLength(4)
    expect(keys[0]).toMatch(/^[\x21-\x7e]{1,255}$/)
    expect(keys[1]).toBe(keys[0])
    expect(keys[2]).toMatch(/^[\x21-\x7e]{1,255}$/)
    expect(keys[2]).not.toBe(keys[0])
    expect(keys[3]).toBeUndefined()
  })

  it("sends the caller's own Idempotency-Key when given, the same with each call", async () => {
    const server = await serve((_request, response) =>
      json(response, 200, { run_id: RUN, task_id: RUN, state: "QUEUED", at_capacity: false }))
    const client = createClient({ url: server.url, token: TOKEN })
    await client.runs.create({ prompt: "Fix the bug" }, { idempotencyKey: "deploy-42" })
    await client.runs.create({ prompt: "Fix the bug" }, { idempotencyKey: "deploy-42" })
    expect(server.requests.map((request) => request.headers["idempotency-key"])).toEqual(["deploy-42", "deploy-42"])
  })

  it("retries a keyed create answered 409 retryable (its first attempt still runs) with the same key", async () => {
    const server = await serve((_request, response, index) =>
      index === 0
        ? problem(response, 409, "conflict", "Idempotency-Key: still being processed", { retryable: true }, { "x-should-retry": "true" })
        : json(response, 200, { run_id: RUN, task_id: RUN, state: "QUEUED", at_capacity: false }))
    const client = createClient({ url: server.url, token: TOKEN })
    const created = await client.runs.create({ prompt: "Fix the bug" })
    expect(created.run_id).toBe(RUN)
    expect(server.requests).toHaveLength(2)
    expect(server.requests[1]!.headers["idempotency-key"]).toBe(server.requests[0]!.headers["idempotency-key"])
  })

  it("tries 3 times at most (2 retries by default), then fails with the last answer", async () => {
    const server = await serve((_request, response) =>
      problem(response, 503, "resource_unavailable", "still unavailable", {}, { "retry-after": "1" }))
    const client = createClient({ url: server.url, token: TOKEN })
    const started = Date.now()
    const error = await rejection(client.runs.get(RUN))
    expect(server.requests).toHaveLength(3)
    expect(Date.now() - started).toBeGreaterThanOrEqual(1900)
    expect(error).toBeInstanceOf(InternalServerError)
    expect(error).toMatchObject({ status: 503, errorCode: "resource_unavailable", message: "still unavailable" })
    expect(error.retryable).toBe(true)
  })

  it("retries a 429 until an HTTP-date Retry-After, caps the wait at maxRetryWaitMs, and honours maxRetries", async () => {
    const date = new Date(Date.now() + 60_000).toUTCString()
    const server = await serve((_request, response) =>
      problem(response, 429, "rate_limited", "slow down", { retry_after_seconds: 60 }, { "retry-after": date }))
    const client = createClient({ url: server.url, token: TOKEN, maxRetries: 1, maxRetryWaitMs: 200 })
    const started = Date.now()
    const error = await rejection(client.runs.get(RUN))
    expect(Date.now() - started).toBeLessThan(2000)
    expect(server.requests).toHaveLength(2)
    const waited = server.requests[1]!.at - server.requests[0]!.at
    expect(waited).toBeGreaterThanOrEqual(180)
    expect(error).toBeInstanceOf(RateLimitError)
    expect((error as RateLimitError).retryAfterSeconds).toBe(60)
    expect(error.headers?.["retry-after"]).toBe(date)
  })

  it("does not retry a 400 (nor any other answer but 429 and 503)", async () => {
    for (const [status, code] of [[400, "invalid_request"], [500, "internal_error"], [409, "conflict"]] as const) {
      const server = await serve((_request, response) => problem(response, status, code, `prompt: no (${status})`))
      const client = createClient({ url: server.url, token: TOKEN })
      const error = await rejection(client.runs.get(RUN))
      expect(error.status).toBe(status)
      expect(server.requests).toHaveLength(1)
    }
  })

  it("maxRetries: 0 sends once", async () => {
    const server = await serve((_request, response) => problem(response, 503, "resource_unavailable", "down"))
    const client = createClient({ url: server.url, token: TOKEN, maxRetries: 0 })
    expect(await rejection(client.runs.get(RUN))).toBeInstanceOf(InternalServerError)
    expect(server.requests).toHaveLength(1)
  })
})

describe("errors", () => {
  const cases = [
    [400, "invalid_request", BadRequestError, { field: "prompt" }],
    [401, "authentication_required", AuthenticationError, {}],
    [403, "not_authorized", PermissionDeniedError, {}],
    [403, "feature_not_available", PermissionDeniedError, { feature: "metadata_filtering" }],
    [404, "resource_not_found", NotFoundError, { resource: "run", id: RUN }],
    [409, "conflict", ConflictError, {}],
    [413, "payload_too_large", AgentRunsError, { limit_bytes: 1024 }],
    [422, "operation_not_supported", UnprocessableEntityError, {}],
    [429, "rate_limited", RateLimitError, { retry_after_seconds: 5 }],
    [500, "internal_error", InternalServerError, {}],
    [503, "resource_unavailable", InternalServerError, {}]
  ] as const

  for (const [status, code, ErrorClass, extra] of cases) {
    it(`${status} ${code}: ${ErrorClass.name} with status, errorCode, message and body`, async () => {
      const body = problemBody(status, code, `the ${code} message`, { ...extra, trace_id: "t-1" })
      const server = await serve((_request, response) => {
        response.writeHead(status, { "content-type": "application/problem+json" })
        response.end(JSON.stringify(body))
      })
      const client = createClient({ url: server.url, token: TOKEN, maxRetries: 0 })
      const error = await rejection(client.runs.get(RUN))
      expect(error).toBeInstanceOf(ErrorClass)
      expect(error).toBeInstanceOf(AgentRunsError)
      expect(error).toBeInstanceOf(Error)
      expect(error.name).toBe(ErrorClass.name)
      expect(error.status).toBe(status)
      expect(error.errorCode).toBe(code)
      expect(error.message).toBe(`the ${code} message`)
      expect(error.body).toStrictEqual(body)
    })
  }

  it("an error answer that is not a problem: its class by status, its text as body", async () => {
    const server = await serve((_request, response) => {
      response.writeHead(502, { "content-type": "text/html" })
      response.end("<html>bad gateway</html>")
    })
    const client = createClient({ url: server.url, token: TOKEN, maxRetries: 0 })
    const error = await rejection(client.runs.get(RUN))
    expect(error).toBeInstanceOf(InternalServerError)
    expect(error.status).toBe(502)
    expect(error.body).toBe("<html>bad gateway</html>")
  })

  it("a problem's detail is the message when it has no error", async () => {
    const server = await serve((_request, response) => json(response, 404, { title: "Not Found", status: 404, detail: "no route" }))
    const client = createClient({ url: server.url, token: TOKEN })
    const error = await rejection(client.runs.get(RUN))
    expect(error).toBeInstanceOf(NotFoundError)
    expect(error.message).toBe("no route")
  })

  it("a success that does not fit the API's schema: AgentRunsError naming the answer", async () => {
    const server = await serve((_request, response) => json(response, 200, { run_id: "nope" }))
    const client = createClient({ url: server.url, token: TOKEN })
    const error = await rejection(client.runs.get(RUN))
    expect(error.constructor).toBe(AgentRunsError)
    expect(error.message).toMatch(/^unexpected answer/)
  })

  it("no answer within timeoutMs: TimeoutError (a ConnectionError), not retried", async () => {
    // The server never answers: only the timeout can end the call.
    const server = await serve(() => {})
    const client = createClient({ url: server.url, token: TOKEN, timeoutMs: 200 })
    const error = await rejection(client.runs.get(RUN))
    expect(error).toBeInstanceOf(TimeoutError)
    expect(error).toBeInstanceOf(ConnectionError)
    expect(error.status).toBeUndefined()
    // On a loaded machine the request may reach the server after the client gave up on it.
    for (const deadline = Date.now() + 10_000; server.requests.length === 0 && Date.now() < deadline;) {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(server.requests).toHaveLength(1)
  })

  it("a body that does not arrive within timeoutMs: TimeoutError", async () => {
    const server = await serve((_request, response) => {
      response.writeHead(200, { "content-type": "application/json" })
      response.write("{")
      setTimeout(() => response.end("}"), 1500)
    })
    const client = createClient({ url: server.url, token: TOKEN, timeoutMs: 200 })
    expect(await rejection(client.runs.get(RUN))).toBeInstanceOf(TimeoutError)
  })

  it("connection refused: ConnectionError after the retries", async () => {
    const port = await closedPort()
    const client = createClient({ url: `http://127.0.0.1:${port}`, token: TOKEN, maxRetries: 1 })
    const error = await rejection(client.runs.get(RUN))
    expect(error).toBeInstanceOf(ConnectionError)
    expect(error).not.toBeInstanceOf(TimeoutError)
    expect(error.status).toBeUndefined()
  })

  it("a connection refused, then accepted: the retry answers", async () => {
    const port = await closedPort()
    const client = createClient({ url: `http://127.0.0.1:${port}`, token: TOKEN, maxRetries: 2 })
    const started = Date.now()
    const pending = client.runs.get(RUN)
    // The first attempt is refused; the server is up before the first retry (0.375–0.5 s later).
    await new Promise((resolve) => setTimeout(resolve, 200))
    const up = createServer((_request, response) => json(response, 200, runItem()))
    await new Promise<void>((resolve) => up.listen(port, "127.0.0.1", resolve))
    servers.push({
      url: "",
      requests: [],
      close: () => new Promise<void>((resolve) => (up.closeAllConnections(), up.close(() => resolve())))
    })
    expect((await pending).run_id).toBe(RUN)
    expect(Date.now() - started).toBeGreaterThanOrEqual(350)
  })
})

describe("paging", () => {
  /** 3 pages of 2 runs: cursor `c1` then `c2`; the last page has no next cursor. */
  const pages: Handler = (request, response) => {
    const url = new URL(request.url, "http://localhost")
    const cursor = url.searchParams.get("cursor")
    const page = cursor === null ? 0 : Number(cursor.slice(1))
    const runs = [runItem(runIdOf(page * 2)), runItem(runIdOf(page * 2 + 1))]
    json(response, 200, {
      runs,
      page_info: page < 2 ? { has_next_page: true, next_cursor: `c${page + 1}` } : { has_next_page: false }
    })
  }

  it("iterates every run of every page, with the filters on each request", async () => {
    const server = await serve(pages)
    const client = createClient({ url: server.url, token: TOKEN })
    const ids: Array<string> = []
    for await (const run of client.runs.list({ state: ["QUEUED", "FAILED"], limit: 2, metadata: { team: "core" } })) {
      ids.push(run.run_id)
    }
    expect(ids).toEqual([0, 1, 2, 3, 4, 5].map(runIdOf))
    expect(server.requests).toHaveLength(3)
    const queries = server.requests.map((r) => new URL(r.url, "http://localhost").searchParams)
    for (const query of queries) {
      expect(query.getAll("state")).toEqual(["QUEUED", "FAILED"])
      expect(query.get("limit")).toBe("2")
      expect(query.get("metadata[team]")).toBe("core")
    }
    expect(queries.map((q) => q.get("cursor"))).toEqual([null, "c1", "c2"])
  })

  it("pages() answers page by page, and stops when the caller does", async () => {
    const server = await serve(pages)
    const client = createClient({ url: server.url, token: TOKEN })
    const seen: Array<number> = []
    for await (const page of client.runs.list().pages()) {
      seen.push(page.runs.length)
      if (seen.length === 2) break
    }
    expect(seen).toEqual([2, 2])
    expect(server.requests).toHaveLength(2)
    const single = await client.runs.listPage({ cursor: "c2", created_after: new Date("2026-01-01T00:00:00Z") })
    expect(single.page_info).toStrictEqual({ has_next_page: false })
    expect(new URL(server.requests[2]!.url, "http://localhost").searchParams.get("created_after")).toBe(
      "2026-01-01T00:00:00.000Z"
    )
  })

  it("a failing page rejects the iteration with its error", async () => {
    const server = await serve((request, response) =>
      request.url.includes("cursor=") ? problem(response, 400, "invalid_request", "cursor: malformed") : pages(request, response, 0))
    const client = createClient({ url: server.url, token: TOKEN })
    const seen: Array<string> = []
    const error = await rejection((async () => {
      for await (const run of client.runs.list()) seen.push(run.run_id)
    })())
    expect(seen).toHaveLength(2)
    expect(error).toBeInstanceOf(BadRequestError)
  })
})

describe("run events (Server-Sent Events)", () => {
  const EXECUTION = "01936f2a-8b7e-7111-b222-333344445555"
  const event = (sequence: number, event_type: string) => ({
    sequence,
    event_type,
    occurred_at: "2026-11-22T03:17:28.123Z",
    execution_id: EXECUTION
  })

  it("parses events (multi-line data, CRLF, comments, unknown events), resumes with Last-Event-ID after a drop, ends after the terminal event", async () => {
    const server = await serve((_request, response, index) => {
      response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
      if (index === 0) {
        const first = JSON.stringify(event(1, "run_created"), null, 2).split("\n").map((l) => `data: ${l}`).join("\n")
        response.write(`: open\n\n`)
        response.write(`id: 1\nevent: timeline\n${first}\n\n`)
        response.write(`id: 2\r\nevent: timeline\r\ndata: ${JSON.stringify(event(2, "run_queued"))}\r\n\r\n`)
        response.write(`event: other\ndata: ignored\n\n`)
        // The connection drops.
        setTimeout(() => response.destroy(), 50)
      } else {
        response.write(`: open\n\n`)
        response.write(`id: 3\nevent: timeline\ndata: ${JSON.stringify(event(3, "run_in_progress"))}\n\n`)
        response.write(`id: 4\nevent: timeline\ndata: ${JSON.stringify(event(4, "run_succeeded"))}\n\n`)
        response.write(`id: 5\nevent: timeline\ndata: ${JSON.stringify(event(5, "followup_received"))}\n\n`)
      }
    })
    const client = createClient({ url: server.url, token: TOKEN, teamUid: TEAM })
    const seen: Array<[string, string]> = []
    for await (const e of client.runs.events(RUN, { lastEventId: "0", untilEnded: true })) {
      if (e.event !== "timeline") throw new Error(`a ${e.event} event`)
      expect(e.data.occurred_at).toBe("2026-11-22T03:17:28.123Z")
      seen.push([e.id, e.data.event_type])
    }
    expect(seen).toEqual([["1", "run_created"], ["2", "run_queued"], ["3", "run_in_progress"], ["4", "run_succeeded"]])
    expect(server.requests).toHaveLength(2)
    expect(server.requests[0]).toMatchObject({ method: "GET", url: `/api/v1/agent/runs/${RUN}/events` })
    expect(server.requests[0]!.headers["last-event-id"]).toBe("0")
    expect(server.requests[0]!.headers["accept"]).toBe("text/event-stream")
    expect(server.requests[0]!.headers["authorization"]).toBe(`Bearer ${TOKEN}`)
    expect(server.requests[0]!.headers["x-team-uid"]).toBe(TEAM)
    expect(server.requests[1]!.headers["last-event-id"]).toBe("2")
  })

  it("stops when the signal aborts (the iteration ends, the connection closes)", async () => {
    let closed = false
    const server = await serve((_request, response) => {
      response.writeHead(200, { "content-type": "text/event-stream" })
      response.write(`id: 1\nevent: timeline\ndata: ${JSON.stringify(event(1, "run_created"))}\n\n`)
      response.on("close", () => {
        closed = true
      })
    })
    const client = createClient({ url: server.url, token: TOKEN })
    const controller = new AbortController()
    const seen: Array<number> = []
    for await (const e of client.runs.events(RUN, { signal: controller.signal })) {
      if (e.event === "timeline") seen.push(e.data.sequence)
      controller.abort()
    }
    expect(seen).toEqual([1])
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(closed).toBe(true)
  })

  it("breaking out of the loop closes the connection", async () => {
    let closed = false
    const server = await serve((_request, response) => {
      response.writeHead(200, { "content-type": "text/event-stream" })
      response.write(`id: 7\nevent: timeline\ndata: ${JSON.stringify(event(7, "run_created"))}\n\n`)
      response.on("close", () => {
        closed = true
      })
    })
    const client = createClient({ url: server.url, token: TOKEN })
    for await (const e of client.runs.events(RUN)) {
      expect(e.id).toBe("7")
      break
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(closed).toBe(true)
  })

  it("an error answer rejects the iteration with its class (404 → NotFoundError)", async () => {
    const server = await serve((_request, response) =>
      problem(response, 404, "resource_not_found", `run ${RUN} not found`, { resource: "run", id: RUN, trace_id: "t-9" }))
    const client = createClient({ url: server.url, token: TOKEN })
    const error = await rejection((async () => {
      for await (const _ of client.runs.events(RUN)) break
    })())
    expect(error).toBeInstanceOf(NotFoundError)
    expect(error).toMatchObject({ status: 404, errorCode: "resource_not_found", message: `run ${RUN} not found` })
    expect(error.body).toMatchObject({ resource: "run", id: RUN, trace_id: "t-9" })
  })

  it("without reconnect, a closed stream ends the iteration", async () => {
    const server = await serve((_request, response) => {
      response.writeHead(200, { "content-type": "text/event-stream" })
      response.end(`id: 1\nevent: timeline\ndata: ${JSON.stringify(event(1, "run_created"))}\n\n`)
    })
    const client = createClient({ url: server.url, token: TOKEN })
    const seen: Array<string> = []
    for await (const e of client.runs.events(RUN, { reconnect: false })) seen.push(e.id)
    expect(seen).toEqual(["1"])
    expect(server.requests).toHaveLength(1)
  })
})
