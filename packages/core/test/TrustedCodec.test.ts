import { describe, expect, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import * as fc from "fast-check"
import { ConversationResponse } from "../src/domain/Conversation.js"
import { Environment, ListEnvironmentsResponse } from "../src/domain/Environment.js"
import { Principal, Team, TokenRecord } from "../src/domain/Identity.js"
import { ListRunsResponse, RunAgentResponse, RunItem } from "../src/domain/Run.js"
import { ListScheduledAgentsResponse, ScheduledAgentItem } from "../src/domain/Schedule.js"
import { RunTimeline } from "../src/domain/Timeline.js"
import * as TrustedCodec from "../src/domain/TrustedCodec.js"
import { Delivery, IngressAccepted, Webhook } from "../src/domain/Webhook.js"
import { arbitrary } from "./support/arbitraries.js"

/** Property: on any value of `schema`, the trusted codec gives what the full codec gives. */
const sameAsSchema = <A, I>(schema: Schema.Schema<A, I>, numRuns = 150) => {
  const fullEncode = Schema.encodeSync(schema)
  const fullDecode = Schema.decodeUnknownSync(schema)
  const encode = TrustedCodec.encoder(schema)
  const decode = TrustedCodec.decoder(schema)
  fc.assert(
    fc.property(arbitrary(schema), (value) => {
      const wire = fullEncode(value)
      const fast = Either.getOrThrow(encode(value))
      // The same object, keys in the same order (the JSON text is the same).
      expect(fast).toStrictEqual(wire)
      expect(JSON.stringify(fast)).toBe(JSON.stringify(wire))
      // Decoding what was stored (its JSON text) gives the same value, of the same class.
      const stored = JSON.parse(JSON.stringify(wire))
      const decoded = Either.getOrThrow(decode(stored))
      const expected = fullDecode(stored)
      expect(Object.getPrototypeOf(decoded)).toBe(Object.getPrototypeOf(expected))
      expect(fullEncode(decoded)).toStrictEqual(fullEncode(expected))
    }),
    { numRuns }
  )
}

describe("TrustedCodec", () => {
  for (
    const [name, schema] of [
      ["RunItem", RunItem],
      ["ListRunsResponse", ListRunsResponse],
      ["RunAgentResponse", RunAgentResponse],
      ["Team", Team],
      ["Principal", Principal],
      ["TokenRecord", TokenRecord],
      ["Environment", Environment],
      ["ListEnvironmentsResponse", ListEnvironmentsResponse],
      ["ScheduledAgentItem", ScheduledAgentItem],
      ["ListScheduledAgentsResponse", ListScheduledAgentsResponse],
      ["RunTimeline", RunTimeline],
      ["ConversationResponse", ConversationResponse],
      ["Webhook", Webhook],
      ["Delivery", Delivery],
      ["IngressAccepted", IngressAccepted]
    ] as const
  ) {
    it(`encodes and decodes ${name} as its schema does`, () => sameAsSchema(schema as Schema.Schema<unknown, unknown>, 60))
  }

  it("drops keys outside the schema when decoding, as the schema does", () => {
    const decode = TrustedCodec.decoder(Schema.Struct({ a: Schema.Number }))
    expect(Either.getOrThrow(decode({ a: 1, b: 2 }))).toStrictEqual({ a: 1 })
  })

  it("falls back to the full decoder, and its error, on a value without the schema's shape", () => {
    const decode = TrustedCodec.decoder(Schema.Struct({ a: Schema.Number, b: Schema.NullOr(Schema.String) }))
    const wrong = decode({ a: 1, b: 2 })
    expect(Either.isLeft(wrong)).toBe(true)
    if (Either.isLeft(wrong)) expect(wrong.left.message).toContain("b")
    expect(Either.isLeft(decode({ b: null }))).toBe(true)
  })

  it("skips refinements (the value was checked when it was written)", () => {
    const decode = TrustedCodec.decoder(Schema.Struct({ n: Schema.Number.pipe(Schema.positive()) }))
    expect(Either.getOrThrow(decode({ n: -1 }))).toStrictEqual({ n: -1 })
  })
})
