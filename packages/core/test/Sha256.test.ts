import { describe, expect, it } from "@effect/vitest"
import { Effect, Encoding } from "effect"
import * as fc from "fast-check"
import { hmacSha256, INLINE_LIMIT, sha256, sha256Hex } from "../src/internal/Sha256.js"

const webDigest = async (data: Uint8Array) => new Uint8Array(await globalThis.crypto.subtle.digest("SHA-256", data))
const webHmac = async (key: Uint8Array, data: Uint8Array) => {
  const k = await globalThis.crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"])
  return new Uint8Array(await globalThis.crypto.subtle.sign("HMAC", k, data))
}

/** Runs a digest that must complete in line: `runSync` throws if it would wait for WebCrypto. */
const inLine = <A>(effect: Effect.Effect<A>): A => Effect.runSync(effect)

const text = (s: string) => new TextEncoder().encode(s)

describe("Sha256", () => {
  it("matches the FIPS 180-4 examples, as lowercase hex", () => {
    expect(inLine(sha256Hex(new Uint8Array()))).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    expect(inLine(sha256Hex(text("abc")))).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    expect(inLine(sha256Hex(text("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")))).toBe(
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
    )
  })

  it("matches RFC 4231's HMAC-SHA-256 test cases (a short key, and a key longer than a block)", () => {
    const hmacHex = (key: Uint8Array, data: Uint8Array) => Encoding.encodeHex(inLine(hmacSha256(key, data)))
    expect(hmacHex(new Uint8Array(20).fill(0x0b), text("Hi There"))).toBe(
      "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
    )
    expect(hmacHex(new Uint8Array(131).fill(0xaa), text("Test Using Larger Than Block-Size Key - Hash Key First"))).toBe(
      "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
    )
  })

  it("equals WebCrypto's digest on any input, across block boundaries, computed in line", async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 300 }), async (data) => {
        expect(inLine(sha256(data))).toStrictEqual(await webDigest(data))
      }),
      { numRuns: 300 }
    )
  })

  it("equals WebCrypto's HMAC on any key (shorter and longer than a block) and message, computed in line", async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 1, maxLength: 150 }), fc.uint8Array({ maxLength: 300 }), async (key, data) => {
        expect(inLine(hmacSha256(key, data))).toStrictEqual(await webHmac(key, data))
      }),
      { numRuns: 300 }
    )
  })

  it("hashes inputs below INLINE_LIMIT in line, and from INLINE_LIMIT on through WebCrypto", () => {
    const key = new Uint8Array([1, 2, 3])
    const below = new Uint8Array(INLINE_LIMIT - 1)
    expect(() => inLine(sha256(below))).not.toThrow()
    expect(() => inLine(hmacSha256(key, below))).not.toThrow()
    // From the limit on, the digest waits for WebCrypto: it cannot complete synchronously.
    const at = new Uint8Array(INLINE_LIMIT)
    expect(() => inLine(sha256(at))).toThrow()
    expect(() => inLine(hmacSha256(key, at))).toThrow()
  })

  it.effect("gives the same digest in line and through WebCrypto on either side of INLINE_LIMIT", () =>
    Effect.gen(function*() {
      const large = new Uint8Array(INLINE_LIMIT + 5).map((_, i) => (i * 31) & 0xff)
      const key = new Uint8Array([1, 2, 3])
      const small = large.subarray(0, INLINE_LIMIT - 1)
      expect(yield* sha256(large)).toStrictEqual(yield* Effect.promise(() => webDigest(large)))
      expect(yield* hmacSha256(key, large)).toStrictEqual(yield* Effect.promise(() => webHmac(key, large)))
      expect(yield* sha256(small)).toStrictEqual(yield* Effect.promise(() => webDigest(small)))
      expect(yield* hmacSha256(key, small)).toStrictEqual(yield* Effect.promise(() => webHmac(key, small)))
    }))
})
