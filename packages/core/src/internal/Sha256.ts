/**
 * SHA-256 and HMAC-SHA-256 for the request paths: every API request hashes its token, every signed
 * webhook delivery computes an HMAC. WebCrypto's digest is asynchronous (a round trip through the
 * thread pool and a suspended fiber, tens to hundreds of microseconds a request), so a small input
 * is hashed in line by `@noble/hashes` (audited, synchronous, pure JavaScript); an input of
 * `INLINE_LIMIT` bytes or more goes to WebCrypto, which hashes it natively (several times faster
 * than JavaScript) off the event loop, so that a large body does not hold the event loop.
 * Checked against WebCrypto by the property tests in test/Sha256.test.ts.
 */
import { hmac } from "@noble/hashes/hmac.js"
import { sha256 as nobleSha256 } from "@noble/hashes/sha2.js"
import { Effect, Encoding } from "effect"

/** Inputs at least this large are hashed by WebCrypto off the event loop. */
export const INLINE_LIMIT = 64 * 1024

/** WebCrypto takes bytes over an `ArrayBuffer` (the DOM's typing; every input here is one). */
const bufferSource = (bytes: Uint8Array) => bytes as Uint8Array<ArrayBuffer>

const webDigest = (data: Uint8Array) =>
  Effect.promise(() => globalThis.crypto.subtle.digest("SHA-256", bufferSource(data))).pipe(Effect.map((d) => new Uint8Array(d)))

const webHmac = (key: Uint8Array, data: Uint8Array) =>
  Effect.promise(async () => {
    const cryptoKey = await globalThis.crypto.subtle.importKey("raw", bufferSource(key), { name: "HMAC", hash: "SHA-256" }, false, ["sign"])
    return new Uint8Array(await globalThis.crypto.subtle.sign("HMAC", cryptoKey, bufferSource(data)))
  })

/** The SHA-256 of `data`: in line when small, by WebCrypto when large. */
export const sha256 = (data: Uint8Array): Effect.Effect<Uint8Array> =>
  data.length < INLINE_LIMIT ? Effect.sync(() => nobleSha256(data)) : webDigest(data)

/** The HMAC-SHA-256 of `data` under `key`: in line when small, by WebCrypto when large. */
export const hmacSha256 = (key: Uint8Array, data: Uint8Array): Effect.Effect<Uint8Array> =>
  data.length < INLINE_LIMIT ? Effect.sync(() => hmac(nobleSha256, key, data)) : webHmac(key, data)

/** The SHA-256 of `data` as 64 lowercase hex characters. */
export const sha256Hex = (data: Uint8Array): Effect.Effect<string> => Effect.map(sha256(data), Encoding.encodeHex)
