/**
 * The team's connection to GitHub (`/app/github`; docs/github.md): whether the team is connected,
 * to which host and with which kind of credential (the names of the team secrets holding it: the
 * API never answers a value), who connected it and when, and the repositories the credential
 * reaches, each with whether it may push. The team's admins also connect it, change its
 * connection (GitHubForm.tsx) and disconnect it; everyone else reads.
 *
 * Decisions:
 * - The repositories are asked of the host on every visit (the API does not cache them): a host
 *   refusing the credential (a revoked token's 401) is the API's text under the heading, with a
 *   button to ask again once the secret is mended.
 * - Every change reads the connection again, and the repositories with it.
 */
import { formatTime } from "./format.js"
import {
  disconnectGitHub,
  GITHUB_PATH,
  type GitHubAuth,
  type GitHubConnection,
  type GitHubState,
  type ReachableRepositories,
  REPOSITORIES_PATH
} from "./gitHubConnection.js"
import { GitHubForm } from "./GitHubForm.js"
import { OutcomeLine, useChange } from "./Outcome.js"
import { Empty, Section, useApi } from "./Section.js"

/** The kind of a credential and the secrets holding it. */
const Credential = (props: { readonly auth: GitHubAuth }) => {
  const { auth } = props
  return auth.type === "token"
    ? <>Personal access token, in the team secret <code>{auth.token_secret}</code></>
    : <>GitHub App {auth.app_id}, installation {auth.installation_id}; its private key in the team secret <code>{auth.private_key_secret}</code></>
}

const Facts = (props: { readonly connection: GitHubConnection }) => {
  const { connection } = props
  return (
    <dl class="facts github-connection">
      <div><dt>Host</dt><dd><code>{connection.base_url}</code></dd></div>
      <div><dt>Credential</dt><dd><Credential auth={connection.auth} /></dd></div>
      <div><dt>Connected by</dt><dd><code>{connection.connected_by}</code></dd></div>
      <div><dt>Connected</dt><dd>{formatTime(connection.connected_at)}</dd></div>
      <div><dt>Changed</dt><dd>{formatTime(connection.updated_at)}</dd></div>
    </dl>
  )
}

const RepositoryTable = (props: { readonly listed: ReachableRepositories }) => (
  <>
    <table class="list repositories" aria-labelledby="repositories-heading">
      <thead><tr><th scope="col">Repository</th><th scope="col" class="wide">Default branch</th><th scope="col">Can push</th></tr></thead>
      <tbody>
        {props.listed.repositories.length === 0 ? <Empty columns={3} text="The credential reaches no repository." /> : props.listed.repositories.map((r) => (
          <tr key={`${r.owner}/${r.repo}`} data-repository={`${r.owner}/${r.repo}`}>
            <td><code>{r.owner}/{r.repo}</code></td>
            <td class="wide"><code>{r.default_branch}</code></td>
            <td>{r.can_push ? "yes" : "no (read only)"}</td>
          </tr>
        ))}
      </tbody>
    </table>
    {props.listed.truncated ? <p class="muted">The first {props.listed.repositories.length} repositories only.</p> : null}
  </>
)

/** What the credential reaches, as the host says now. */
const Repositories = () => {
  const read = useApi<ReachableRepositories>(REPOSITORIES_PATH)
  return (
    <section aria-labelledby="repositories-heading">
      <h2 id="repositories-heading">Repositories the credential reaches</h2>
      {read.error === undefined ? null : <p class="error" role="alert">The repositories could not be listed: {read.error}</p>}
      {read.data === undefined
        ? (read.error === undefined ? <p aria-live="polite">Loading…</p> : null)
        : <RepositoryTable listed={read.data} />}
      <p><button type="button" class="secondary" onClick={read.reload}>Ask the host again</button></p>
    </section>
  )
}

/** The admins' part: the form that connects the team or changes its connection, and Disconnect while connected. */
const Manage = (props: {
  readonly connection: GitHubConnection | null
  readonly onConnected: (state: GitHubState) => void
  readonly onDisconnect: () => void
}) => (
  <section aria-labelledby="connect-heading">
    <h2 id="connect-heading">{props.connection === null ? "Connect to GitHub" : "Change the connection"}</h2>
    <p class="muted">Name team secrets set beforehand (Secrets; the API or the CLI set their values). A token needs Contents and Pull requests, read and write.</p>
    <GitHubForm key={props.connection?.updated_at ?? "none"} connection={props.connection} onConnected={props.onConnected} />
    {props.connection === null ? null : (
      <p><button type="button" class="danger" onClick={props.onDisconnect}>Disconnect from GitHub</button></p>
    )}
  </section>
)

export const GitHubPage = (props: { readonly admin: boolean }) => {
  const read = useApi<GitHubState>(GITHUB_PATH)
  const { change, made, outcome } = useChange(read.reload)
  const disconnect = () => void change(disconnectGitHub, () => "Disconnected from GitHub. The team's secrets stay.")
  const connected = (state: GitHubState) => made(`Connected to ${state.connection?.base_url ?? "GitHub"}.`)
  return (
    <Section title="GitHub" read={read}>
      {({ connection }) => (
        <>
          <OutcomeLine outcome={outcome} />
          {connection === null
            ? <p>The team is not connected to GitHub.</p>
            : <><p>The team is connected to GitHub.</p><Facts connection={connection} /></>}
          {/* A new or changed connection may reach other repositories: they are read afresh. */}
          {connection === null ? null : <Repositories key={connection.updated_at} />}
          {props.admin
            ? <Manage connection={connection} onConnected={connected} onDisconnect={disconnect} />
            : <p class="muted">Only the team's admins connect it to GitHub, change or end its connection.</p>}
        </>
      )}
    </Section>
  )
}
