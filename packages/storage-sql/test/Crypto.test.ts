import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Redacted } from "effect"
import * as fc from "fast-check"
import { randomBytes } from "node:crypto"
import * as Crypto from "../src/Crypto.js"

const key = () => Redacted.make(new Uint8Array(randomBytes(32)))
const plaintext = fc.string({ unit: "binary", maxLength: 300 })
const rowAad = fc.array(fc.string(), { minLength: 1, maxLength: 3 }).map((parts) => Crypto.aad(...parts))

describe("Crypto", () => {
  it.effect.prop(
    "opens what it sealed for the same row",
    [plaintext, rowAad],
    ([text, aad]) =>
      Effect.gen(function* () {
        const k = key()
        const sealed = yield* Crypto.seal(k, Redacted.make(text), aad)
        expect(sealed.length).toBe(12 + Buffer.byteLength(text, "utf8") + 16)
        expect(Redacted.value(yield* Crypto.open(k, sealed, aad))).toBe(text)
      }),
    { fastCheck: { numRuns: 200 } }
  )

  it.effect("uses a fresh nonce for every value, so equal values look different", () =>
    Effect.gen(function* () {
      const k = key()
      const sealed = yield* Effect.forEach([1, 2, 3], () => Crypto.seal(k, Redacted.make("same"), "row"))
      expect(new Set(sealed.map((s) => s.subarray(0, 12).toString("hex"))).size).toBe(3)
      expect(new Set(sealed.map((s) => s.toString("hex"))).size).toBe(3)
    }))

  it.effect.prop(
    "refuses a ciphertext moved to another row",
    [plaintext, rowAad, rowAad],
    ([text, from, to]) =>
      Effect.gen(function* () {
        fc.pre(from !== to)
        const k = key()
        const sealed = yield* Crypto.seal(k, Redacted.make(text), from)
        const moved = yield* Effect.either(Crypto.open(k, sealed, to))
        expect(Either.isLeft(moved) && moved.left.reason).toBe("cannot_open")
      }),
    { fastCheck: { numRuns: 200 } }
  )

  it.effect("binds a secret to its team and name, and a webhook secret to its uid and version", () =>
    Effect.gen(function* () {
      const k = key()
      const sealed = yield* Crypto.seal(k, Redacted.make("s3cret"), Crypto.aad("secret", "teamA", "TOKEN"))
      for (const other of [
        Crypto.aad("secret", "teamB", "TOKEN"),
        Crypto.aad("secret", "teamA", "OTHER"),
        Crypto.aad("webhook", "teamA", "TOKEN")
      ]) {
        expect(Either.isLeft(yield* Effect.either(Crypto.open(k, sealed, other)))).toBe(true)
      }
      const v1 = yield* Crypto.seal(k, Redacted.make("old"), Crypto.aad("webhook", "hook", 1))
      expect(Either.isLeft(yield* Effect.either(Crypto.open(k, v1, Crypto.aad("webhook", "hook", 2))))).toBe(true)
    }))

  it.effect.prop(
    "refuses a ciphertext with any bit flipped",
    [plaintext, fc.nat(), fc.integer({ min: 0, max: 7 })],
    ([text, at, bit]) =>
      Effect.gen(function* () {
        const k = key()
        const sealed = yield* Crypto.seal(k, Redacted.make(text), "row")
        const tampered = Buffer.from(sealed)
        const index = at % tampered.length
        tampered[index] = tampered[index]! ^ (1 << bit)
        expect(Either.isLeft(yield* Effect.either(Crypto.open(k, tampered, "row")))).toBe(true)
      }),
    { fastCheck: { numRuns: 200 } }
  )

  it.effect("refuses another key, a truncated value, and a key of the wrong size", () =>
    Effect.gen(function* () {
      const sealed = yield* Crypto.seal(key(), Redacted.make("value"), "row")
      const wrongKey = yield* Effect.either(Crypto.open(key(), sealed, "row"))
      expect(Either.isLeft(wrongKey) && wrongKey.left.reason).toBe("cannot_open")
      const truncated = yield* Effect.either(Crypto.open(key(), sealed.subarray(0, 20), "row"))
      expect(Either.isLeft(truncated) && truncated.left.reason).toBe("cannot_open")
      const short = Redacted.make(new Uint8Array(16))
      const badSeal = yield* Effect.either(Crypto.seal(short, Redacted.make("value"), "row"))
      expect(Either.isLeft(badSeal) && badSeal.left.reason).toBe("bad_key")
      const badOpen = yield* Effect.either(Crypto.open(short, sealed, "row"))
      expect(Either.isLeft(badOpen) && badOpen.left.reason).toBe("bad_key")
    }))

  it("names rows unambiguously", () => {
    expect(Crypto.aad("a", "bc")).not.toBe(Crypto.aad("ab", "c"))
    expect(Crypto.aad("a:1", "b")).not.toBe(Crypto.aad("a", "1:b"))
    expect(Crypto.aad("webhook", "x", 2)).toBe(Crypto.aad("webhook", "x", "2"))
  })
})
