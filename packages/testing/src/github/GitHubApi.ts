/**
 * The REST API double: the calls the service makes to GitHub, answered as GitHub (and GitHub
 * Enterprise Server, under `/api/v3`) answers them, from `GitHubState`.
 *
 * - `POST /app/installations/:id/access_tokens` (an App's RS256 JWT, checked against its public
 *   key; `iss` the App's id, at most ten minutes long) mints an installation token.
 * - `GET /repos/:owner/:repo`, `GET /installation/repositories`, `GET /user/repos`: what a token
 *   reaches (404 for a repository it does not, as GitHub hides them).
 * - Pull requests: list (`head`, `state`), create (422 when the head branch is not on the host or
 *   a pull request for it is open), get, update; issue comments on them.
 * - A missing or unknown token is 401 `Bad credentials`; a read-only token creating a pull
 *   request is 403 `Resource not accessible by personal access token`.
 */
import { createPublicKey } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"
import { jwtVerify } from "jose"
import { tokenOf } from "./GitHttpBackend.js"
import type { Grant, GitHubState, PullRequest } from "./GitHubState.js"

export interface ApiRequest {
  readonly method: string
  readonly path: string
  readonly status: number
}

type Reply = { readonly status: number; readonly body: unknown }
type Route = {
  readonly method: string
  readonly pattern: RegExp
  readonly handle: (ctx: Context, params: ReadonlyArray<string>) => Reply | Promise<Reply>
}
interface Context {
  readonly state: GitHubState
  readonly base: string
  readonly url: URL
  readonly body: Record<string, unknown>
  readonly authorization: string | undefined
}

const docs = "https://docs.github.com/rest"
const fail = (status: number, message: string, errors?: ReadonlyArray<unknown>): Reply => ({
  status,
  body: { message, documentation_url: docs, status: String(status), ...(errors === undefined ? {} : { errors }) }
})
const ok = (body: unknown, status = 200): Reply => ({ status, body })

const repoJson = (ctx: Context, owner: string, repo: string, grant: Grant) => {
  const found = ctx.state.repository(owner, repo)!
  return {
    name: found.repo,
    full_name: `${found.owner}/${found.repo}`,
    owner: { login: found.owner },
    private: true,
    default_branch: found.defaultBranch,
    html_url: `${ctx.base}/${found.owner}/${found.repo}`,
    clone_url: `${ctx.base}/${found.owner}/${found.repo}.git`,
    permissions: { admin: false, push: grant.permission === "write", pull: true }
  }
}

const pullJson = (ctx: Context, pull: PullRequest) => ({
  number: pull.number,
  state: pull.state,
  title: pull.title,
  body: pull.body,
  draft: pull.draft,
  html_url: `${ctx.base}/${pull.owner}/${pull.repo}/pull/${pull.number}`,
  url: `${ctx.base}/api/v3/repos/${pull.owner}/${pull.repo}/pulls/${pull.number}`,
  head: { ref: pull.head, label: `${pull.owner}:${pull.head}`, sha: ctx.state.branch(pull.owner, pull.repo, pull.head) ?? null },
  base: { ref: pull.base },
  user: { login: pull.user }
})

/** The token's grant, or the 401 GitHub answers. */
const authenticated = (ctx: Context) => ctx.state.grantOf(tokenOf(ctx.authorization), Date.now())

/** A route that needs a token reaching the repository `params[0]/params[1]`. */
const onRepository = (
  handle: (ctx: Context, owner: string, repo: string, grant: Grant & { readonly login: string }, params: ReadonlyArray<string>) => Reply
) =>
(ctx: Context, params: ReadonlyArray<string>): Reply => {
  const grant = authenticated(ctx)
  if (grant === undefined) return fail(401, "Bad credentials")
  const [owner, repo] = params as [string, string]
  if (!ctx.state.reaches(grant, owner, repo)) return fail(404, "Not Found")
  return handle(ctx, owner, repo, grant, params)
}

const findPull = (ctx: Context, owner: string, repo: string, number: string) =>
  ctx.state.pulls.find((p) => p.owner.toLowerCase() === owner.toLowerCase() && p.repo.toLowerCase() === repo.toLowerCase() && p.number === Number(number))

const notWritable = (grant: Grant & { readonly login: string }) =>
  grant.permission === "write"
    ? undefined
    : fail(403, grant.login.endsWith("[bot]") ? "Resource not accessible by integration" : "Resource not accessible by personal access token")

const mintToken = async (ctx: Context, params: ReadonlyArray<string>): Promise<Reply> => {
  const installation = ctx.state.installations.get(Number(params[0]))
  const jwt = /^bearer /i.test(ctx.authorization ?? "") ? ctx.authorization!.slice(7) : undefined
  if (installation === undefined || jwt === undefined) return fail(installation === undefined ? 404 : 401, installation === undefined ? "Not Found" : "A JSON web token could not be decoded")
  try {
    const { payload } = await jwtVerify(jwt, createPublicKey(installation.publicKey), { algorithms: ["RS256"] })
    // `iss` is the App's id, as a number (as Octokit sends it) or a string.
    if (String(payload.iss as unknown) !== String(installation.appId)) return fail(401, "'Issuer' claim ('iss') must be the App's id")
    if (payload.exp === undefined || payload.iat === undefined || payload.exp - payload.iat > 600) {
      return fail(401, "'Expiration time' claim ('exp') is too far in the future")
    }
  } catch (e) {
    return fail(401, `A JSON web token could not be decoded (${(e as Error).message})`)
  }
  const minted = ctx.state.mintInstallationToken(installation, Date.now())
  return ok({
    token: minted.token,
    expires_at: new Date(minted.expiresAt).toISOString(),
    permissions: { contents: installation.permission, pull_requests: installation.permission, metadata: "read" },
    repository_selection: installation.repositories === "all" ? "all" : "selected"
  }, 201)
}

const listRepositories = (wrap: (repositories: ReadonlyArray<unknown>) => unknown) => (ctx: Context): Reply => {
  const grant = authenticated(ctx)
  if (grant === undefined) return fail(401, "Bad credentials")
  return ok(wrap(ctx.state.reachable(grant).map((r) => repoJson(ctx, r.owner, r.repo, grant))))
}

const createPull = onRepository((ctx, owner, repo, grant) => {
  const denied = notWritable(grant)
  if (denied !== undefined) return denied
  const { title, body, head, base, draft } = ctx.body as { title?: string; body?: string; head?: string; base?: string; draft?: boolean }
  if (typeof title !== "string" || typeof head !== "string" || typeof base !== "string") {
    return fail(422, "Validation Failed", [{ resource: "PullRequest", code: "missing_field", field: typeof title !== "string" ? "title" : typeof head !== "string" ? "head" : "base" }])
  }
  const branch = head.includes(":") ? head.slice(head.indexOf(":") + 1) : head
  if (ctx.state.branch(owner, repo, branch) === undefined) return fail(422, "Validation Failed", [{ resource: "PullRequest", field: "head", code: "invalid" }])
  if (ctx.state.branch(owner, repo, base) === undefined) return fail(422, "Validation Failed", [{ resource: "PullRequest", field: "base", code: "invalid" }])
  const open = ctx.state.pulls.find((p) => p.owner === owner && p.repo === repo && p.head === branch && p.state === "open")
  if (open !== undefined) {
    return fail(422, "Validation Failed", [{ resource: "PullRequest", code: "custom", message: `A pull request already exists for ${owner}:${branch}.` }])
  }
  const pull: PullRequest = {
    number: ctx.state.pulls.filter((p) => p.owner === owner && p.repo === repo).length + 1,
    owner,
    repo,
    title,
    body: body ?? "",
    draft: draft === true,
    head: branch,
    base,
    state: "open",
    comments: [],
    user: grant.login
  }
  ctx.state.pulls.push(pull)
  return ok(pullJson(ctx, pull), 201)
})

const routes: ReadonlyArray<Route> = [
  { method: "POST", pattern: /^\/app\/installations\/(\d+)\/access_tokens$/, handle: mintToken },
  { method: "GET", pattern: /^\/installation\/repositories$/, handle: listRepositories((repositories) => ({ total_count: repositories.length, repositories })) },
  { method: "GET", pattern: /^\/user\/repos$/, handle: listRepositories((repositories) => repositories) },
  { method: "GET", pattern: /^\/repos\/([^/]+)\/([^/]+)$/, handle: onRepository((ctx, owner, repo, grant) => ok(repoJson(ctx, owner, repo, grant))) },
  {
    method: "GET",
    pattern: /^\/repos\/([^/]+)\/([^/]+)\/pulls$/,
    handle: onRepository((ctx, owner, repo) => {
      const head = ctx.url.searchParams.get("head")
      const state = ctx.url.searchParams.get("state") ?? "open"
      return ok(ctx.state.pulls
        .filter((p) => p.owner === owner && p.repo === repo && (state === "all" || p.state === state))
        .filter((p) => head === null || `${p.owner}:${p.head}` === head || p.head === head)
        .map((p) => pullJson(ctx, p)))
    })
  },
  { method: "POST", pattern: /^\/repos\/([^/]+)\/([^/]+)\/pulls$/, handle: createPull },
  {
    method: "GET",
    pattern: /^\/repos\/([^/]+)\/([^/]+)\/pulls\/(\d+)$/,
    handle: onRepository((ctx, owner, repo, _grant, params) => {
      const pull = findPull(ctx, owner, repo, params[2]!)
      return pull === undefined ? fail(404, "Not Found") : ok(pullJson(ctx, pull))
    })
  },
  {
    method: "PATCH",
    pattern: /^\/repos\/([^/]+)\/([^/]+)\/pulls\/(\d+)$/,
    handle: onRepository((ctx, owner, repo, grant, params) => {
      const pull = findPull(ctx, owner, repo, params[2]!)
      if (pull === undefined) return fail(404, "Not Found")
      const denied = notWritable(grant)
      if (denied !== undefined) return denied
      const { title, body } = ctx.body as { title?: string; body?: string }
      if (typeof title === "string") pull.title = title
      if (typeof body === "string") pull.body = body
      return ok(pullJson(ctx, pull))
    })
  },
  {
    method: "POST",
    pattern: /^\/repos\/([^/]+)\/([^/]+)\/issues\/(\d+)\/comments$/,
    handle: onRepository((ctx, owner, repo, grant, params) => {
      const pull = findPull(ctx, owner, repo, params[2]!)
      if (pull === undefined) return fail(404, "Not Found")
      const denied = notWritable(grant)
      if (denied !== undefined) return denied
      const body = (ctx.body as { body?: unknown }).body
      if (typeof body !== "string") return fail(422, "Validation Failed", [{ resource: "IssueComment", code: "missing_field", field: "body" }])
      pull.comments.push(body)
      return ok({ id: pull.comments.length, body, html_url: `${ctx.base}/${owner}/${repo}/pull/${pull.number}#issuecomment-${pull.comments.length}` }, 201)
    })
  }
]

const readBody = async (req: IncomingMessage): Promise<Record<string, unknown>> => {
  const chunks: Array<Buffer> = []
  let size = 0
  for await (const chunk of req) {
    size += (chunk as Buffer).length
    if (size > 1024 * 1024) throw new Error("request body over 1 MiB")
    chunks.push(chunk as Buffer)
  }
  if (size === 0) return {}
  const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString("utf8"))
  return typeof parsed === "object" && parsed !== null ? parsed as Record<string, unknown> : {}
}

/** Handles a request under `/api/v3` (true), or leaves it to the caller (false). */
export const gitHubApi = (state: GitHubState, base: () => string, record: (request: ApiRequest) => void) =>
(req: IncomingMessage, res: ServerResponse): boolean => {
  const url = new URL(req.url ?? "/", "http://host")
  if (!url.pathname.startsWith("/api/v3/")) return false
  const path = url.pathname.slice("/api/v3".length)
  const method = req.method ?? "GET"
  const answer = (reply: Reply) => {
    record({ method, path, status: reply.status })
    res.writeHead(reply.status, { "Content-Type": "application/json; charset=utf-8" }).end(JSON.stringify(reply.body))
  }
  void (async () => {
    const route = routes.find((r) => r.method === method && r.pattern.test(path))
    if (route === undefined) return answer(fail(404, "Not Found"))
    const body = await readBody(req)
    const ctx: Context = { state, base: base(), url, body, authorization: req.headers.authorization }
    answer(await route.handle(ctx, route.pattern.exec(path)!.slice(1)))
  })().catch((e: unknown) => answer(fail(400, `Problems parsing JSON (${(e as Error).message})`)))
  return true
}
