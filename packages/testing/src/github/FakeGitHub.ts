/**
 * A GitHub host on 127.0.0.1 for tests, laid out as GitHub Enterprise Server is: the web and git
 * at `http://127.0.0.1:<port>/<owner>/<repo>.git`, the REST API at `…/api/v3`. Git's smart HTTP
 * is served by git's own `git http-backend` (real clone, fetch and push, credentials checked);
 * the API is a double of the calls the service makes (`GitHubApi`).
 *
 * Credentials: personal access tokens (`addToken`) and GitHub Apps (`addApp`: a real RSA key pair;
 * the service signs JWTs with the private key, the double checks them with the public one and
 * mints installation tokens). Both reach every repository or the ones named, read or write. Git
 * answers 401 for a missing or unknown token, 404 for a repository the token cannot see and 403
 * for a push it may not make.
 */
import { generateKeyPairSync } from "node:crypto"
import { once } from "node:events"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type ApiRequest, gitHubApi } from "./GitHubApi.js"
import { type GitRequest, gitHttpBackend } from "./GitHttpBackend.js"
import { type Grant, GitHubState, type PullRequest, type Repository } from "./GitHubState.js"

export interface GitHubApp {
  readonly appId: number
  readonly installationId: number
  /** PEM, PKCS#1 (`BEGIN RSA PRIVATE KEY`), as GitHub hands it out. */
  readonly privateKey: string
}

export interface FakeGitHub {
  /** The host's base URL (as GitHub Enterprise Server's): repositories at `<url>/<owner>/<repo>.git`. */
  readonly url: string
  /** The REST API's base URL: `<url>/api/v3`. */
  readonly apiUrl: string
  readonly createRepository: (owner: string, repo: string, files: Readonly<Record<string, string>>, defaultBranch?: string) => Repository
  /** A personal access token reaching `grant`'s repositories. */
  readonly addToken: (grant: Grant, token?: string) => string
  /** Revokes a token: the host refuses it from now on (401). */
  readonly revokeToken: (token: string) => void
  /** A GitHub App installed with `grant`. */
  readonly addApp: (grant: Grant) => GitHubApp
  /** A branch's commit on the host, if the branch exists. */
  readonly branch: (owner: string, repo: string, branch: string) => string | undefined
  readonly file: (owner: string, repo: string, ref: string, path: string) => string
  /** Someone else's commit on a branch of the host. */
  readonly commit: (owner: string, repo: string, branch: string, files: Readonly<Record<string, string>>) => string
  /** Points a ref (`refs/heads/x`, `refs/tags/v1`) of a repository of the host at a commit. */
  readonly setRef: (owner: string, repo: string, ref: string, commit: string) => void
  readonly pulls: ReadonlyArray<PullRequest>
  readonly gitRequests: ReadonlyArray<GitRequest>
  readonly apiRequests: ReadonlyArray<ApiRequest>
  readonly close: () => Promise<void>
}

/** Starts the host on a free port of 127.0.0.1, its repositories in a new temporary directory. */
export const startFakeGitHub = async (): Promise<FakeGitHub> => {
  const root = mkdtempSync(join(tmpdir(), "fake-github-"))
  const state = new GitHubState(root)
  const gitRequests: Array<GitRequest> = []
  const apiRequests: Array<ApiRequest> = []
  let url = ""
  const git = gitHttpBackend({
    root,
    authorize: ({ owner, repo, service, token }) => {
      const grant = state.grantOf(token, Date.now())
      if (grant === undefined) return "unauthorized"
      if (!state.reaches(grant, owner, repo)) return "not_found"
      return service === "git-receive-pack" && grant.permission !== "write" ? "forbidden" : "ok"
    }
  }, (request) => gitRequests.push(request))
  const api = gitHubApi(state, () => url, (request) => apiRequests.push(request))
  const server = createServer((req, res) => {
    if (api(req, res) || git(req, res)) return
    res.writeHead(404, { "Content-Type": "text/plain" }).end("Not Found\n")
  })
  server.listen(0, "127.0.0.1")
  await once(server, "listening")
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  let nextApp = 1
  return {
    url,
    apiUrl: `${url}/api/v3`,
    createRepository: (owner, repo, files, defaultBranch) => state.createRepository(owner, repo, files, defaultBranch),
    addToken: (grant, token) => state.addToken(grant, token),
    revokeToken: (token) => void state.tokens.delete(token),
    addApp: (grant) => {
      const { privateKey, publicKey } = generateKeyPairSync("rsa", {
        modulusLength: 2048,
        privateKeyEncoding: { type: "pkcs1", format: "pem" },
        publicKeyEncoding: { type: "spki", format: "pem" }
      })
      const appId = 1000 + nextApp
      const installationId = 5000 + nextApp++
      state.installations.set(installationId, { ...grant, id: installationId, appId, publicKey })
      return { appId, installationId, privateKey }
    },
    branch: (owner, repo, branch) => state.branch(owner, repo, branch),
    file: (owner, repo, ref, path) => state.file(owner, repo, ref, path),
    commit: (owner, repo, branch, files) => state.commit(owner, repo, branch, files),
    setRef: (owner, repo, ref, commit) => state.setRef(owner, repo, ref, commit),
    pulls: state.pulls,
    gitRequests,
    apiRequests,
    close: async () => {
      server.closeAllConnections()
      server.close()
      await once(server, "close")
      rmSync(root, { recursive: true, force: true })
    }
  }
}
