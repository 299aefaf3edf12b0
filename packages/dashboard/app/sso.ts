/**
 * Single sign-on (docs/sign-in.md): whether the server offers it (`GET <prefix>/auth/oidc`), and
 * what its callback sent back in the URL's fragment: `#session=<token>` (kept as this tab's
 * token, like one typed in) or `#sign_in_error=<reason>` (shown on the sign-in page). The
 * fragment is cleared at once, so the token is neither in the history nor in a shared URL.
 */
import { prefix, session } from "./api.js"

const ERROR_KEY = "agent-runs.sign-in-error"

/** Where the browser starts signing in with the provider. */
export const singleSignOnHref = `${prefix}/auth/oidc/login`

/** Keeps what the sign-in callback put in the fragment, and clears it; call before the app renders. */
export const takeSignInResult = (): void => {
  const fragment = new URLSearchParams(window.location.hash.slice(1))
  const token = fragment.get("session")
  const error = fragment.get("sign_in_error")
  if (token === null && error === null) return
  if (token !== null) session.signIn(token, "")
  if (error !== null) sessionStorage.setItem(ERROR_KEY, error.slice(0, 300))
  window.history.replaceState(null, "", `${window.location.pathname}${window.location.search}`)
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
