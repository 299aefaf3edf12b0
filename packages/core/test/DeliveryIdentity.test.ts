import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as fc from "fast-check"
import { deliveryIdentity, type IdentityInput, MAX_ID_LENGTH, SENDER_DELIVERY_HEADER } from "../src/domain/DeliveryIdentity.js"

const bytes = (text: string) => new TextEncoder().encode(text)

const input = (overrides: Partial<IdentityInput> = {}): IdentityInput => ({
  deliveryIdHeader: null,
  providerDeliveryId: Option.none(),
  headers: {},
  body: bytes("{\"event\":\"push\"}"),
  ...overrides
})

const id = fc.string({ minLength: 1, maxLength: 40 }).filter((s) => s.trim() !== "")

describe("deliveryIdentity", () => {
  it.effect("prefers the configured header, then the provider's id, then the sender's header, then the body", () =>
    Effect.gen(function*() {
      const headers = { "X-Event-Id": "configured-1", [SENDER_DELIVERY_HEADER]: "sender-1" }
      const all = input({ deliveryIdHeader: "x-event-id", providerDeliveryId: Option.some("provider-1"), headers })
      expect(yield* deliveryIdentity(all)).toEqual({ source: "header", key: "header:configured-1" })
      expect(yield* deliveryIdentity({ ...all, deliveryIdHeader: null })).toEqual({ source: "provider", key: "provider:provider-1" })
      expect(yield* deliveryIdentity({ ...all, deliveryIdHeader: null, providerDeliveryId: Option.none() })).toEqual({
        source: "sender",
        key: "sender:sender-1"
      })
      const body = yield* deliveryIdentity(input())
      expect(body.source).toBe("body")
      expect(body.key).toMatch(/^body:[0-9a-f]{64}$/)
    }))

  it.effect("falls through a configured header the request lacks, and blank values", () =>
    Effect.gen(function*() {
      const lacking = input({ deliveryIdHeader: "x-event-id", headers: { [SENDER_DELIVERY_HEADER]: " s " } })
      expect(yield* deliveryIdentity(lacking)).toEqual({ source: "sender", key: "sender:s" })
      const blank = input({ deliveryIdHeader: "x-event-id", headers: { "x-event-id": "  " }, providerDeliveryId: Option.some(" ") })
      expect((yield* deliveryIdentity(blank)).source).toBe("body")
    }))

  it.effect("bounds long ids by hashing them; equal long ids stay equal", () =>
    Effect.gen(function*() {
      const long = "x".repeat(MAX_ID_LENGTH + 1)
      const a = yield* deliveryIdentity(input({ headers: { [SENDER_DELIVERY_HEADER]: long } }))
      const b = yield* deliveryIdentity(input({ headers: { [SENDER_DELIVERY_HEADER]: long }, body: bytes("other") }))
      expect(a.key).toMatch(/^sender:sha256:[0-9a-f]{64}$/)
      expect(a).toEqual(b)
      const exact = yield* deliveryIdentity(input({ headers: { [SENDER_DELIVERY_HEADER]: "y".repeat(MAX_ID_LENGTH) } }))
      expect(exact.key).toBe(`sender:${"y".repeat(MAX_ID_LENGTH)}`)
    }))

  it.effect.prop("identical bodies without an id are duplicates; different bodies are not", [fc.uint8Array(), fc.uint8Array()], ([a, b]) =>
    Effect.gen(function*() {
      const first = yield* deliveryIdentity(input({ body: a }))
      expect(yield* deliveryIdentity(input({ body: Uint8Array.from(a) }))).toEqual(first)
      const other = yield* deliveryIdentity(input({ body: b }))
      expect(other.key === first.key).toBe(Buffer.from(a).equals(Buffer.from(b)))
    }))

  it.effect.prop("an id never collides with an id of another source", [id], ([value]) =>
    Effect.gen(function*() {
      const keys = new Set([
        (yield* deliveryIdentity(input({ deliveryIdHeader: "x-id", headers: { "x-id": value } }))).key,
        (yield* deliveryIdentity(input({ providerDeliveryId: Option.some(value) }))).key,
        (yield* deliveryIdentity(input({ headers: { [SENDER_DELIVERY_HEADER]: value } }))).key
      ])
      expect(keys.size).toBe(3)
    }))

  it.effect("header names match in any case", () =>
    Effect.gen(function*() {
      const found = yield* deliveryIdentity(input({ deliveryIdHeader: "X-Event-ID", headers: { "x-event-id": "e-1" } }))
      expect(found.key).toBe("header:e-1")
    }))
})
