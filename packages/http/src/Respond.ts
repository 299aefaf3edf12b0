/**
 * Success bodies that this service's own code built, encoded without checking them again: the
 * trusted codec (core's TrustedCodec, docs/performance.md) applies the schema's transformations
 * only. Used by the endpoints that answer the most requests (run list, run, create); the body is
 * the one HttpApi's own encoding would send (core's TrustedCodec tests).
 */
import { TrustedCodec } from "@agent-runs/core"
import { HttpServerResponse } from "@effect/platform"
import { Effect, type Schema } from "effect"

/** A handler's answer: `value` encoded with `schema` as a JSON response with `status`. */
export const respond = <A, I>(schema: Schema.Schema<A, I>, status = 200) => {
  const encode = TrustedCodec.encoder(schema)
  return (value: A) =>
    Effect.map(Effect.orDie(encode(value)), (body) => HttpServerResponse.unsafeJson(body, { status }))
}
