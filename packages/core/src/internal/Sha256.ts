/**
 * SHA-256 and HMAC-SHA-256 (FIPS 180-4, RFC 2104) for the request paths: every API request hashes
 * its token, every signed webhook delivery computes an HMAC. WebCrypto's digest is asynchronous
 * (a round trip through the thread pool and a suspended fiber, about half a millisecond a request
 * on the bench machine), so a small input is hashed here, in line; an input of `INLINE_LIMIT`
 * bytes or more goes to WebCrypto, so that a large body does not hold the event loop.
 * Checked against WebCrypto by the property tests in test/Sha256.test.ts.
 */
import { Effect } from "effect"

/** Inputs at least this large are hashed by WebCrypto off the event loop. */
export const INLINE_LIMIT = 64 * 1024

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2
])

const W = new Uint32Array(64)

/** The SHA-256 of `data`, computed in line. */
export const sha256Sync = (data: Uint8Array): Uint8Array => {
  const length = data.length
  // The message, a 0x80 byte, zeros, and its length in bits (64-bit big-endian): whole blocks.
  const blocks = Math.ceil((length + 9) / 64)
  const padded = new Uint8Array(blocks * 64)
  padded.set(data)
  padded[length] = 0x80
  const view = new DataView(padded.buffer)
  view.setUint32(padded.length - 8, Math.floor(length / 0x20000000), false)
  view.setUint32(padded.length - 4, (length << 3) >>> 0, false)

  let h0 = 0x6a09e667, h1 = 0xbb67ae85, h2 = 0x3c6ef372, h3 = 0xa54ff53a
  let h4 = 0x510e527f, h5 = 0x9b05688c, h6 = 0x1f83d9ab, h7 = 0x5be0cd19
  for (let offset = 0; offset < padded.length; offset += 64) {
    for (let i = 0; i < 16; i++) W[i] = view.getUint32(offset + i * 4, false)
    for (let i = 16; i < 64; i++) {
      const w15 = W[i - 15]!, w2 = W[i - 2]!
      const s0 = ((w15 >>> 7) | (w15 << 25)) ^ ((w15 >>> 18) | (w15 << 14)) ^ (w15 >>> 3)
      const s1 = ((w2 >>> 17) | (w2 << 15)) ^ ((w2 >>> 19) | (w2 << 13)) ^ (w2 >>> 10)
      W[i] = (W[i - 16]! + s0 + W[i - 7]! + s1) | 0
    }
    let a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, h = h7
    for (let i = 0; i < 64; i++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))
      const ch = (e & f) ^ (~e & g)
      const t1 = (h + S1 + ch + K[i]! + W[i]!) | 0
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))
      const maj = (a & b) ^ (a & c) ^ (b & c)
      const t2 = (S0 + maj) | 0
      h = g
      g = f
      f = e
      e = (d + t1) | 0
      d = c
      c = b
      b = a
      a = (t1 + t2) | 0
    }
    h0 = (h0 + a) | 0
    h1 = (h1 + b) | 0
    h2 = (h2 + c) | 0
    h3 = (h3 + d) | 0
    h4 = (h4 + e) | 0
    h5 = (h5 + f) | 0
    h6 = (h6 + g) | 0
    h7 = (h7 + h) | 0
  }
  const out = new Uint8Array(32)
  const outView = new DataView(out.buffer)
  ;[h0, h1, h2, h3, h4, h5, h6, h7].forEach((word, i) => outView.setUint32(i * 4, word, false))
  return out
}

const BLOCK = 64

/** The HMAC-SHA-256 of `data` under `key`, computed in line. */
export const hmacSha256Sync = (key: Uint8Array, data: Uint8Array): Uint8Array => {
  const block = new Uint8Array(BLOCK)
  block.set(key.length > BLOCK ? sha256Sync(key) : key)
  const inner = new Uint8Array(BLOCK + data.length)
  const outer = new Uint8Array(BLOCK + 32)
  for (let i = 0; i < BLOCK; i++) {
    inner[i] = block[i]! ^ 0x36
    outer[i] = block[i]! ^ 0x5c
  }
  inner.set(data, BLOCK)
  outer.set(sha256Sync(inner), BLOCK)
  return sha256Sync(outer)
}

/** The SHA-256 of `data`: in line when small, by WebCrypto when large. */
export const sha256 = (data: Uint8Array): Effect.Effect<Uint8Array> =>
  data.length < INLINE_LIMIT
    ? Effect.sync(() => sha256Sync(data))
    : Effect.promise(() => globalThis.crypto.subtle.digest("SHA-256", data)).pipe(Effect.map((d) => new Uint8Array(d)))

/** The HMAC-SHA-256 of `data` under `key`: in line when small, by WebCrypto when large. */
export const hmacSha256 = (key: Uint8Array, data: Uint8Array): Effect.Effect<Uint8Array> =>
  data.length < INLINE_LIMIT
    ? Effect.sync(() => hmacSha256Sync(key, data))
    : Effect.promise(async () => {
      const cryptoKey = await globalThis.crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, [
        "sign"
      ])
      return new Uint8Array(await globalThis.crypto.subtle.sign("HMAC", cryptoKey, data))
    })

/** Lowercase hex of bytes. */
export const toHex = (bytes: Uint8Array): string => {
  let out = ""
  for (const byte of bytes) out += (byte < 16 ? "0" : "") + byte.toString(16)
  return out
}
