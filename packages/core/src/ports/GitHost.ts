/**
 * Port: a GitHub host's REST API (github.com or GitHub Enterprise Server), for the calls the
 * service makes with a team's connection: an access token from the team's credential (a personal
 * access token as it is, or an installation token minted for a GitHub App), what repositories it
 * reaches, and pull requests. The adapter (`@agent-runs/github`, Octokit) knows HTTP; the service
 * reads the credential's secrets and says which host.
 *
 * A `Context.Reference` whose default has no host: an embedder without the adapter can store no
 * connection (every call fails saying so), and its repositories stay local folders.
 */
import type { Option, Redacted } from "effect"
import { Context, Data, Effect } from "effect"
import { DEFAULT_ALLOWED_HOSTS, type ReachableRepository } from "../domain/GitHub.js"

/** The host answered an error (`status`, 401 a refused credential), or could not be reached (no status). */
export class GitHostError extends Data.TaggedError("GitHostError")<{
  readonly message: string
  readonly status: number | undefined
}> {}

/** A credential with its secret values read. */
export type GitHostCredential =
  | { readonly type: "token"; readonly token: Redacted.Redacted<string> }
  | { readonly type: "app"; readonly app_id: number; readonly installation_id: number; readonly private_key: Redacted.Redacted<string> }

/** Where to call: the host's REST API base URL and the access token. */
export interface GitHostAccess {
  readonly apiUrl: string
  readonly token: Redacted.Redacted<string>
}

export interface PullRequest {
  readonly number: number
  /** The pull request's web page. */
  readonly url: string
  readonly branch: string
  /** The commit its branch is at; null when the host does not say. */
  readonly head_commit: string | null
  readonly state: "open" | "closed"
}

export interface NewPullRequest {
  readonly owner: string
  readonly repo: string
  /** The branch with the changes. */
  readonly head: string
  /** The branch to merge into. */
  readonly base: string
  readonly title: string
  readonly body: string
  readonly draft: boolean
}

export interface GitHostService {
  /** An access token for `credential`: the token itself, or an installation token (cached until near its end). */
  readonly accessToken: (apiUrl: string, credential: GitHostCredential) => Effect.Effect<Redacted.Redacted<string>, GitHostError>
  /** The repositories the token reaches, up to `limit` (`truncated` when there were more). */
  readonly repositories: (
    access: GitHostAccess,
    kind: GitHostCredential["type"],
    limit: number
  ) => Effect.Effect<{ readonly repositories: ReadonlyArray<ReachableRepository>; readonly truncated: boolean }, GitHostError>
  /** One repository, when the token reaches it. */
  readonly repository: (access: GitHostAccess, owner: string, repo: string) => Effect.Effect<Option.Option<ReachableRepository>, GitHostError>
  /** The open pull request whose head is `branch` of the repository itself, if any. */
  readonly findOpenPullRequest: (access: GitHostAccess, owner: string, repo: string, branch: string) => Effect.Effect<Option.Option<PullRequest>, GitHostError>
  readonly createPullRequest: (access: GitHostAccess, pull: NewPullRequest) => Effect.Effect<PullRequest, GitHostError>
  readonly comment: (access: GitHostAccess, owner: string, repo: string, number: number, body: string) => Effect.Effect<void, GitHostError>
}

const unavailable = () =>
  Effect.fail(new GitHostError({ message: "this server has no GitHub support (the @agent-runs/github adapter is not installed)", status: undefined }))

/** The default: no host. */
export const noGitHost: GitHostService = {
  accessToken: unavailable,
  repositories: unavailable,
  repository: unavailable,
  findOpenPullRequest: unavailable,
  createPullRequest: unavailable,
  comment: unavailable
}

export class GitHost extends Context.Reference<GitHost>()("@agent-runs/core/GitHost", {
  defaultValue: (): GitHostService => noGitHost
}) {}

/** The hosts teams may connect to (`AGENT_RUNS_GITHUB_HOSTS`): host names, or `host:port`. */
export class GitHubHosts extends Context.Reference<GitHubHosts>()("@agent-runs/core/GitHubHosts", {
  defaultValue: (): ReadonlyArray<string> => DEFAULT_ALLOWED_HOSTS
}) {}
