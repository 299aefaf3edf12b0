/**
 * A service account's tokens on the Members page (`/agent/team/service-accounts/{uid}/tokens`):
 * the ones limited to the team, newest first, each revocable; and a form that creates one, always
 * limited to the team, with an optional name, expiry date and maximum role.
 *
 * Decisions:
 * - The new token is shown once, in a read-only field selected on focus, with the hint to copy it
 *   now: the API keeps only its hash. It is gone when the panel closes or another is created.
 * - The expiry is a date: the token stops working at the start of that day, local time (the
 *   API refuses a past one, and its error is shown).
 */
import { useState } from "preact/hooks"
import { formatTime } from "./format.js"
import { OutcomeLine, useChange } from "./Outcome.js"
import { Empty, useApi } from "./Section.js"
import { createToken, type NewToken, revokeToken, ROLES, type Role, type TeamMember, type TokenInfo, tokensPath } from "./team.js"

/** What the form asks for, as the API takes it. */
const newToken = (name: string, date: string, maxRole: Role | ""): NewToken => ({
  ...(name.trim() === "" ? {} : { name: name.trim() }),
  ...(date === "" ? {} : { expires_at: new Date(`${date}T00:00`).toISOString() }),
  ...(maxRole === "" ? {} : { max_role: maxRole })
})

const NewTokenForm = (props: { readonly onCreate: (token: NewToken) => Promise<unknown> }) => {
  const [name, setName] = useState("")
  const [date, setDate] = useState("")
  const [maxRole, setMaxRole] = useState<Role | "">("")
  const submit = (event: Event) => {
    event.preventDefault()
    void props.onCreate(newToken(name, date, maxRole))
  }
  return (
    <form class="filters" aria-label="Create a token" onSubmit={submit}>
      <div class="field"><label for="token-name">Token name (optional)</label><input id="token-name" value={name} onInput={(e) => setName(e.currentTarget.value)} /></div>
      <div class="field"><label for="token-expiry">Expires on (optional)</label><input id="token-expiry" type="date" value={date} onInput={(e) => setDate(e.currentTarget.value)} /></div>
      <div class="field">
        <label for="token-max-role">Most it may do</label>
        <select id="token-max-role" value={maxRole} onChange={(e) => setMaxRole(e.currentTarget.value as Role | "")}>
          <option value="">the account's role</option>
          {ROLES.map((role) => <option key={role} value={role}>{role}</option>)}
        </select>
      </div>
      <div class="actions"><button type="submit">Create token</button><span class="muted">Always limited to this team.</span></div>
    </form>
  )
}

const ShownOnce = (props: { readonly token: string }) => (
  <div class="field new-token">
    <label for="new-token">New token</label>
    <input id="new-token" readOnly value={props.token} onFocus={(e) => e.currentTarget.select()} />
    <p class="muted">Copy it now: it is shown this once, and only its hash is kept.</p>
  </div>
)

const TokenRow = (props: { readonly token: TokenInfo; readonly onRevoke: () => void }) => {
  const { token } = props
  return (
    <tr data-token-id={token.token_id}>
      <td>{token.name ?? "—"}<div class="muted"><code>{token.token_id}</code></div></td>
      <td class="wide">{formatTime(token.created_at)}</td>
      <td>{token.expires_at === null ? "never" : formatTime(token.expires_at)}</td>
      <td class="wide">{formatTime(token.last_used_at)}</td>
      <td>{token.max_role ?? "—"}</td>
      <td>
        {token.revoked_at !== null
          ? <>revoked {formatTime(token.revoked_at)}</>
          : <button type="button" class="danger" aria-label={`Revoke ${token.name ?? token.token_id}`} onClick={props.onRevoke}>Revoke</button>}
      </td>
    </tr>
  )
}

export const ServiceAccountTokens = (props: { readonly account: TeamMember; readonly onClose: () => void }) => {
  const read = useApi<{ tokens: ReadonlyArray<TokenInfo> }>(tokensPath(props.account.uid))
  const { change, outcome } = useChange(read.reload)
  const [shown, setShown] = useState<string | undefined>(undefined)
  const create = async (token: NewToken) => {
    setShown(undefined)
    const created = await change(() => createToken(props.account.uid, token), (answer) => `Created token ${answer.token_id}.`)
    if (created !== undefined) setShown(created.token)
  }
  const revoke = (token: TokenInfo) => change(() => revokeToken(token.token_id), () => `Revoked token ${token.name ?? token.token_id}.`)
  return (
    <section class="tokens" aria-labelledby="tokens-heading">
      <h2 id="tokens-heading">Tokens of {props.account.display_name}</h2>
      <button type="button" class="secondary" onClick={props.onClose}>Close</button>
      <NewTokenForm onCreate={create} />
      <OutcomeLine outcome={outcome} />
      {shown === undefined ? null : <ShownOnce token={shown} />}
      {read.error === undefined ? null : <p class="error" role="alert">{read.error}</p>}
      {read.data === undefined ? null : (
        <table class="list tokens">
          <caption class="visually-hidden">Tokens of {props.account.display_name}</caption>
          <thead>
            <tr>
              <th scope="col">Name</th><th scope="col" class="wide">Created</th><th scope="col">Expires</th><th scope="col" class="wide">Last used</th>
              <th scope="col">Most it may do</th><th scope="col">State</th>
            </tr>
          </thead>
          <tbody>
            {read.data.tokens.length === 0
              ? <Empty columns={6} text="No tokens." />
              : read.data.tokens.map((token) => <TokenRow key={token.token_id} token={token} onRevoke={() => void revoke(token)} />)}
          </tbody>
        </table>
      )}
    </section>
  )
}
