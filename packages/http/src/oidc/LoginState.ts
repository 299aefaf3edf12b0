/**
 * The state of a browser sign-in between the redirect to the provider and its callback, kept in a
 * cookie (no storage, so any replica can answer the callback): the state, nonce and PKCE verifier,
 * and when it expires, signed with HMAC-SHA-256 under a key derived from the server's secret key.
 * A cookie that was changed, cut or is older than `LOGIN_STATE_TTL_MS` is refused.
 */
import { Redacted } from "effect"
import { createHmac, timingSafeEqual } from "node:crypto"

/** The cookie's name. */
export const LOGIN_STATE_COOKIE = "agent_runs_sign_in"

/** How long a sign-in may take in the browser. */
export const LOGIN_STATE_TTL_MS = 10 * 60_000

export interface LoginState {
  readonly state: string
  readonly nonce: string
  readonly verifier: string
  /** The dashboard tab's own random value, handed back with the session so that the tab takes only its own. */
  readonly client: string
  /** Epoch millis. */
  readonly expires: number
}

const keyOf = (secretKey: Redacted.Redacted<Uint8Array>) =>
  createHmac("sha256", Redacted.value(secretKey)).update("agent-runs sign-in state v1").digest()

/** Signs and reads login states under one server's key. */
export const loginStates = (secretKey: Redacted.Redacted<Uint8Array>) => {
  const key = keyOf(secretKey)
  const mac = (payload: string) => createHmac("sha256", key).update(payload).digest()
  return {
    seal: (state: LoginState): string => {
      const payload = Buffer.from(JSON.stringify(state)).toString("base64url")
      return `${payload}.${mac(payload).toString("base64url")}`
    },
    /** The state, when the cookie is one this server signed and it has not expired. */
    open: (cookie: string | undefined, now: number): LoginState | undefined => {
      const [payload, signature, extra] = (cookie ?? "").split(".")
      if (payload === undefined || signature === undefined || extra !== undefined || cookie!.length > 4096) return undefined
      const given = Buffer.from(signature, "base64url")
      const expected = mac(payload)
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined
      const state = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as LoginState
      return state.expires > now ? state : undefined
    }
  }
}
