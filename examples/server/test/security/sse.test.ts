/**
 * Threat (issue 15, finding 10): a run's live event stream (`GET /agent/runs/{runId}/events`,
 * Server-Sent Events) holds a connection and polls storage for as long as its client keeps it
 * open. Any member could open as many as it liked (one principal could take every connection and
 * the database's attention), and a stream opened with a token kept flowing after an administrator
 * revoked that token: revocation did not cut off someone already listening.
 *
 * Attack, with a member's token through the bundled server on SQLite (runs kept QUEUED):
 * - open streams on one run until refused, with the default caps (16 per principal);
 * - with a server capped at 5 streams in all, open streams as two principals until refused;
 * - open a stream with a token, then revoke the token through the admin API
 *   (`DELETE /api/v1/admin/tokens/{id}`).
 *
 * Must happen: the 17th stream of one principal is a 429 `rate_limited` whose `error` names the
 * per-principal cap, with `Retry-After`; another principal still gets its streams, and a closed
 * stream gives its slot back; past the global cap any principal gets a 429 naming that cap; the
 * stream of a revoked token ends within a few seconds (the default re-check is every 3 s), and
 * reconnecting with it is a 401.
 */
import { Effect, Exit, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, makeTeam, startServer, type TestServer } from "../harness.js"

const PER_PRINCIPAL = 16

const started = (overrides: Parameters<typeof startServer>[1] = {}) => {
  const scope = Effect.runSync(Scope.make())
  let server: TestServer | undefined
  beforeAll(async () => {
    server = await Effect.runPromise(Scope.extend(startServer("sqlite", overrides), scope))
  }, 60_000)
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))
  return () => server!
}

/** An open event stream: its response and a way to close it. */
interface Opened {
  readonly status: number
  readonly response: Response
  readonly close: () => void
}

const open = async (server: TestServer, runId: string, token: string): Promise<Opened> => {
  const controller = new AbortController()
  const response = await fetch(`${server.url}/api/v1/agent/runs/${runId}/events`, {
    headers: { authorization: `Bearer ${token}` },
    signal: controller.signal
  })
  return { status: response.status, response, close: () => controller.abort() }
}

/** Reads the stream until it ends; answers when (ms after `from`) and the text read. */
const untilEnd = async (response: Response, from: number, timeoutMs: number) => {
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let text = ""
  const deadline = setTimeout(() => void reader.cancel(), timeoutMs)
  try {
    while (true) {
      const { done, value } = await reader.read()
      if (done) break
      text += decoder.decode(value)
    }
  } catch {
    // cancelled at the deadline
  } finally {
    clearTimeout(deadline)
  }
  return { afterMs: Date.now() - from, text }
}

/** Tries to open one stream more; the refusal's problem body (a stream opened anyway is kept in `streams`). */
const refusal = async (server: TestServer, runId: string, token: string, streams: Array<Opened>) => {
  const attempt = await open(server, runId, token)
  if (attempt.status === 200) streams.push(attempt)
  expect(attempt.status).toBe(429)
  const body = (await attempt.response.json()) as { readonly error_code: string; readonly error: string }
  return { body, headers: attempt.response.headers }
}

/** A run that stays running (its stream ends only when the run ends). */
const createRun = async (server: TestServer, token: string) => {
  const created = await call(server, "POST", "/api/v1/agent/runs", { token, body: { prompt: "stream me\n@sleep 120000", team: true } })
  expect(created.status).toBe(200)
  return created.body.run_id as string
}

describe("event streams: caps", () => {
  const server = started()

  it("one principal gets 16 streams; the 17th is a 429 naming the per-principal cap; others are not affected", async () => {
    const team = await makeTeam(server(), "sse caps")
    const runId = await createRun(server(), team.tokens.member)
    const streams: Array<Opened> = []
    try {
      for (let i = 0; i < PER_PRINCIPAL; i++) {
        const stream = await open(server(), runId, team.tokens.member)
        streams.push(stream)
        expect(stream.status, `stream ${i}`).toBe(200)
      }
      const refused = await refusal(server(), runId, team.tokens.member, streams)
      expect(refused.body.error_code).toBe("rate_limited")
      expect(refused.body.error).toMatch(/16 per principal/)
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0)

      // Another principal of the team has its own streams.
      const other = await open(server(), runId, team.tokens.admin)
      streams.push(other)
      expect(other.status).toBe(200)

      // A closed stream gives its slot back.
      streams.shift()!.close()
      let reopened: Opened | undefined
      for (let attempt = 0; attempt < 50 && reopened?.status !== 200; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 100))
        reopened = await open(server(), runId, team.tokens.member)
        if (reopened.status !== 200) await reopened.response.text()
      }
      expect(reopened?.status).toBe(200)
      streams.push(reopened!)
    } finally {
      for (const stream of streams) stream.close()
    }
  })
})

describe("event streams: the global cap", () => {
  const server = started({ eventStreams: { max: 5 } })

  it("past the server's cap every principal gets a 429 naming it", async () => {
    const team = await makeTeam(server(), "sse global")
    const runId = await createRun(server(), team.tokens.member)
    const streams: Array<Opened> = []
    try {
      for (const token of [team.tokens.member, team.tokens.member, team.tokens.member, team.tokens.admin, team.tokens.admin]) {
        const stream = await open(server(), runId, token)
        streams.push(stream)
        expect(stream.status).toBe(200)
      }
      const refused = await refusal(server(), runId, team.tokens.viewer, streams)
      expect(refused.body.error_code).toBe("rate_limited")
      expect(refused.body.error).toMatch(/5 in all/)
    } finally {
      for (const stream of streams) stream.close()
    }
  })
})

describe("event streams: revocation", () => {
  const server = started()

  it("the stream of a revoked token ends within a few seconds; reconnecting is a 401", async () => {
    const team = await makeTeam(server(), "sse revocation")
    const runId = await createRun(server(), team.tokens.member)
    const principal = await call(server(), "POST", "/api/v1/admin/principals", {
      token: server().adminToken,
      body: { type: "user", display_name: "listener", memberships: [{ team_uid: team.uid, role: "member" }] }
    })
    expect(principal.status).toBe(201)
    const issued = await call(server(), "POST", `/api/v1/admin/principals/${principal.body.uid}/tokens`, {
      token: server().adminToken,
      body: { name: "listener" }
    })
    expect(issued.status).toBe(201)
    const token = issued.body.token as string

    const stream = await open(server(), runId, token)
    expect(stream.status).toBe(200)
    try {
      // Still open a while later: the re-checks pass while the token is valid.
      await new Promise((resolve) => setTimeout(resolve, 3_500))
      const revokedAt = Date.now()
      const revoked = await call(server(), "DELETE", `/api/v1/admin/tokens/${issued.body.token_id}`, {
        token: server().adminToken
      })
      expect(revoked.status).toBeLessThan(300)
      const ended = await untilEnd(stream.response, revokedAt, 15_000)
      expect(ended.afterMs).toBeLessThan(6_000)
      expect(ended.text).toContain(": closed: ")
      const again = await call(server(), "GET", `/api/v1/agent/runs/${runId}/events`, { token })
      expect(again.status).toBe(401)
    } finally {
      stream.close()
    }
  }, 30_000)
})
