/**
 * Secrets at rest: AES-256-GCM under the server key (`StorageKey`). Each value is sealed with a
 * fresh random 12-byte nonce and stored as nonce ‖ ciphertext ‖ 16-byte tag. The identity of the
 * row that holds it (`aad`) is authenticated as additional data, so a ciphertext copied into
 * another row — another team's secret, another webhook, an older secret version — fails to open
 * instead of revealing its value there. Opened values stay `Redacted`.
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto"
import { Data, Effect, Redacted } from "effect"

const ALGORITHM = "aes-256-gcm"
const KEY_BYTES = 32
const NONCE_BYTES = 12
const TAG_BYTES = 16

/** A value could not be sealed or opened: a key of the wrong size, or a tampered or misplaced ciphertext. */
export class CryptoError extends Data.TaggedError("CryptoError")<{
  readonly reason: "bad_key" | "cannot_open"
  readonly message: string
}> {}

/**
 * The additional data naming a row: its parts, each prefixed with its length so that no two
 * different lists of parts give the same bytes.
 */
export const aad = (...parts: ReadonlyArray<string | number>): string =>
  parts.map((part) => `${String(part).length}:${String(part)}`).join("")

const keyBytes = (key: Redacted.Redacted<Uint8Array>): Effect.Effect<Buffer, CryptoError> => {
  const bytes = Redacted.value(key)
  return bytes.length === KEY_BYTES
    ? Effect.succeed(Buffer.from(bytes))
    : Effect.fail(
      new CryptoError({ reason: "bad_key", message: `the storage key must be ${KEY_BYTES} bytes, not ${bytes.length}` })
    )
}

/** Encrypts `plaintext` for the row named by `rowAad`: nonce ‖ ciphertext ‖ tag. */
export const seal = (
  key: Redacted.Redacted<Uint8Array>,
  plaintext: Redacted.Redacted<string>,
  rowAad: string
): Effect.Effect<Buffer, CryptoError> =>
  Effect.map(keyBytes(key), (k) => {
    const nonce = randomBytes(NONCE_BYTES)
    const cipher = createCipheriv(ALGORITHM, k, nonce, { authTagLength: TAG_BYTES })
    cipher.setAAD(Buffer.from(rowAad, "utf8"))
    const body = Buffer.concat([cipher.update(Redacted.value(plaintext), "utf8"), cipher.final()])
    return Buffer.concat([nonce, body, cipher.getAuthTag()])
  })

/** Decrypts what `seal` produced for the same row; fails when the bytes or the row differ. */
export const open = (
  key: Redacted.Redacted<Uint8Array>,
  sealed: Uint8Array,
  rowAad: string
): Effect.Effect<Redacted.Redacted<string>, CryptoError> =>
  Effect.flatMap(keyBytes(key), (k) =>
    Effect.try({
      try: () => {
        if (sealed.length < NONCE_BYTES + TAG_BYTES) throw new Error("too short")
        const bytes = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength)
        const decipher = createDecipheriv(ALGORITHM, k, bytes.subarray(0, NONCE_BYTES), { authTagLength: TAG_BYTES })
        decipher.setAAD(Buffer.from(rowAad, "utf8"))
        decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES))
        const plain = Buffer.concat([decipher.update(bytes.subarray(NONCE_BYTES, bytes.length - TAG_BYTES)), decipher.final()])
        return Redacted.make(plain.toString("utf8"))
      },
      catch: () =>
        new CryptoError({
          reason: "cannot_open",
          message: "a stored secret does not open under this key and row (tampered, moved, or another key)"
        })
    }))

/** The keys a store opens with: the current one first, then those that only open. */
export interface KeyRing {
  readonly key: Redacted.Redacted<Uint8Array>
  readonly others: ReadonlyArray<Redacted.Redacted<Uint8Array>>
}

/** Opens a value sealed under any key of the ring; with whether it was the current key. */
export const openSealed = (
  ring: KeyRing,
  sealed: Uint8Array,
  rowAad: string
): Effect.Effect<{ readonly value: Redacted.Redacted<string>; readonly current: boolean }, CryptoError> =>
  ring.others.reduce<Effect.Effect<{ readonly value: Redacted.Redacted<string>; readonly current: boolean }, CryptoError>>(
    (attempt, other) => Effect.orElse(attempt, () => Effect.map(open(other, sealed, rowAad), (value) => ({ value, current: false }))),
    Effect.map(open(ring.key, sealed, rowAad), (value) => ({ value, current: true }))
  )

/** Opens a value sealed under any key of the ring. */
export const openWith = (ring: KeyRing, sealed: Uint8Array, rowAad: string): Effect.Effect<Redacted.Redacted<string>, CryptoError> =>
  Effect.map(openSealed(ring, sealed, rowAad), (opened) => opened.value)
