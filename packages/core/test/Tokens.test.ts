import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { generateToken, hashToken } from "../src/services/Tokens.js"

/** The bytes behind a base64url text (no padding). */
const fromBase64url = (text: string): Uint8Array =>
  Uint8Array.from(atob(text.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0))

describe("Identities tokens", () => {
  it.effect("a token is ar_ and 32 random bytes in base64url (43 characters, no padding)", () =>
    Effect.gen(function*() {
      const tokens = yield* Effect.replicateEffect(generateToken, 200)
      for (const token of tokens) {
        expect(token).toMatch(/^ar_[A-Za-z0-9_-]{43}$/)
        expect(fromBase64url(token.slice(3))).toHaveLength(32)
      }
      expect(new Set(tokens).size).toBe(tokens.length)
      // Over 200 × 32 random bytes every byte value shows up; a constant or narrow source would not.
      const seen = new Set(tokens.flatMap((t) => [...fromBase64url(t.slice(3))]))
      expect(seen.size).toBe(256)
    }))

  it.effect("hashToken is SHA-256 in lowercase hex (known vectors)", () =>
    Effect.gen(function*() {
      expect(yield* hashToken("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
      expect(yield* hashToken("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
      expect(yield* hashToken("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")).toBe(
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
      )
      // The text is hashed as UTF-8: "é" is the two bytes c3 a9 (digest computed with OpenSSL).
      expect(yield* hashToken("é")).toBe("4a99557e4033c3539de2eb65472017cad5f9557f7a0625a09f1c3f6e2ba69c4c")
    }))

  it.effect.prop(
    "hashToken is 64 lowercase hex characters, the same for the same token, different for different tokens",
    [fc.string({ unit: "binary" }), fc.string({ unit: "binary" })],
    ([a, b]) =>
      Effect.gen(function*() {
        const [ha, hb] = [yield* hashToken(a), yield* hashToken(b)]
        expect(ha).toMatch(/^[0-9a-f]{64}$/)
        expect(yield* hashToken(a)).toBe(ha)
        expect(ha === hb).toBe(a === b)
      }),
    { fastCheck: { numRuns: 200 } }
  )
})
