/**
 * The GitHost port of @agent-runs/core on GitHub's REST API through Octokit (`@octokit/rest`,
 * and `@octokit/auth-app` for GitHub Apps), for github.com (`https://api.github.com`) and GitHub
 * Enterprise Server (`<host>/api/v3`) alike: the API's base URL is the caller's.
 *
 * Decisions:
 * - Installation tokens are minted by `@octokit/auth-app` (a JWT signed with the App's key, then
 *   `POST /app/installations/:id/access_tokens`) and kept in its cache until shortly before they
 *   expire; one authenticator per App installation, key and API, so a changed key or host is a
 *   new one. They are never stored.
 * - Every call has `timeoutMs` (default 30 s). An error keeps the host's status (401: the
 *   credential was refused) and its message, with a validation failure's details (422: "A pull
 *   request already exists for …"); a host that could not be reached has no status.
 * - Octokit retries nothing and follows GitHub's pagination (`Link`) for the repository lists,
 *   stopping at the limit asked.
 */
import { createAppAuth } from "@octokit/auth-app"
import { Octokit } from "@octokit/rest"
import type { ReachableRepository } from "@agent-runs/core/domain/GitHub"
import { GitHost, GitHostError } from "@agent-runs/core/ports/GitHost"
import type { GitHostAccess, GitHostCredential, GitHostService, PullRequest } from "@agent-runs/core/ports/GitHost"
import { Effect, Layer, Option, Redacted } from "effect"
import { createHash } from "node:crypto"

export interface OctokitHostOptions {
  /** The longest one API call may take; default 30 s. */
  readonly timeoutMs?: number
}

/** The host's answer in words: its status and message, and a validation failure's details. */
const hostError = (cause: unknown): GitHostError => {
  const e = cause as { status?: number; message?: string; response?: { data?: { message?: string; errors?: ReadonlyArray<{ message?: string; field?: string; code?: string }> } } }
  const answered = e.response !== undefined && typeof e.status === "number"
  const data = e.response?.data
  const details = (data?.errors ?? []).map((d) => d.message ?? [d.field, d.code].filter(Boolean).join(" ")).filter((d) => d !== "")
  const message = answered
    ? `GitHub answered ${e.status}: ${data?.message ?? e.message ?? "an error"}${details.length === 0 ? "" : ` (${details.join("; ")})`}`
    : `GitHub could not be reached: ${e.message ?? String(cause)}`
  return new GitHostError({ message, status: answered ? e.status : undefined })
}

type RepoJson = { readonly name: string; readonly owner: { readonly login: string } | null; readonly default_branch?: string; readonly permissions?: { readonly push?: boolean } }
const reachable = (r: RepoJson): ReachableRepository => ({
  owner: r.owner?.login ?? "",
  repo: r.name,
  default_branch: r.default_branch ?? "main",
  can_push: r.permissions?.push === true
})
type PullJson = {
  readonly number: number
  readonly html_url: string
  readonly state: string
  readonly head: { readonly ref: string; readonly sha?: string | null }
}
const pull = (p: PullJson): PullRequest => ({
  number: p.number,
  url: p.html_url,
  branch: p.head.ref,
  head_commit: p.head.sha ?? null,
  state: p.state === "open" ? "open" : "closed"
})

/** Octokit logs each failed request to the console; the service reports them itself. */
const silent = { debug() {}, info() {}, warn() {}, error() {} }

export const make = (options: OctokitHostOptions = {}): GitHostService => {
  const timeoutMs = options.timeoutMs ?? 30_000
  const octokit = (access: GitHostAccess) => new Octokit({ baseUrl: access.apiUrl, auth: Redacted.value(access.token), request: { retries: 0 }, log: silent })
  /** One API call, within the time limit. */
  const call = <A>(f: (signal: AbortSignal) => Promise<A>) =>
    Effect.tryPromise({ try: (signal) => f(AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)])), catch: hostError })

  const appAuths = new Map<string, ReturnType<typeof createAppAuth>>()
  const appAuth = (apiUrl: string, credential: Extract<GitHostCredential, { type: "app" }>) => {
    const privateKey = Redacted.value(credential.private_key)
    const key = createHash("sha256").update(`${apiUrl}\n${credential.app_id}\n${credential.installation_id}\n${privateKey}`).digest("hex")
    let auth = appAuths.get(key)
    if (auth === undefined) {
      auth = createAppAuth({
        appId: credential.app_id,
        privateKey,
        installationId: credential.installation_id,
        request: new Octokit({ baseUrl: apiUrl, request: { retries: 0 }, log: silent }).request
      })
      appAuths.set(key, auth)
    }
    return auth
  }

  const accessToken: GitHostService["accessToken"] = (apiUrl, credential) =>
    credential.type === "token"
      ? Effect.succeed(credential.token)
      : call(() => appAuth(apiUrl, credential)({ type: "installation" })).pipe(Effect.map((auth) => Redacted.make(auth.token)))

  const repositories: GitHostService["repositories"] = (access, kind, limit) =>
    call(async (signal) => {
      const client = octokit(access)
      const found: Array<ReachableRepository> = []
      const pages = kind === "app"
        ? client.paginate.iterator(client.rest.apps.listReposAccessibleToInstallation, { per_page: 100, request: { signal } })
        : client.paginate.iterator(client.rest.repos.listForAuthenticatedUser, { per_page: 100, request: { signal } })
      for await (const page of pages) {
        for (const repo of page.data as ReadonlyArray<RepoJson>) {
          if (found.length === limit) return { repositories: found, truncated: true }
          found.push(reachable(repo))
        }
      }
      return { repositories: found, truncated: false }
    })

  const repository: GitHostService["repository"] = (access, owner, repo) =>
    call((signal) => octokit(access).rest.repos.get({ owner, repo, request: { signal } })).pipe(
      Effect.map((r) => Option.some(reachable(r.data as RepoJson))),
      Effect.catchIf((e) => e.status === 404, () => Effect.succeed(Option.none()))
    )

  const findOpenPullRequest: GitHostService["findOpenPullRequest"] = (access, owner, repo, branch) =>
    call((signal) => octokit(access).rest.pulls.list({ owner, repo, head: `${owner}:${branch}`, state: "open", per_page: 1, request: { signal } })).pipe(
      Effect.map((r) => Option.map(Option.fromNullable(r.data[0]), (p) => pull(p as PullJson)))
    )

  const createPullRequest: GitHostService["createPullRequest"] = (access, p) =>
    call((signal) =>
      octokit(access).rest.pulls.create({ owner: p.owner, repo: p.repo, head: p.head, base: p.base, title: p.title, body: p.body, draft: p.draft, request: { signal } })
    ).pipe(Effect.map((r) => pull(r.data as PullJson)))

  const comment: GitHostService["comment"] = (access, owner, repo, number, body) =>
    call((signal) => octokit(access).rest.issues.createComment({ owner, repo, issue_number: number, body, request: { signal } })).pipe(Effect.asVoid)

  return { accessToken, repositories, repository, findOpenPullRequest, createPullRequest, comment }
}

/** GitHost on GitHub's REST API. */
export const layer = (options: OctokitHostOptions = {}): Layer.Layer<GitHost> => Layer.succeed(GitHost, make(options))
