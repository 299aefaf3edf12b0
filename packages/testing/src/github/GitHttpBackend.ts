/**
 * Git's smart HTTP protocol for a directory of bare repositories, served by git's own
 * `git http-backend` (a CGI program) for each request: real clones, fetches and pushes, as a Git
 * host answers them, with the credential check in front.
 *
 * - Repositories live at `<root>/<owner>/<repo>.git`; a request's path is `/<owner>/<repo>.git/…`
 *   (or without `.git`, as hosts accept).
 * - `authorize` sees the request's credential (HTTP Basic, any user name and the token as
 *   password, as GitHub takes `x-access-token:<token>`; or `Bearer <token>`) and answers `ok`,
 *   `unauthorized` (401 with a Basic challenge, as hosts answer a missing or wrong credential) or
 *   `forbidden` (403: known, but not allowed this service: a push with a read-only token) or
 *   `not_found` (404: a repository the credential cannot see, as GitHub hides private ones).
 * - Pushes are enabled (the backend runs with `REMOTE_USER` set); the protocol version the client
 *   asks for (`Git-Protocol`) and a gzip'd request body pass through.
 * - Every request is recorded, with the bytes answered, so a test can count what a client asked
 *   the host for (`git-upload-pack` requests are clones and fetches).
 */
import { spawn } from "node:child_process"
import type { IncomingMessage, ServerResponse } from "node:http"

export type GitService = "git-upload-pack" | "git-receive-pack"

export interface GitRequest {
  readonly owner: string
  readonly repo: string
  readonly service: GitService
  /** `advertise` is `GET info/refs`; `rpc` is the `POST` that negotiates and sends objects. */
  readonly phase: "advertise" | "rpc"
  /** The token presented, if any. */
  readonly token: string | undefined
  readonly status: number
  readonly bytesSent: number
}

export type GitAccess = "ok" | "unauthorized" | "forbidden" | "not_found"

export interface GitHttpBackendOptions {
  readonly root: string
  readonly authorize: (request: { readonly owner: string; readonly repo: string; readonly service: GitService; readonly token: string | undefined }) => GitAccess
}

/** The token of an `Authorization` header: Basic's password, or Bearer's token. */
export const tokenOf = (header: string | undefined): string | undefined => {
  if (header === undefined) return undefined
  const [scheme, value] = header.split(" ", 2)
  if (value === undefined) return undefined
  if (scheme?.toLowerCase() === "bearer" || scheme?.toLowerCase() === "token") return value
  if (scheme?.toLowerCase() !== "basic") return undefined
  const decoded = Buffer.from(value, "base64").toString("utf8")
  const colon = decoded.indexOf(":")
  return colon < 0 ? undefined : decoded.slice(colon + 1)
}

const pathPattern = /^\/([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+?)(?:\.git)?(\/(?:info\/refs|git-upload-pack|git-receive-pack))$/

/** What a request asks for, or undefined when it is not a smart HTTP request of a repository. */
const parse = (req: IncomingMessage) => {
  const url = new URL(req.url ?? "/", "http://host")
  const match = pathPattern.exec(url.pathname)
  if (match === null) return undefined
  const [, owner, repo, rest] = match as unknown as [string, string, string, string]
  const service = rest === "/info/refs" ? url.searchParams.get("service") : rest.slice(1)
  if (service !== "git-upload-pack" && service !== "git-receive-pack") return undefined
  return { owner, repo, service: service as GitService, phase: rest === "/info/refs" ? "advertise" as const : "rpc" as const, rest, query: url.search.slice(1) }
}

/** Handles a request when it is one for git (true), or leaves it to the caller (false). */
export const gitHttpBackend = (options: GitHttpBackendOptions, record: (request: GitRequest) => void) =>
(req: IncomingMessage, res: ServerResponse): boolean => {
  const asked = parse(req)
  if (asked === undefined) return false
  const token = tokenOf(req.headers.authorization)
  const access = options.authorize({ owner: asked.owner, repo: asked.repo, service: asked.service, token })
  const done = (status: number, bytesSent: number) =>
    record({ owner: asked.owner, repo: asked.repo, service: asked.service, phase: asked.phase, token, status, bytesSent })
  if (access !== "ok") {
    const status = access === "unauthorized" ? 401 : access === "forbidden" ? 403 : 404
    if (status === 401) res.setHeader("WWW-Authenticate", "Basic realm=\"git\"")
    res.writeHead(status, { "Content-Type": "text/plain" }).end(
      status === 401 ? "Authentication failed\n" : status === 403 ? `Permission to ${asked.owner}/${asked.repo}.git denied\n` : "Repository not found.\n"
    )
    req.resume()
    done(status, 0)
    return true
  }
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    GIT_PROJECT_ROOT: options.root,
    GIT_HTTP_EXPORT_ALL: "1",
    PATH_INFO: `/${asked.owner}/${asked.repo}.git${asked.rest}`,
    QUERY_STRING: asked.query,
    REQUEST_METHOD: req.method ?? "GET",
    CONTENT_TYPE: req.headers["content-type"] ?? "",
    REMOTE_USER: "git",
    REMOTE_ADDR: req.socket.remoteAddress ?? "127.0.0.1"
  }
  if (req.headers["content-length"] !== undefined) env.CONTENT_LENGTH = req.headers["content-length"]
  if (req.headers["content-encoding"] !== undefined) env.HTTP_CONTENT_ENCODING = req.headers["content-encoding"]
  const protocol = req.headers["git-protocol"]
  if (typeof protocol === "string") env.GIT_PROTOCOL = protocol
  const child = spawn("git", ["http-backend"], { env, stdio: ["pipe", "pipe", "pipe"] })
  req.pipe(child.stdin)
  child.stdin.on("error", () => {})
  let head = Buffer.alloc(0)
  let status = 200
  let sent = 0
  let headersDone = false
  child.stdout.on("data", (chunk: Buffer) => {
    if (headersDone) {
      sent += chunk.length
      res.write(chunk)
      return
    }
    head = Buffer.concat([head, chunk])
    const end = head.indexOf("\r\n\r\n")
    if (end < 0) return
    headersDone = true
    const headers: Record<string, string> = {}
    for (const line of head.subarray(0, end).toString("latin1").split("\r\n")) {
      const colon = line.indexOf(":")
      if (colon < 0) continue
      const name = line.slice(0, colon).trim()
      const value = line.slice(colon + 1).trim()
      if (name.toLowerCase() === "status") status = Number(value.split(" ")[0])
      else headers[name] = value
    }
    res.writeHead(status, headers)
    const body = head.subarray(end + 4)
    sent += body.length
    res.write(body)
  })
  child.stderr.resume()
  child.on("close", (code) => {
    if (!headersDone) {
      status = 500
      res.writeHead(500, { "Content-Type": "text/plain" }).end(`git http-backend exited with ${code}\n`)
    } else res.end()
    done(status, sent)
  })
  return true
}
