/**
 * The GitHub double: git's smart HTTP through `git http-backend` with the credential checked
 * (clone, fetch, push; 401 and 403 as GitHub answers), the App flow (a JWT for an installation
 * token), and the pull request calls.
 */
import { execFile } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { SignJWT } from "jose"
import { createPrivateKey } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeGitHub, startFakeGitHub } from "../src/index.js"

const run = promisify(execFile)
const basic = (token: string) => `Authorization: Basic ${Buffer.from(`x-access-token:${token}`).toString("base64")}`
/** git with the token in a header for this command only, as the service passes it. */
const git = (cwd: string, token: string | undefined, ...args: Array<string>) =>
  run("git", [...(token === undefined ? [] : ["-c", `http.extraHeader=${basic(token)}`]), ...args], {
    cwd,
    env: { ...process.env, GIT_TERMINAL_PROMPT: "0", GIT_ASKPASS: "", GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@t", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@t" }
  })
const failure = (p: Promise<unknown>) => p.then(() => "succeeded", (e: { stderr?: string }) => e.stderr ?? String(e))

let host: FakeGitHub
let work: string
beforeAll(async () => {
  host = await startFakeGitHub()
  host.createRepository("acme", "app", { "README.md": "hello\n", "src/a.txt": "a\n" })
  host.createRepository("acme", "other", { "x.txt": "x\n" })
  work = mkdtempSync(join(tmpdir(), "fake-github-test-"))
})
afterAll(async () => {
  await host.close()
  rmSync(work, { recursive: true, force: true })
})

const api = (path: string, token: string, init: RequestInit = {}) =>
  fetch(`${host.apiUrl}${path}`, { ...init, headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", ...init.headers } })

describe("the GitHub double", () => {
  it("git: a token clones what it reaches, pushes only with write; 401 without a credential, 404 for what it cannot see", async () => {
    const reader = host.addToken({ repositories: ["acme/app"], permission: "read" })
    const writer = host.addToken({ repositories: ["acme/app"], permission: "write" })
    expect(await failure(git(work, undefined, "clone", "--quiet", `${host.url}/acme/app.git`, "anon"))).toMatch(/Authentication failed|could not read Username/)
    // A refused header makes git ask for a user name, which nobody answers here.
    expect(await failure(git(work, "nope", "clone", "--quiet", `${host.url}/acme/app.git`, "wrong"))).toMatch(/Authentication failed|could not read Username/)
    expect(host.gitRequests.filter((r) => r.status === 401).map((r) => r.token)).toEqual([undefined, "nope"])
    expect(await failure(git(work, reader, "clone", "--quiet", `${host.url}/acme/other.git`, "other"))).toContain("not found")
    await git(work, reader, "clone", "--quiet", "--depth", "1", `${host.url}/acme/app.git`, "app")
    const dir = join(work, "app")
    writeFileSync(join(dir, "new.txt"), "new\n")
    await git(dir, undefined, "add", "new.txt")
    await git(dir, undefined, "commit", "--quiet", "-m", "new")
    expect(await failure(git(dir, reader, "push", "--quiet", "origin", "HEAD:refs/heads/feature"))).toContain("403")
    expect(host.branch("acme", "app", "feature")).toBeUndefined()
    await git(dir, writer, "push", "--quiet", "origin", "HEAD:refs/heads/feature")
    expect(host.file("acme", "app", "feature", "new.txt")).toBe("new")
    const uploads = host.gitRequests.filter((r) => r.service === "git-upload-pack" && r.phase === "rpc" && r.status === 200)
    expect(uploads.length).toBeGreaterThan(0)
    expect(uploads.every((r) => r.owner === "acme" && r.repo === "app")).toBe(true)
  })

  it("an App's JWT mints an installation token that clones; a JWT signed by another key is 401", async () => {
    const app = host.addApp({ repositories: "all", permission: "write" })
    const stranger = host.addApp({ repositories: "all", permission: "write" })
    const now = Math.floor(Date.now() / 1000)
    const jwt = (key: string, iss: number) =>
      new SignJWT({}).setProtectedHeader({ alg: "RS256" }).setIssuedAt(now - 30).setExpirationTime(now + 540).setIssuer(String(iss))
        .sign(createPrivateKey(key))
    const wrong = await fetch(`${host.apiUrl}/app/installations/${app.installationId}/access_tokens`, {
      method: "POST",
      headers: { Authorization: `Bearer ${await jwt(stranger.privateKey, app.appId)}` }
    })
    expect(wrong.status).toBe(401)
    const minted = await fetch(`${host.apiUrl}/app/installations/${app.installationId}/access_tokens`, {
      method: "POST",
      headers: { Authorization: `Bearer ${await jwt(app.privateKey, app.appId)}` }
    })
    expect(minted.status).toBe(201)
    const { token } = await minted.json() as { token: string }
    expect(token).toMatch(/^ghs_/)
    const listed = await (await api("/installation/repositories", token)).json() as { total_count: number }
    expect(listed.total_count).toBe(2)
    await git(work, token, "clone", "--quiet", `${host.url}/acme/other.git`, "other-by-app")
  })

  it("pull requests: created on a pushed branch, listed by head, updated, commented; 422 twice or without the branch; 401 and 404", async () => {
    const writer = host.addToken({ repositories: ["acme/app"], permission: "write" })
    const reader = host.addToken({ repositories: ["acme/app"], permission: "read" })
    const dir = join(work, "for-pulls")
    await git(work, writer, "clone", "--quiet", `${host.url}/acme/app.git`, "for-pulls")
    await git(dir, undefined, "commit", "--quiet", "--allow-empty", "-m", "change")
    await git(dir, writer, "push", "--quiet", "origin", "HEAD:refs/heads/topic")
    const create = (token: string, head: string) =>
      api("/repos/acme/app/pulls", token, { method: "POST", body: JSON.stringify({ title: "T", body: "B", head, base: "main" }) })
    expect((await create(writer, "missing")).status).toBe(422)
    expect((await create(reader, "topic")).status).toBe(403)
    const created = await create(writer, "topic")
    expect(created.status).toBe(201)
    const pull = await created.json() as { number: number; html_url: string }
    expect(pull.html_url).toBe(`${host.url}/acme/app/pull/${pull.number}`)
    const again = await create(writer, "topic")
    expect(again.status).toBe(422)
    expect(JSON.stringify(await again.json())).toContain("A pull request already exists for acme:topic.")
    const listed = await (await api("/repos/acme/app/pulls?head=acme:topic&state=open", writer)).json() as Array<{ number: number }>
    expect(listed.map((p) => p.number)).toEqual([pull.number])
    expect((await api(`/repos/acme/app/pulls/${pull.number}`, writer, { method: "PATCH", body: JSON.stringify({ title: "T2" }) })).status).toBe(200)
    expect((await api(`/repos/acme/app/issues/${pull.number}/comments`, writer, { method: "POST", body: JSON.stringify({ body: "more" }) })).status).toBe(201)
    expect(host.pulls.find((p) => p.number === pull.number)).toMatchObject({ title: "T2", comments: ["more"], head: "topic", base: "main" })
    expect((await api("/repos/acme/other", writer)).status).toBe(404)
    expect((await api("/repos/acme/app", "nope")).status).toBe(401)
  })
})
