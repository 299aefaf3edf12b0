/**
 * The definitions applier's target over HTTP, without a server: a server that cannot be reached is
 * named in the error. What a server refuses (`the server answered not_authorized: …`, exit 4) is
 * tested black-box with `agent-runs apply` in examples/server/test/definitions.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { createServer } from "node:net"
import { httpTarget } from "../src/HttpTarget.js"

/** A loopback port nothing listens on (it was free a moment ago). */
const closedPort = Effect.async<number>((resume) => {
  const server = createServer()
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

describe("httpTarget", () => {
  it.live("a server that cannot be reached: could not reach URL", () =>
    Effect.gen(function*() {
      const server = `http://127.0.0.1:${yield* closedPort}`
      const target = yield* httpTarget({ server, token: Redacted.make("ar_x"), team: Option.none() })
      const error = yield* Effect.flip(target.listWebhooks)
      expect(error._tag).toBe("ServerError")
      expect(error.message).toMatch(new RegExp(`^could not reach ${server}: `))
      expect(error.errorCode).toBeUndefined()
    }))
})
