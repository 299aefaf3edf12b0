import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { hmacSha256, hmacSha256Sync, INLINE_LIMIT, sha256, sha256Sync, toHex } from "../src/internal/Sha256.js"

const webDigest = async (data: Uint8Array) => new Uint8Array(await globalThis.crypto.subtle.digest("SHA-256", data))
const webHmac = async (key: Uint8Array, data: Uint8Array) => {
  const k = await globalThis.crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"])
  return new Uint8Array(await globalThis.crypto.subtle.sign("HMAC", k, data))
}

describe("Sha256", () => {
  it("matches the FIPS 180-4 examples", () => {
    expect(toHex(sha256Sync(new Uint8Array()))).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    expect(toHex(sha256Sync(new TextEncoder().encode("abc")))).toBe(
      "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )
    expect(toHex(sha256Sync(new TextEncoder().encode("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")))).toBe(
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
    )
  })

  it("equals WebCrypto's digest on any input, across block boundaries", async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 300 }), async (data) => {
        expect(sha256Sync(data)).toStrictEqual(await webDigest(data))
      }),
      { numRuns: 300 }
    )
  })

  it("equals WebCrypto's HMAC on any key (shorter and longer than a block) and message", async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 1, maxLength: 150 }), fc.uint8Array({ maxLength: 300 }), async (key, data) => {
        expect(hmacSha256Sync(key, data)).toStrictEqual(await webHmac(key, data))
      }),
      { numRuns: 300 }
    )
  })

  it.effect("gives the same digest in line and through WebCrypto (inputs from INLINE_LIMIT on)", () =>
    Effect.gen(function*() {
      const large = new Uint8Array(INLINE_LIMIT + 5).map((_, i) => (i * 31) & 0xff)
      const key = new Uint8Array([1, 2, 3])
      expect(yield* sha256(large)).toStrictEqual(sha256Sync(large))
      expect(yield* hmacSha256(key, large)).toStrictEqual(hmacSha256Sync(key, large))
      const small = large.subarray(0, 100)
      expect(yield* sha256(small)).toStrictEqual(yield* Effect.promise(() => webDigest(small)))
    }))
})
