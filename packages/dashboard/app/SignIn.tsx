/**
 * Sign-in: a token (kept in this tab's sessionStorage only) and, optionally, the team to act in.
 * The token is checked against the API before the app opens; a refused one is shown with the
 * API's reason, and what was typed stays in the fields.
 */
import { useState } from "preact/hooks"
import { ApiError, request } from "./api.js"

export const SignIn = (props: {
  readonly reason: string | undefined
  readonly onSignedIn: (token: string, team: string) => void
}) => {
  const [token, setToken] = useState("")
  const [team, setTeam] = useState("")
  const [error, setError] = useState<string | undefined>(props.reason)
  const [busy, setBusy] = useState(false)

  const submit = async (event: Event) => {
    event.preventDefault()
    const trimmed = token.trim()
    if (trimmed === "") {
      setError("Enter an API token.")
      return
    }
    setBusy(true)
    try {
      await request("/agent/runs?limit=1", { token: trimmed, team: team.trim() })
      props.onSignedIn(trimmed, team.trim())
    } catch (failure) {
      setError(failure instanceof ApiError ? failure.message : String(failure))
    } finally {
      setBusy(false)
    }
  }

  return (
    <main class="sign-in" id="main">
      <h1>Agent Runs</h1>
      <form method="post" onSubmit={submit} aria-describedby={error === undefined ? undefined : "sign-in-error"}>
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
          />
        </div>
        <div class="field">
          <label for="sign-in-team">Team uid <span class="muted">(optional: your first team when empty)</span></label>
          <input id="sign-in-team" name="team" autocomplete="off" value={team} onInput={(e) => setTeam(e.currentTarget.value)} />
        </div>
        {error === undefined ? null : <p class="error" id="sign-in-error" role="alert">{error}</p>}
        <button type="submit" disabled={busy}>{busy ? "Signing in…" : "Sign in"}</button>
      </form>
    </main>
  )
}
