/**
 * Sign-in: a token (kept in this tab's sessionStorage only). It is checked before the app opens:
 * first that it holds only characters a token can have (anything else could not even be sent,
 * and would look like an unreachable service), then against the API (`GET /agent/me`, which also
 * names the caller's teams). A refused token is shown with the reason beside the field, and what
 * was typed stays in it.
 *
 * When the server offers single sign-on, the page offers it first (sso.ts); a failed one is shown
 * as the reason.
 *
 * `SignIn` is the page of a tab without a token; `SignInAgain` is the same form in a modal dialog
 * over the page, when the token stops working mid-session, so that nothing typed in the page is
 * lost (docs/dashboard.md).
 */
import { useEffect, useRef, useState } from "preact/hooks"
import { type Me, messageOf, request, tokenProblem } from "./api.js"
import { singleSignOnIssuer, startSingleSignOn, takeSignInError } from "./sso.js"

type SignedIn = (token: string, me: Me) => void

const SignInForm = (props: { readonly reason: string | undefined; readonly onSignedIn: SignedIn }) => {
  const [token, setToken] = useState("")
  const [error, setError] = useState<string | undefined>(props.reason)
  const [busy, setBusy] = useState(false)

  const submit = async (event: Event) => {
    event.preventDefault()
    const trimmed = token.trim()
    const problem = trimmed === "" ? "Enter an API token." : tokenProblem(trimmed)
    if (problem !== undefined) {
      setError(problem)
      return
    }
    setBusy(true)
    try {
      const me = await request<Me>("/agent/me", { token: trimmed, team: "" })
      props.onSignedIn(trimmed, me)
    } catch (failure) {
      setError(messageOf(failure))
    } finally {
      setBusy(false)
    }
  }

  return (
    <form method="post" onSubmit={submit}>
      <p>Sign in with an API token. It is kept in this browser tab only and forgotten when the tab closes.</p>
      <div class="field">
        <label for="token">API token</label>
        <input
          id="token"
          name="token"
          type="password"
          autocomplete="off"
          spellcheck={false}
          required
          value={token}
          onInput={(e) => setToken(e.currentTarget.value)}
          aria-invalid={error === undefined ? undefined : true}
          aria-describedby={error === undefined ? undefined : "token-error"}
        />
        {error === undefined ? null : <p class="error" id="token-error" role="alert">{error}</p>}
      </div>
      <button type="submit" disabled={busy}>{busy ? "Signing in…" : "Sign in"}</button>
    </form>
  )
}

/** A link to sign in with the provider, when the server offers it. */
const SingleSignOn = () => {
  const [issuer, setIssuer] = useState<string | undefined>(undefined)
  useEffect(() => {
    void singleSignOnIssuer().then(setIssuer)
  }, [])
  if (issuer === undefined) return null
  return (
    <p class="single-sign-on">
      <button type="button" onClick={startSingleSignOn}>Sign in with single sign-on</button>
      <span class="muted"> ({new URL(issuer).host})</span>
    </p>
  )
}

/** The sign-in page of a tab without a token. */
export const SignIn = (props: { readonly reason: string | undefined; readonly onSignedIn: SignedIn }) => {
  const [failed] = useState(takeSignInError)
  return (
    <main class="sign-in" id="main">
      <h1>Agent Runs</h1>
      <SingleSignOn />
      <SignInForm reason={failed ?? props.reason} onSignedIn={props.onSignedIn} />
    </main>
  )
}

/**
 * The sign-in form in a modal dialog over the page the token stopped working in: the page stays
 * mounted behind it (inert while the dialog is open), so its fields keep what was typed. Escape
 * does not close it; "Sign out" leaves the page. The browser gives the focus to the token field
 * when it opens, and back to where it was when it goes.
 */
export const SignInAgain = (props: {
  readonly reason: string
  readonly onSignedIn: SignedIn
  readonly onSignOut: () => void
}) => {
  const dialog = useRef<HTMLDialogElement>(null)
  useEffect(() => {
    const element = dialog.current
    if (element !== null && !element.open) element.showModal()
  }, [])
  return (
    <dialog
      ref={dialog}
      class="sign-in-again"
      aria-labelledby="sign-in-again-title"
      onCancel={(e) => e.preventDefault()}
      // A browser may close it anyway (a second Escape): while it is on the page, it opens again.
      onClose={(e) => {
        const element = e.currentTarget
        if (element.isConnected && !element.open) element.showModal()
      }}
    >
      <h2 id="sign-in-again-title">Sign in again</h2>
      <p class="muted">What you typed on this page is kept.</p>
      <SignInForm reason={props.reason} onSignedIn={props.onSignedIn} />
      <button type="button" class="secondary" onClick={props.onSignOut}>Sign out</button>
    </dialog>
  )
}
