/**
 * A team's connection to a GitHub host (`/agent/github`; docs/github.md): github.com or a GitHub
 * Enterprise Server, and the credential the service uses there, named as team secrets (the
 * values never appear here): a fine-grained personal access token, or a GitHub App installation
 * (its private key a secret; installation tokens are minted per use and never stored).
 *
 * Decisions:
 * - `base_url` is the host's web address: `https://github.com` (the default) or a GitHub
 *   Enterprise Server's `https://ghe.example.com`. Plain `http` only on loopback (a test host):
 *   a credential never crosses a network in the clear. No path, user, query or fragment.
 * - The REST API is `https://api.github.com` for github.com and `<base_url>/api/v3` otherwise;
 *   repositories are `<base_url>/<owner>/<repo>.git`.
 */
import { Schema } from "effect"
import { RepoSegment } from "./Agent.js"
import { Timestamp } from "./Common.js"
import { PrincipalUid } from "./Ids.js"
import { SecretName } from "./Secret.js"

export const GITHUB_COM = "https://github.com"
/** The longest base URL accepted. */
export const MAX_BASE_URL_LENGTH = 512

const loopback = new Set(["127.0.0.1", "localhost", "[::1]"])

/** Why `url` cannot be a GitHub host's base URL, or undefined when it can. */
export const baseUrlProblem = (url: string): string | undefined => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return "must be an absolute URL such as https://github.com or https://ghe.example.com"
  }
  if (parsed.protocol !== "https:" && !(parsed.protocol === "http:" && loopback.has(parsed.hostname))) {
    return "must be https (plain http only on a loopback address)"
  }
  if (parsed.username !== "" || parsed.password !== "") return "must not hold a user name or password"
  if (parsed.search !== "" || parsed.hash !== "" || url.includes("?") || url.includes("#")) return "must not hold a query or fragment"
  if (parsed.pathname !== "/" && parsed.pathname !== "") return "must be the host's address alone, without a path"
  return undefined
}

/** A host's base URL, without a trailing slash. */
export const BaseUrl = Schema.String.pipe(
  Schema.maxLength(MAX_BASE_URL_LENGTH),
  Schema.filter((url) => baseUrlProblem(url) ?? true),
  Schema.transform(Schema.String, { strict: true, decode: (url) => url.replace(/\/+$/, ""), encode: (url) => url })
).annotations({ identifier: "GitHubBaseUrl" })

/** The hosts a server lets teams connect to when its operator names none: github.com alone. */
export const DEFAULT_ALLOWED_HOSTS: ReadonlyArray<string> = ["github.com"]

/**
 * Whether a base URL's host (`ghe.example.com`, or `127.0.0.1:8080` with its port) is one the
 * operator allows: the server calls what teams connect to, so a team admin must not be able to
 * point it at an internal address the operator did not name.
 */
export const hostAllowed = (baseUrl: string, allowed: ReadonlyArray<string>): boolean => {
  const url = new URL(baseUrl)
  return allowed.some((entry) => entry.toLowerCase() === url.host.toLowerCase() || entry.toLowerCase() === url.hostname.toLowerCase())
}

/** The REST API's base URL for a host. */
export const apiUrlOf = (baseUrl: string): string => (baseUrl === GITHUB_COM ? "https://api.github.com" : `${baseUrl}/api/v3`)
/** A repository's git URL on a host. */
export const repositoryUrlOf = (baseUrl: string, owner: string, repo: string): string => `${baseUrl}/${owner}/${repo}.git`

const PositiveId = Schema.Int.pipe(Schema.greaterThanOrEqualTo(1), Schema.lessThanOrEqualTo(Number.MAX_SAFE_INTEGER))

/** A fine-grained personal access token, stored as the team secret `token_secret`. */
export const TokenAuth = Schema.Struct({
  type: Schema.Literal("token"),
  token_secret: SecretName
}).annotations({ identifier: "GitHubTokenAuth" })

/** A GitHub App's installation: the App's private key (PEM) is the team secret `private_key_secret`. */
export const AppAuth = Schema.Struct({
  type: Schema.Literal("app"),
  app_id: PositiveId,
  installation_id: PositiveId,
  private_key_secret: SecretName
}).annotations({ identifier: "GitHubAppAuth" })

export const GitHubAuth = Schema.Union(TokenAuth, AppAuth).annotations({ identifier: "GitHubAuth" })
export type GitHubAuth = typeof GitHubAuth.Type

/** The team secret a credential names, as `[field, name]` (the field as the API spells it). */
export const secretOf = (auth: GitHubAuth) =>
  auth.type === "token" ? ["auth.token_secret", auth.token_secret] as const : ["auth.private_key_secret", auth.private_key_secret] as const

/** A team's connection as stored and shown. */
export const GitHubConnection = Schema.Struct({
  base_url: BaseUrl,
  auth: GitHubAuth,
  connected_by: PrincipalUid,
  connected_at: Timestamp,
  updated_at: Timestamp
}).annotations({ identifier: "GitHubConnection" })
export type GitHubConnection = typeof GitHubConnection.Type

/** `PUT /agent/github`: connect the team, or change its connection. */
export class ConnectGitHubRequest extends Schema.Class<ConnectGitHubRequest>("ConnectGitHubRequest")({
  base_url: Schema.optionalWith(BaseUrl, { default: () => GITHUB_COM }),
  auth: GitHubAuth
}) {}

/** `GET /agent/github`: whether the team is connected, and how. */
export class GitHubConnectionResponse extends Schema.Class<GitHubConnectionResponse>("GitHubConnectionResponse")({
  connected: Schema.Boolean,
  connection: Schema.NullOr(GitHubConnection)
}) {}

/** A repository the connection's credential reaches. */
export const ReachableRepository = Schema.Struct({
  owner: RepoSegment,
  repo: RepoSegment,
  default_branch: Schema.String,
  can_push: Schema.Boolean
}).annotations({ identifier: "ReachableRepository" })
export type ReachableRepository = typeof ReachableRepository.Type

/** The most repositories listed. */
export const MAX_LISTED_REPOSITORIES = 1000

/** `GET /agent/github/repositories`: what the credential reaches, by name; `truncated` past the cap. */
export class ReachableRepositoriesResponse extends Schema.Class<ReachableRepositoriesResponse>("ReachableRepositoriesResponse")({
  repositories: Schema.Array(ReachableRepository),
  truncated: Schema.Boolean
}) {}
