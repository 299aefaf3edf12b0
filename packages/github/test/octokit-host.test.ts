/**
 * The Octokit GitHost against the GitHub double on loopback (laid out as GitHub Enterprise
 * Server: the API under /api/v3): App installation tokens minted once and cached, what a
 * credential reaches, pull requests found, opened and commented, and the host's errors kept with
 * their status (401, 422 with its details; none when the host cannot be reached).
 */
import { type FakeGitHub, startFakeGitHub } from "@agent-runs/testing"
import { Effect, Either, Option, Redacted } from "effect"
import { execFileSync } from "node:child_process"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { OctokitHost } from "../src/index.js"

let host: FakeGitHub
let appDir: string
beforeAll(async () => {
  host = await startFakeGitHub()
  appDir = host.createRepository("acme", "app", { "README.md": "hi\n" }).dir
  host.createRepository("acme", "lib", { "x.txt": "x\n" })
  host.createRepository("other", "private", { "y.txt": "y\n" })
})
afterAll(() => host.close())

const github = OctokitHost.make({ timeoutMs: 10_000 })
const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(Effect.either(effect))
const access = (token: string) => ({ apiUrl: host.apiUrl, token: Redacted.make(token) })

describe("OctokitHost", () => {
  it("an App's installation token is minted once and reused; it reaches the installation's repositories", async () => {
    const app = host.addApp({ repositories: ["acme/app", "acme/lib"], permission: "write" })
    const credential = { type: "app" as const, app_id: app.appId, installation_id: app.installationId, private_key: Redacted.make(app.privateKey) }
    const before = host.apiRequests.filter((r) => r.path.endsWith("/access_tokens")).length
    const first = Either.getOrThrow(await run(github.accessToken(host.apiUrl, credential)))
    const second = Either.getOrThrow(await run(github.accessToken(host.apiUrl, credential)))
    expect(Redacted.value(first)).toMatch(/^ghs_/)
    expect(Redacted.value(second)).toBe(Redacted.value(first))
    expect(host.apiRequests.filter((r) => r.path.endsWith("/access_tokens")).length).toBe(before + 1)
    const listed = Either.getOrThrow(await run(github.repositories(access(Redacted.value(first)), "app", 100)))
    expect(listed.repositories.map((r) => `${r.owner}/${r.repo}`).sort()).toEqual(["acme/app", "acme/lib"])
    expect(listed.repositories.every((r) => r.can_push && r.default_branch === "main")).toBe(true)
    const wrongKey = host.addApp({ repositories: "all", permission: "read" })
    const refused = await run(github.accessToken(host.apiUrl, { ...credential, private_key: Redacted.make(wrongKey.privateKey) }))
    expect(Either.getLeft(refused).pipe(Option.map((e) => e.status))).toEqual(Option.some(401))
  })

  it("a personal token: its repositories (up to a limit), one repository or none, and 401 for a wrong one", async () => {
    const token = host.addToken({ repositories: ["acme/app", "acme/lib"], permission: "read" })
    const all = Either.getOrThrow(await run(github.repositories(access(token), "token", 100)))
    expect(all).toMatchObject({ truncated: false })
    expect(all.repositories.map((r) => r.repo).sort()).toEqual(["app", "lib"])
    expect(all.repositories.every((r) => !r.can_push)).toBe(true)
    expect(Either.getOrThrow(await run(github.repositories(access(token), "token", 1)))).toMatchObject({ truncated: true, repositories: [{}] })
    expect(Either.getOrThrow(await run(github.repository(access(token), "acme", "app")))).toEqual(
      Option.some({ owner: "acme", repo: "app", default_branch: "main", can_push: false })
    )
    expect(Either.getOrThrow(await run(github.repository(access(token), "other", "private")))).toEqual(Option.none())
    const wrong = Either.getLeft(await run(github.repositories(access("github_pat_wrong"), "token", 10)))
    expect(wrong.pipe(Option.map((e) => [e.status, e.message]))).toEqual(Option.some([401, "GitHub answered 401: Bad credentials"]))
  })

  it("pull requests: opened on a pushed branch, found by branch, commented; a second one is 422 with GitHub's reason", async () => {
    const token = host.addToken({ repositories: ["acme/app"], permission: "write" })
    const main = host.branch("acme", "app", "main")!
    host.commit("acme", "app", "main", { "later.txt": "later\n" })
    // A branch on the host: the commit main was at before.
    execFileSync("git", ["--git-dir", appDir, "branch", "agent/run-1", main])
    const created = Either.getOrThrow(await run(github.createPullRequest(access(token), {
      owner: "acme", repo: "app", head: "agent/run-1", base: "main", title: "The run's title", body: "What it did", draft: true
    })))
    expect(created).toEqual({ number: 1, url: `${host.url}/acme/app/pull/1`, branch: "agent/run-1", head_commit: main, state: "open" })
    expect(host.pulls[0]).toMatchObject({ title: "The run's title", draft: true })
    expect(Either.getOrThrow(await run(github.findOpenPullRequest(access(token), "acme", "app", "agent/run-1")))).toEqual(Option.some(created))
    expect(Either.getOrThrow(await run(github.findOpenPullRequest(access(token), "acme", "app", "nothing")))).toEqual(Option.none())
    expect(Either.isRight(await run(github.comment(access(token), "acme", "app", 1, "a follow-up pushed more")))).toBe(true)
    expect(host.pulls[0]!.comments).toEqual(["a follow-up pushed more"])
    const again = Either.getLeft(await run(github.createPullRequest(access(token), {
      owner: "acme", repo: "app", head: "agent/run-1", base: "main", title: "again", body: "", draft: false
    })))
    expect(again.pipe(Option.map((e) => e.status))).toEqual(Option.some(422))
    expect(again.pipe(Option.map((e) => e.message))).toEqual(
      Option.some("GitHub answered 422: Validation Failed (A pull request already exists for acme:agent/run-1.)")
    )
  })

  it("a host that cannot be reached is an error without a status", async () => {
    const gone = await run(github.repository({ apiUrl: "http://127.0.0.1:1/api/v3", token: Redacted.make("t") }, "acme", "app"))
    const error = Either.getLeft(gone)
    expect(error.pipe(Option.map((e) => e.status))).toEqual(Option.some(undefined))
    expect(error.pipe(Option.map((e) => e.message.startsWith("GitHub could not be reached")))).toEqual(Option.some(true))
  })
})
