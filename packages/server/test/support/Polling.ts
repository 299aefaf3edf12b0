/**
 * Test support for watching a server start: requests on connections of their own (no keep-alive,
 * so that no test holds a stopping server open), waiting until a port answers, and polling the
 * API with a token until `/readyz` says ready. Shared with packages/cli/test (the bundled server).
 */
import { freePort } from "@agent-runs/testing"
import { Duration, Effect, Schedule } from "effect"
import { type IncomingHttpHeaders, request } from "node:http"

/** What a request was answered. */
export interface Reply {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  /** The body as JSON, or its text when it is not JSON. */
  readonly json: unknown
}

/** What a request is answered while the service starts (for `toMatchObject`): 503 with `Retry-After`, saying so. */
export const STARTING = {
  status: 503,
  headers: { "retry-after": "5", "x-should-retry": "true", "content-type": "application/problem+json" },
  json: { error_code: "resource_unavailable", retryable: true, error: "the service is starting; try again in a few seconds" }
} as const

/** A port free on 127.0.0.1 a moment ago. */
export const freeLoopbackPort = Effect.promise(freePort)

const parsed = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** `GET url` (or `init.method` with a JSON body), with the bearer `token` if given; fails when nothing answers. */
export const send = (url: string, token?: string, init: { readonly method?: string; readonly body?: string } = {}) =>
  Effect.async<Reply, Error>((resume) => {
    const headers: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` }
    if (init.body !== undefined) headers["content-type"] = "application/json"
    const sent = request(url, { method: init.method ?? "GET", headers, agent: false }, (response) => {
      let text = ""
      response.setEncoding("utf8").on("data", (chunk: string) => (text += chunk))
      response.on("end", () => resume(Effect.succeed({ status: response.statusCode ?? 0, headers: response.headers, json: parsed(text) })))
      response.on("error", (error) => resume(Effect.fail(error)))
    })
    sent.on("error", (error) => resume(Effect.fail(error)))
    sent.end(init.body)
    return Effect.sync(() => sent.destroy())
  })

/** How often the helpers below ask. */
const EVERY = Schedule.spaced(Duration.millis(10))

/** The first answer of `url` (with the bearer `token` if given), asked every 10 ms until the port accepts connections (up to 30 s). */
export const untilAnswered = (url: string, token?: string) =>
  send(url, token).pipe(Effect.retry({ schedule: EVERY, times: 3_000 }), Effect.orDie)

/**
 * `GET /api/v1/agent/runs` with `token`, then `/readyz`, every 10 ms until `/readyz` answers 200
 * (up to 30 s): every answer of the API on the way, the last one given after `/readyz` said ready.
 */
export const untilReady = (base: string, token: string) =>
  Effect.gen(function*() {
    const replies: Array<Reply> = []
    for (let i = 0; i < 3_000; i++) {
      replies.push(yield* send(`${base}/api/v1/agent/runs`, token))
      if ((yield* send(`${base}/readyz`)).status === 200) {
        replies.push(yield* send(`${base}/api/v1/agent/runs`, token))
        return replies as ReadonlyArray<Reply>
      }
      yield* Effect.sleep(Duration.millis(10))
    }
    return yield* Effect.dieMessage(`${base}/readyz did not answer 200 within 30 s`)
  }).pipe(Effect.orDie)
