/**
 * What the GitHub double knows: repositories (bare git repositories on disk), credentials
 * (personal access tokens and App installations with the tokens they minted), pull requests and
 * their comments. The HTTP sides (`GitHttpBackend`, `GitHubApi`) read and change it.
 */
import { execFileSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"

export type Permission = "read" | "write"

/** What a credential reaches: every repository of the host, or the ones named (`owner/repo`). */
export interface Grant {
  readonly repositories: "all" | ReadonlyArray<string>
  readonly permission: Permission
}

export interface Installation extends Grant {
  readonly id: number
  readonly appId: number
  /** The App's public key (PEM), to check the JWTs that ask for installation tokens. */
  readonly publicKey: string
}

export interface PullRequest {
  readonly number: number
  readonly owner: string
  readonly repo: string
  title: string
  body: string
  readonly draft: boolean
  readonly head: string
  readonly base: string
  state: "open" | "closed"
  readonly comments: Array<string>
  /** Who opened it: the credential's login. */
  readonly user: string
}

export interface Repository {
  readonly owner: string
  readonly repo: string
  readonly defaultBranch: string
  readonly dir: string
}

const git = (cwd: string, args: ReadonlyArray<string>, input?: string) =>
  execFileSync("git", ["-c", `safe.directory=*`, ...args], {
    cwd,
    input,
    encoding: "utf8",
    env: { ...process.env, GIT_AUTHOR_NAME: "Fake GitHub", GIT_AUTHOR_EMAIL: "fake@github.test", GIT_COMMITTER_NAME: "Fake GitHub", GIT_COMMITTER_EMAIL: "fake@github.test" }
  }).trim()

export class GitHubState {
  readonly repositories = new Map<string, Repository>()
  readonly tokens = new Map<string, Grant & { readonly login: string; readonly expiresAt?: number }>()
  readonly installations = new Map<number, Installation>()
  readonly pulls: Array<PullRequest> = []

  constructor(readonly root: string) {}

  /** A bare repository `<root>/<owner>/<repo>.git` with one commit of `files` on `defaultBranch`. */
  createRepository(owner: string, repo: string, files: Readonly<Record<string, string>>, defaultBranch = "main"): Repository {
    const dir = join(this.root, owner, `${repo}.git`)
    mkdirSync(dir, { recursive: true })
    git(dir, ["init", "--quiet", "--bare", `--initial-branch=${defaultBranch}`])
    git(dir, ["config", "http.receivepack", "true"])
    const work = mkdtempSync(join(this.root, ".work-"))
    git(work, ["init", "--quiet", `--initial-branch=${defaultBranch}`])
    for (const [path, content] of Object.entries(files)) {
      mkdirSync(dirname(join(work, path)), { recursive: true })
      writeFileSync(join(work, path), content)
    }
    git(work, ["add", "--all"])
    git(work, ["commit", "--quiet", "--allow-empty", "-m", "initial commit"])
    git(work, ["push", "--quiet", dir, `HEAD:refs/heads/${defaultBranch}`])
    const created = { owner, repo, defaultBranch, dir }
    this.repositories.set(`${owner}/${repo}`.toLowerCase(), created)
    return created
  }

  repository(owner: string, repo: string): Repository | undefined {
    return this.repositories.get(`${owner}/${repo}`.toLowerCase())
  }

  /** The commit a branch points to, or undefined when the repository has no such branch. */
  branch(owner: string, repo: string, branch: string): string | undefined {
    const found = this.repository(owner, repo)
    if (found === undefined) return undefined
    try {
      return git(found.dir, ["rev-parse", "--verify", "-q", `refs/heads/${branch}^{commit}`])
    } catch {
      return undefined
    }
  }

  /** A file's content at a ref of a repository. */
  file(owner: string, repo: string, ref: string, path: string): string {
    const found = this.repository(owner, repo)
    if (found === undefined) throw new Error(`no repository ${owner}/${repo}`)
    return git(found.dir, ["show", `${ref}:${path}`])
  }

  /** A new commit on a branch of the host's repository (as someone else pushing meanwhile). */
  commit(owner: string, repo: string, branch: string, files: Readonly<Record<string, string>>): string {
    const found = this.repository(owner, repo)
    if (found === undefined) throw new Error(`no repository ${owner}/${repo}`)
    const work = mkdtempSync(join(this.root, ".work-"))
    git(work, ["clone", "--quiet", "--branch", branch, found.dir, "."])
    for (const [path, content] of Object.entries(files)) {
      mkdirSync(dirname(join(work, path)), { recursive: true })
      writeFileSync(join(work, path), content)
    }
    git(work, ["add", "--all"])
    git(work, ["commit", "--quiet", "-m", "a commit on the host"])
    git(work, ["push", "--quiet", "origin", `HEAD:refs/heads/${branch}`])
    return git(work, ["rev-parse", "HEAD"])
  }

  /** Points a ref of the host's repository (`refs/heads/x`, `refs/tags/v1`) at a commit, as a push would. */
  setRef(owner: string, repo: string, ref: string, commit: string): void {
    const found = this.repository(owner, repo)
    if (found === undefined) throw new Error(`no repository ${owner}/${repo}`)
    git(found.dir, ["update-ref", ref, commit])
  }

  /** A personal access token reaching what `grant` says. */
  addToken(grant: Grant, token = `github_pat_${randomBytes(16).toString("hex")}`, login = "octo-user"): string {
    this.tokens.set(token, { ...grant, login })
    return token
  }

  /** An installation token minted for an App's installation (one hour, as GitHub's). */
  mintInstallationToken(installation: Installation, now: number): { readonly token: string; readonly expiresAt: number } {
    const token = `ghs_${randomBytes(18).toString("hex")}`
    const expiresAt = now + 60 * 60 * 1000
    this.tokens.set(token, { repositories: installation.repositories, permission: installation.permission, login: `app-${installation.appId}[bot]`, expiresAt })
    return { token, expiresAt }
  }

  /** The grant of a token still valid now, if any. */
  grantOf(token: string | undefined, now: number) {
    if (token === undefined) return undefined
    const grant = this.tokens.get(token)
    if (grant === undefined || (grant.expiresAt !== undefined && grant.expiresAt <= now)) return undefined
    return grant
  }

  /** Whether a grant reaches a repository (that exists). */
  reaches(grant: Grant, owner: string, repo: string): boolean {
    if (this.repository(owner, repo) === undefined) return false
    return grant.repositories === "all" || grant.repositories.some((r) => r.toLowerCase() === `${owner}/${repo}`.toLowerCase())
  }

  /** The repositories a grant reaches. */
  reachable(grant: Grant): Array<Repository> {
    return [...this.repositories.values()].filter((r) => this.reaches(grant, r.owner, r.repo))
  }
}
