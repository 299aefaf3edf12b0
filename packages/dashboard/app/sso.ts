/**
 * Single sign-on (docs/sign-in.md): whether the server offers it (`GET <prefix>/auth/oidc`), and
 * what its callback sent back in the URL's fragment: `#session=<token>` (kept as this tab's
 * token, like one typed in) or `#sign_in_error=<reason>` (shown on the sign-in page). The
 * fragment is cleared at once, so the token is neither in the history nor in a shared URL.
 *
 * The tab starts a sign-in with a random value of its own (`client_state`, kept in its
 * sessionStorage) and takes back only a fragment carrying that value: a link with someone else's
 * session or a made-up error (`/app/#session=…`) changes nothing.
 */
import { prefix, session } from "./api.js"

const ERROR_KEY = "agent-runs.sign-in-error"
const CLIENT_STATE_KEY = "agent-runs.sign-in-state"

/** A new random value for a sign-in started in this tab (24 bytes, base64url). */
const newClientState = (): string =>
  btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(24)))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")

/** Starts a sign-in with the provider from this tab. */
export const startSingleSignOn = (): void => {
  const state = newClientState()
  sessionStorage.setItem(CLIENT_STATE_KEY, state)
  window.location.assign(`${prefix}/auth/oidc/login?client_state=${state}`)
}

/** Keeps what the sign-in callback put in the fragment for this tab, and clears it; call before the app renders. */
export const takeSignInResult = (): void => {
  const fragment = new URLSearchParams(window.location.hash.slice(1))
  const token = fragment.get("session")
  const error = fragment.get("sign_in_error")
  if (token === null && error === null) return
  window.history.replaceState(null, "", `${window.location.pathname}${window.location.search}`)
  const expected = sessionStorage.getItem(CLIENT_STATE_KEY)
  sessionStorage.removeItem(CLIENT_STATE_KEY)
  if (expected === null || fragment.get("client_state") !== expected) return
  if (token !== null) session.signIn(token, "")
  if (error !== null) sessionStorage.setItem(ERROR_KEY, error.slice(0, 300))
}

/** Why the last single sign-on failed, once (then forgotten). */
export const takeSignInError = (): string | undefined => {
  const error = sessionStorage.getItem(ERROR_KEY)
  sessionStorage.removeItem(ERROR_KEY)
  return error === null ? undefined : `Single sign-on failed: ${error}`
}

/** The provider's issuer when the server offers single sign-on; undefined otherwise. */
export const singleSignOnIssuer = async (): Promise<string | undefined> => {
  try {
    const response = await fetch(`${prefix}/auth/oidc`, { headers: { accept: "application/json" } })
    if (!response.ok) return undefined
    const body = (await response.json()) as { readonly issuer?: unknown }
    return typeof body.issuer === "string" ? body.issuer : undefined
  } catch {
    return undefined
  }
}
