/**
 * Opaque keyset cursors for paginated lists. A cursor carries the sort key value of the last row
 * of a page, that row's id (the tie breaker), and a fingerprint of the query (sort and filters)
 * it was issued for. It is base64url of a small JSON array plus a checksum over that array, so a
 * cursor that was cut, edited or made up is rejected as malformed, and one reused with another
 * sort or other filters is rejected as issued for a different query.
 *
 * The fingerprint and checksum are FNV-1a 64: they detect misuse and accidents, they are NOT a
 * security boundary (anyone can compute them). A cursor grants nothing: every list query is still
 * restricted to what the caller may see.
 */
import { Either, Encoding } from "effect"

/** A sort key value: epoch millis for time sorts, a string for text sorts, null for "none". */
export type CursorKey = number | string | null

/** What a cursor carries once decoded. */
export interface KeysetPosition {
  /** The sort key value of the last row of the previous page. */
  readonly key: CursorKey
  /** The id of that row: the tie breaker among equal keys. */
  readonly id: string
}

const FORMAT_VERSION = 1
const FNV_OFFSET = 0xcbf29ce484222325n
const FNV_PRIME = 0x100000001b3n
const MASK_64 = 0xffffffffffffffffn

/**
 * FNV-1a 64 of a string, as 16 lowercase hex digits. The bytes hashed are the UTF-16 code units
 * of the string, each low byte then high byte (pure and platform independent; no TextEncoder).
 */
export const fnv1a64 = (s: string): string => {
  let h = FNV_OFFSET
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    h = ((h ^ BigInt(c & 0xff)) * FNV_PRIME) & MASK_64
    h = ((h ^ BigInt(c >>> 8)) * FNV_PRIME) & MASK_64
  }
  return h.toString(16).padStart(16, "0")
}

/**
 * Canonical JSON: object keys sorted (by UTF-16 code units), no whitespace, `undefined`
 * properties left out. Equal values always serialize to the same string.
 */
export const canonicalJson = (value: unknown): string => {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null"
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? "null" : canonicalJson(v))).join(",")}]`
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`
}

/** The fingerprint of a query description: FNV-1a 64 of its canonical JSON. */
export const fingerprint = (value: unknown): string => fnv1a64(canonicalJson(value))

/** Encodes a position and the fingerprint of the query it belongs to as an opaque cursor. */
export const encodeKeysetCursor = (position: KeysetPosition, queryFingerprint: string): string => {
  const body = JSON.stringify([FORMAT_VERSION, position.key, position.id, queryFingerprint])
  return Encoding.encodeBase64Url(`${body.slice(0, -1)},${JSON.stringify(fnv1a64(body))}]`)
}

const MALFORMED = "malformed cursor; pass next_cursor from the previous page unchanged"
const OTHER_QUERY =
  "cursor was issued for a different query (sort_by, sort_order and filters must not change between pages)"

const isKey = (u: unknown): u is CursorKey =>
  u === null || typeof u === "string" || (typeof u === "number" && Number.isSafeInteger(u))

/**
 * Decodes a cursor made by `encodeKeysetCursor` and checks that it was issued for the query with
 * `queryFingerprint`. Fails with the problem, worded for the caller, when it is malformed,
 * tampered with, or from another query.
 */
export const decodeKeysetCursor = (cursor: string, queryFingerprint: string): Either.Either<KeysetPosition, string> => {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return Either.left(MALFORMED)
  const text = Encoding.decodeBase64UrlString(cursor)
  if (Either.isLeft(text)) return Either.left(MALFORMED)
  let parsed: unknown
  try {
    parsed = JSON.parse(text.right)
  } catch {
    return Either.left(MALFORMED)
  }
  if (!Array.isArray(parsed) || parsed.length !== 5) return Either.left(MALFORMED)
  const [version, key, id, fp, check] = parsed as ReadonlyArray<unknown>
  if (version !== FORMAT_VERSION || !isKey(key) || typeof id !== "string" || typeof fp !== "string") {
    return Either.left(MALFORMED)
  }
  if (check !== fnv1a64(JSON.stringify([version, key, id, fp]))) return Either.left(MALFORMED)
  if (fp !== queryFingerprint) return Either.left(OTHER_QUERY)
  return Either.right({ key, id })
}

/** A position whose sort key is a time (epoch millis). */
export interface TimePosition {
  readonly key: number
  readonly id: string
}

/**
 * Decodes a cursor of a list sorted by time (`decodeKeysetCursor`), whose key must be a number;
 * null when there is no cursor (the first page).
 */
export const decodeTimeCursor = (
  cursor: string | undefined,
  queryFingerprint: string
): Either.Either<TimePosition | null, string> => {
  if (cursor === undefined) return Either.right(null)
  return Either.flatMap(decodeKeysetCursor(cursor, queryFingerprint), (position) =>
    typeof position.key === "number" ? Either.right({ key: position.key, id: position.id }) : Either.left(MALFORMED))
}
