/**
 * Idempotency keys (docs/reference/idempotency.md): a caller that sends `Idempotency-Key` with a
 * create gets, for the same key and the same request within `KEY_TTL_MS`, the first answer again
 * without anything being done twice. Pure rules: what a valid key is, whose keys they are (the
 * scope), what makes two requests "the same" (the fingerprint), and how long a key lives.
 */
import type { Viewer } from "./Access.js"

/** The request header that carries the key. */
export const IDEMPOTENCY_HEADER = "idempotency-key"

/** The header of an answer that repeats a stored one. */
export const REPLAYED_HEADER = "idempotent-replayed"

/** The longest key accepted, in characters. */
export const MAX_KEY_LENGTH = 255

/** How long a key answers its first response again: 24 hours from the first request. */
export const KEY_TTL_MS = 24 * 60 * 60 * 1000

/**
 * How long a key stays taken by a request that never finished (its server died while handling it,
 * or its outcome is unknown): after this, a retry with the key runs again. Every create answers
 * within seconds; the margin also covers clocks of replicas that disagree by minutes.
 */
export const ABANDONED_AFTER_MS = 10 * 60 * 1000

/** The largest answer body stored for replay, in bytes; a larger answer is not kept (the key is released). */
export const MAX_STORED_BODY_BYTES = 256 * 1024

/** Why a key is refused, or undefined when it is valid: 1 to 255 visible ASCII characters. */
export const keyProblem = (key: string): string | undefined =>
  key.length === 0
    ? "must not be empty"
    : key.length > MAX_KEY_LENGTH
    ? `must be at most ${MAX_KEY_LENGTH} characters`
    : /^[\x21-\x7e]+$/.test(key)
    ? undefined
    : "must be visible ASCII characters (no spaces)"

/**
 * Whose keys: the principal with the credential it called with (its API token, or the run whose
 * agent calls with a run token). A token limited to less than its principal may do never sees the
 * answers of its principal's other tokens, and two callers never see each other's.
 */
export const scopeOf = (viewer: Viewer): string =>
  [viewer.principal_uid, viewer.token_id ?? "", viewer.acting_run_id ?? ""].map((part) => `${part.length}:${part}`).join("")

/** What identifies a request: its method, path, team and decoded body (as JSON text). */
export interface RequestFacts {
  readonly method: string
  readonly path: string
  readonly team_uid: string
  readonly body: string
}

/**
 * The bytes whose hash is a request's fingerprint: each part prefixed with its length, so no two
 * different requests give the same bytes.
 */
export const fingerprintInput = (request: RequestFacts): Uint8Array =>
  new TextEncoder().encode(
    [request.method.toUpperCase(), request.path, request.team_uid, request.body]
      .map((part) => `${part.length}:${part}`)
      .join("")
  )

/** A stored answer: its status and JSON body. */
export interface StoredAnswer {
  readonly status: number
  readonly body: string
}

/** What holds a key when a request arrives with it. */
export type KeyHold =
  /** Nobody: the key is now this request's. */
  | { readonly _tag: "Taken" }
  /** An earlier request with the same fingerprint finished: its answer. */
  | { readonly _tag: "Answered"; readonly answer: StoredAnswer }
  /** An earlier request with the same fingerprint is still running. */
  | { readonly _tag: "Running" }
  /** An earlier request with another fingerprint used the key. */
  | { readonly _tag: "Mismatch" }

/**
 * The claim a request makes on a key, with the time that decides what is still alive, and the
 * claim's own id: only the claim that took a key stores its answer or frees it.
 */
export interface KeyClaim {
  readonly scope: string
  readonly key: string
  readonly fingerprint: string
  readonly claim_id: string
  readonly now: number
}

/** A row older than this (by its creation) no longer holds its key. */
export const expiredBefore = (now: number): number => now - KEY_TTL_MS

/** A running row older than this was abandoned. */
export const abandonedBefore = (now: number): number => now - ABANDONED_AFTER_MS
