/**
 * A team's way into its GitHub host, for whatever needs it (the connection service, the clones of
 * a run, the pull requests): its connection, the REST API's URL and an access token (a personal
 * token as it is; an App's installation token minted, or taken from the adapter's cache). None
 * when the team has no connection; a `GitHostError` when the credential's secret is gone or the
 * host refuses it.
 */
import { Effect, Option } from "effect"
import type { Redacted } from "effect"
import { apiUrlOf, type GitHubAuth, type GitHubConnection, hostAllowed, secretOf } from "../domain/GitHub.js"
import type { TeamUid } from "../domain/Ids.js"
import { type GitHostCredential, GitHostError, type GitHostService } from "../ports/GitHost.js"
import type { IdentityStore } from "../ports/IdentityStore.js"
import type { SecretStore } from "../ports/SecretStore.js"

/** A connected team's way in. */
export interface GitHubAccess {
  readonly connection: GitHubConnection
  readonly apiUrl: string
  readonly token: Redacted.Redacted<string>
}

/** The credential with its secret read; none when the secret is gone. */
export const credentialOf = (secrets: SecretStore["Type"], team: TeamUid, auth: GitHubAuth) =>
  Effect.map(secrets.get(team, secretOf(auth)[1]), Option.map((value): GitHostCredential =>
    auth.type === "token"
      ? { type: "token", token: value }
      : { type: "app", app_id: auth.app_id, installation_id: auth.installation_id, private_key: value }))

/** The team's access, over the stores and the host given; a connection to a host no longer allowed fails. */
export const gitHubAccess = (
  identities: IdentityStore["Type"],
  secrets: SecretStore["Type"],
  host: GitHostService,
  allowed: ReadonlyArray<string>
) => (team: TeamUid) =>
  Effect.gen(function* () {
    const stored = yield* identities.getGitHubConnection(team)
    if (Option.isNone(stored)) return Option.none<GitHubAccess>()
    const connection = stored.value
    if (!hostAllowed(connection.base_url, allowed)) {
      return yield* new GitHostError({ message: `${connection.base_url} is no longer a GitHub host this server connects to (AGENT_RUNS_GITHUB_HOSTS)`, status: undefined })
    }
    const credential = yield* credentialOf(secrets, team, connection.auth)
    if (Option.isNone(credential)) {
      return yield* new GitHostError({ message: `the team secret ${secretOf(connection.auth)[1]} of the GitHub connection is gone`, status: undefined })
    }
    const apiUrl = apiUrlOf(connection.base_url)
    const token = yield* host.accessToken(apiUrl, credential.value)
    return Option.some<GitHubAccess>({ connection, apiUrl, token })
  })
