import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Schema } from "effect"
import {
  ApiError,
  AuthenticationRequired,
  Conflict,
  FeatureNotAvailable,
  HttpErrorCode,
  InternalError,
  InvalidRequest,
  MethodNotAllowed,
  NotAuthorized,
  OperationNotSupported,
  PayloadTooLarge,
  RateLimited,
  ResourceNotFound,
  ResourceUnavailable,
  UnsupportedMediaType
} from "../src/domain/Errors.js"

describe("Errors", () => {
  const all = [
    new InvalidRequest({ message: "prompt: is required", field: "prompt" }),
    new AuthenticationRequired({ message: "missing bearer token" }),
    new NotAuthorized({ message: "viewers cannot create runs" }),
    new FeatureNotAvailable({ message: "metadata filtering is not enabled", feature: "metadata_filtering" }),
    ResourceNotFound.of("run", "x"),
    new Conflict({ message: "run is PENDING; try again shortly", retryable: true }),
    new OperationNotSupported({ message: "self-hosted runs cannot be cancelled" }),
    new RateLimited({ message: "slow down", retryAfterSeconds: 30 }),
    new PayloadTooLarge({ message: "body over 256 KB", limitBytes: 262144 }),
    new MethodNotAllowed({ message: "PATCH is not allowed on /api/v1/agent/runs; use GET, HEAD, POST", allow: ["GET", "HEAD", "POST"] }),
    new UnsupportedMediaType({ message: "body: sent as text/plain", expected: "application/json" }),
    new InternalError({ message: "internal error" }),
    new ResourceUnavailable({ message: "storage unavailable" })
  ] as const

  it("there is exactly one error per error_code", () => {
    expect(all.map((e) => e.errorCode).sort()).toEqual([...HttpErrorCode.literals].sort())
  })

  it("carries retryable: retryable by default only for 429, 500 and 503", () => {
    const retryable = all.filter((e) => e.retryable).map((e) => e.errorCode).sort()
    expect(retryable).toEqual(["conflict", "internal_error", "rate_limited", "resource_unavailable"])
    expect(new Conflict({ message: "webhook limit reached" }).retryable).toBe(false)
  })

  it("validation errors name the field in the message", () => {
    const e = InvalidRequest.forField("limit", "must be between 1 and 500")
    expect(e.field).toBe("limit")
    expect(e.message).toBe("limit: must be between 1 and 500")
    expect(ResourceNotFound.of("schedule").message).toBe("schedule not found")
  })

  it.effect("errors are yieldable failures and survive the wire schema", () =>
    Effect.gen(function* () {
      const failed = yield* Effect.either(Effect.gen(function* () {
        return yield* ResourceNotFound.of("run", "abc")
      }))
      expect(Either.isLeft(failed) && failed.left._tag).toBe("ResourceNotFound")
      for (const e of all) {
        const encoded = Schema.encodeSync(ApiError)(e)
        const decoded = Schema.decodeUnknownSync(ApiError)(JSON.parse(JSON.stringify(encoded)))
        expect(decoded._tag).toBe(e._tag)
        expect(decoded.retryable).toBe(e.retryable)
        expect(decoded.message).toBe(e.message)
      }
    }))
})
