/**
 * A team's connection to GitHub (`/agent/github`; docs/github.md): which host, and which team
 * secrets hold the credential the service uses there to clone, push and open pull requests. Over
 * IdentityStore (the connection), SecretStore (the credential's values) and the GitHost port.
 *
 * Decisions:
 * - Every member (viewers included) sees whether the team is connected, how (the host, the kind
 *   of credential, the secrets' names; never a value) and which repositories it reaches; only
 *   admins connect, change or disconnect it.
 * - Only hosts the operator allows (`GitHubHosts`; github.com by default) can be connected to (400
 *   naming `base_url`): the server calls what teams connect to.
 * - Connecting checks before it stores: each secret named must exist in the team (400 naming
 *   the field), and the host must accept the credential (an access token minted, one repository
 *   listed): a refusal is a 400 naming `auth` with the host's answer, a host that cannot be
 *   reached a 400 naming `base_url`. Replacing a connection keeps `connected_at`.
 * - `access(team)` is what the rest of the service uses: the connection with a fresh access
 *   token (an App's installation token minted, or taken from the adapter's cache), or none.
 * - A storage failure is a 503 `resource_unavailable`; a host failure while listing
 *   repositories is a 503 too, with the host's answer.
 */
import { Clock, DateTime, Effect, Option } from "effect"
import { canManageFactory } from "../domain/Access.js"
import type { Viewer } from "../domain/Access.js"
import { InvalidRequest, NotAuthorized, ResourceNotFound, ResourceUnavailable } from "../domain/Errors.js"
import {
  apiUrlOf,
  type ConnectGitHubRequest,
  type GitHubConnection,
  GitHubConnectionResponse,
  hostAllowed,
  MAX_LISTED_REPOSITORIES,
  ReachableRepositoriesResponse,
  secretOf
} from "../domain/GitHub.js"
import { GitHost, type GitHostError, GitHubHosts } from "../ports/GitHost.js"
import { IdentityStore } from "../ports/IdentityStore.js"
import { SecretStore } from "../ports/SecretStore.js"
import { storageUnavailable } from "../internal/Services.js"
import { Audit } from "./Audit.js"
import { credentialOf, gitHubAccess } from "../internal/GitHubAccess.js"

const resource = { type: "github_connection", id: "github" }

export class GitHubConnections extends Effect.Service<GitHubConnections>()("@agent-runs/core/GitHubConnections", {
  dependencies: [Audit.Default],
  effect: Effect.gen(function* () {
    const audit = yield* Audit
    const identities = yield* IdentityStore
    const secrets = yield* SecretStore
    // Taken once: the host the service was built with, whichever fiber calls.
    const host = yield* GitHost
    const allowedHosts = yield* GitHubHosts

    const requireAdmin = (viewer: Viewer) =>
      canManageFactory(viewer) ? Effect.void : Effect.fail(new NotAuthorized({ message: "only team admins can connect the team to GitHub" }))

    const access = gitHubAccess(identities, secrets, host, allowedHosts)

    const get = Effect.fn("GitHubConnections.get")(
      function* (viewer: Viewer) {
        const connection = yield* identities.getGitHubConnection(viewer.team_uid)
        return new GitHubConnectionResponse({ connected: Option.isSome(connection), connection: Option.getOrNull(connection) })
      },
      storageUnavailable
    )

    /** The host's refusal of a credential being connected, as a 400 naming the field. */
    const refused = (error: GitHostError) =>
      error.status === undefined
        ? InvalidRequest.forField("base_url", error.message)
        : InvalidRequest.forField("auth", `the host refused the credential: ${error.message}`)

    const connect = Effect.fn("GitHubConnections.connect")(
      function* (viewer: Viewer, request: ConnectGitHubRequest) {
        yield* requireAdmin(viewer)
        if (!hostAllowed(request.base_url, allowedHosts)) {
          return yield* InvalidRequest.forField(
            "base_url",
            `${new URL(request.base_url).host} is not a GitHub host this server connects to (its operator names them: AGENT_RUNS_GITHUB_HOSTS)`
          )
        }
        const [field, name] = secretOf(request.auth)
        const credential = yield* credentialOf(secrets, viewer.team_uid, request.auth)
        if (Option.isNone(credential)) return yield* InvalidRequest.forField(field, `the team has no secret named ${name}`)
        const apiUrl = apiUrlOf(request.base_url)
        yield* host.accessToken(apiUrl, credential.value).pipe(
          Effect.flatMap((token) => host.repositories({ apiUrl, token }, request.auth.type, 1)),
          Effect.mapError(refused)
        )
        const now = DateTime.unsafeMake(yield* Clock.currentTimeMillis)
        const previous = yield* identities.getGitHubConnection(viewer.team_uid)
        const connection: GitHubConnection = {
          base_url: request.base_url,
          auth: request.auth,
          connected_by: viewer.principal_uid,
          connected_at: Option.match(previous, { onNone: () => now, onSome: (p) => p.connected_at }),
          updated_at: now
        }
        yield* audit.recording(viewer, identities.setGitHubConnection(viewer.team_uid, Option.some(connection)), () => ({
          action: "github.connect",
          resource
        }))
        return new GitHubConnectionResponse({ connected: true, connection })
      },
      storageUnavailable,
      audit.refusals("github.connect", () => resource)
    )

    const disconnect = Effect.fn("GitHubConnections.disconnect")(
      function* (viewer: Viewer) {
        yield* requireAdmin(viewer)
        if (Option.isNone(yield* identities.getGitHubConnection(viewer.team_uid))) {
          return yield* new ResourceNotFound({ resource: "github_connection", message: "the team has no GitHub connection" })
        }
        yield* audit.recording(viewer, identities.setGitHubConnection(viewer.team_uid, Option.none()), () => ({
          action: "github.disconnect",
          resource
        }))
      },
      storageUnavailable,
      audit.refusals("github.disconnect", () => resource)
    )

    const repositories = Effect.fn("GitHubConnections.repositories")(
      function* (viewer: Viewer) {
        const found = yield* access(viewer.team_uid).pipe(
          Effect.mapError((e) => e._tag === "GitHostError" ? new ResourceUnavailable({ message: e.message, retryable: e.status === undefined }) : e)
        )
        if (Option.isNone(found)) return yield* new ResourceNotFound({ resource: "github_connection", message: "the team has no GitHub connection" })
        const listed = yield* host.repositories(found.value, found.value.connection.auth.type, MAX_LISTED_REPOSITORIES).pipe(
          Effect.mapError((e) => new ResourceUnavailable({ message: e.message, retryable: e.status === undefined }))
        )
        return new ReachableRepositoriesResponse(listed)
      },
      storageUnavailable
    )

    return { get, connect, disconnect, repositories, access } as const
  })
}) {}
