/**
 * Secrets at rest in memory: AES-256-GCM (Web Crypto, `globalThis.crypto.subtle`) under a random
 * key made for each store set and never kept in its state. Each value is sealed with a fresh
 * random 12-byte nonce and held as nonce ‖ ciphertext ‖ tag; the identity of the entry that holds
 * it is authenticated as additional data (as the SQL adapter's `Crypto.ts` does), so a ciphertext
 * moved to another entry does not open. Opened values stay `Redacted`.
 */
import { Data, Effect, Redacted } from "effect"

const NONCE_BYTES = 12

/** A value could not be sealed or opened (a tampered or misplaced ciphertext). */
export class CryptoError extends Data.TaggedError("CryptoError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

/** Seals and opens values under one key. */
export interface Sealer {
  /** Encrypts `plaintext` for the entry named by `aad`: nonce ‖ ciphertext ‖ tag. */
  readonly seal: (plaintext: Redacted.Redacted<string>, aad: string) => Effect.Effect<Uint8Array, CryptoError>
  /** Decrypts what `seal` produced for the same entry. */
  readonly open: (sealed: Uint8Array, aad: string) => Effect.Effect<Redacted.Redacted<string>, CryptoError>
}

/**
 * The additional data naming an entry: its parts, each prefixed with its length so that no two
 * different lists of parts give the same text.
 */
export const aad = (...parts: ReadonlyArray<string | number>): string =>
  parts.map((part) => `${String(part).length}:${String(part)}`).join("")

const utf8 = (text: string): Uint8Array<ArrayBuffer> => new TextEncoder().encode(text)

/** A sealer with a fresh random key. */
export const makeSealer: Effect.Effect<Sealer, CryptoError> = Effect.map(
  Effect.tryPromise({
    try: () => globalThis.crypto.subtle.generateKey({ name: "AES-GCM", length: 256 }, false, ["encrypt", "decrypt"]),
    catch: (cause) => new CryptoError({ message: "cannot make a key", cause })
  }),
  (key): Sealer => ({
    seal: (plaintext, entry) =>
      Effect.tryPromise({
        try: async () => {
          const nonce = globalThis.crypto.getRandomValues(new Uint8Array(NONCE_BYTES))
          const body = await globalThis.crypto.subtle.encrypt(
            { name: "AES-GCM", iv: nonce, additionalData: utf8(entry), tagLength: 128 },
            key,
            utf8(Redacted.value(plaintext))
          )
          const sealed = new Uint8Array(NONCE_BYTES + body.byteLength)
          sealed.set(nonce)
          sealed.set(new Uint8Array(body), NONCE_BYTES)
          return sealed
        },
        catch: (cause) => new CryptoError({ message: "cannot seal a value", cause })
      }),
    open: (sealed, entry) =>
      Effect.tryPromise({
        try: async () => {
          const bytes = Uint8Array.from(sealed)
          const plain = await globalThis.crypto.subtle.decrypt(
            { name: "AES-GCM", iv: bytes.subarray(0, NONCE_BYTES), additionalData: utf8(entry), tagLength: 128 },
            key,
            bytes.subarray(NONCE_BYTES)
          )
          return Redacted.make(new TextDecoder().decode(plain))
        },
        catch: (cause) =>
          new CryptoError({ message: "a held secret does not open under this key and entry (tampered or moved)", cause })
      })
  })
)
