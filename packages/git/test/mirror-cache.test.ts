/**
 * The mirror cache and checkouts against a Git host on loopback (git http-backend behind a token
 * check): one download, then fetches; concurrent callers share one fetch; a refused credential is
 * an error naming the host's 401 and leaves nothing behind; teams have their own mirrors;
 * checkouts are shallow, at a branch or a commit, never hard-linked to the mirror, and hold no
 * credential anywhere.
 */
import { type FakeGitHub, startFakeGitHub } from "@agent-runs/testing"
import { Effect, Either, Redacted } from "effect"
import { execFileSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { checkout, checkoutCommit, MirrorCache } from "../src/index.js"

let host: FakeGitHub
let root: string
let token: string
beforeAll(async () => {
  host = await startFakeGitHub()
  host.createRepository("acme", "app", { "README.md": "v1\n", "docs/guide.md": "guide\n" })
  host.createRepository("acme", "secret", { "x.txt": "x\n" })
  token = host.addToken({ repositories: ["acme/app"], permission: "read" })
  root = mkdtempSync(join(tmpdir(), "git-mirrors-"))
})
afterAll(async () => {
  await host.close()
  rmSync(root, { recursive: true, force: true })
})

const remote = (repo: string, secret: string = token) => ({
  url: `${host.url}/acme/${repo}.git`,
  name: `acme/${repo}`,
  token: Redacted.make(secret)
})
const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(Effect.either(effect))
const gitIn = (dir: string, ...args: Array<string>) => execFileSync("git", ["-c", "safe.directory=*", ...args], { cwd: dir, encoding: "utf8" }).trim()
/** Every file under `dir`, with its content. */
const files = (dir: string): Array<{ path: string; content: Buffer }> =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => ({ path: join(e.parentPath, e.name), content: readFileSync(join(e.parentPath, e.name)) }))
const uploads = () => host.gitRequests.filter((r) => r.service === "git-upload-pack")

describe("MirrorCache", () => {
  it("downloads once, then fetches what changed; concurrent callers share one fetch", async () => {
    const cache = MirrorCache.make({ root })
    const before = uploads().length
    const first = await run(Effect.all(Array.from({ length: 10 }, () => cache.use("team_a", remote("app"), Effect.succeed)), { concurrency: "unbounded" }))
    expect(Either.isRight(first)).toBe(true)
    const dirs = new Set(Either.getOrThrow(first))
    expect(dirs.size).toBe(1)
    const [dir] = [...dirs] as [string]
    // One download for the ten (protocol v2: the advertisement, the refs, the objects).
    expect(uploads().slice(before).map((r) => r.phase)).toEqual(["advertise", "rpc", "rpc"])
    expect(gitIn(dir, "show", "main:README.md")).toBe("v1")

    const pushed = host.commit("acme", "app", "main", { "README.md": "v2\n" })
    const again = await run(cache.use("team_a", remote("app"), Effect.succeed))
    expect(again).toEqual(Either.right(dir))
    expect(gitIn(dir, "rev-parse", "main")).toBe(pushed)
    // Nothing new: the host is asked for its refs, and for no objects.
    const quiet = uploads().length
    await run(cache.use("team_a", remote("app"), Effect.succeed))
    expect(uploads().slice(quiet).map((r) => r.phase)).toEqual(["advertise", "rpc"])
    // The mirror's configuration names the URL, never the token.
    expect(readFileSync(join(dir, "config"), "utf8")).not.toContain(token)
  })

  it("teams have their own mirrors; a fresh mirror is used as it is", async () => {
    // Another directory: one cache per directory in a process (the same root answers the same cache).
    const cache = MirrorCache.make({ root: join(root, "fresh"), freshForMs: 60_000 })
    expect(MirrorCache.make({ root })).toBe(MirrorCache.make({ root: `${root}/.` }))
    const a = Either.getOrThrow(await run(cache.use("team_b", remote("app"), Effect.succeed)))
    const b = Either.getOrThrow(await run(cache.use("team_c", remote("app"), Effect.succeed)))
    expect(a).not.toBe(b)
    const before = uploads().length
    expect(Either.getOrThrow(await run(cache.use("team_b", remote("app"), Effect.succeed)))).toBe(a)
    expect(uploads().length).toBe(before)
    expect(Either.isLeft(await run(cache.use("../x", remote("app"), Effect.succeed)))).toBe(true)
  })

  it("a refused credential names the host's 401, a hidden repository its 404; nothing is left behind, the token nowhere", async () => {
    const cache = MirrorCache.make({ root })
    const wrong = "github_pat_wrong_0123456789"
    const refused = await run(cache.use("team_d", remote("app", wrong), Effect.succeed))
    expect(Either.isLeft(refused)).toBe(true)
    const error = Either.getLeft(refused).pipe((o) => o._tag === "Some" ? o.value : undefined)!
    expect(error.status).toBe(401)
    expect(error.message).toMatch(/^downloading acme\/app failed: the host refused the credential \(401\)/)
    expect(error.message).not.toContain(wrong)
    const hidden = await run(cache.use("team_d", remote("secret"), Effect.succeed))
    expect(Either.getLeft(hidden).pipe((o) => o._tag === "Some" ? o.value.status : undefined)).toBe(404)
    expect(readdirSync(join(root, "team_d"))).toEqual([])
  })
})

describe("MirrorCache's bound", () => {
  it("removes the least recently used mirrors past it, never one in use; a repository over the whole bound fails and is removed", async () => {
    for (const name of ["q1", "q2", "q3"]) host.createRepository("acme", name, { "data.bin": randomBytes(600_000).toString("base64") })
    host.createRepository("acme", "huge", { "data.bin": randomBytes(3_000_000).toString("base64") })
    const reader = host.addToken({ repositories: ["acme/q1", "acme/q2", "acme/q3", "acme/huge"], permission: "read" })
    const quotaRoot = join(root, "quota")
    // Room for two of the small ones (each a little over 600 KB on disk), not three.
    const cache = MirrorCache.make({ root: quotaRoot, maxBytes: 1_600_000 })
    const use = (repo: string) => cache.use("team_q", remote(repo, reader), (dir) => Effect.sync(() => existsSync(dir)))
    const present = (repo: string) => existsSync(cache.pathOf("team_q", remote(repo).url))
    expect(await run(use("q1"))).toEqual(Either.right(true))
    expect(await run(use("q2"))).toEqual(Either.right(true))
    expect(await run(use("q1"))).toEqual(Either.right(true))
    // q3 takes the total over: q2, the least recently used, goes.
    expect(await run(use("q3"))).toEqual(Either.right(true))
    expect(["q1", "q2", "q3"].map(present)).toEqual([true, false, true])
    // While q1 is in use, q2 coming back removes q3 (the older of the idle ones), never q1.
    const during = await run(cache.use("team_q", remote("q1", reader), () => use("q2")))
    expect(during).toEqual(Either.right(true))
    expect(["q1", "q2", "q3"].map(present)).toEqual([true, true, false])
    // One repository over the whole bound: its use fails naming the sizes, and it is removed; the others stay.
    const huge = await run(use("huge"))
    expect(Either.getLeft(huge).pipe((o) => (o._tag === "Some" ? o.value.message : ""))).toMatch(
      /^acme\/huge takes [\d,]+ MB, more than the mirrors may hold together \(2 MB: AGENT_RUNS_MIRRORS_MAX_BYTES\)$/
    )
    expect(present("huge")).toBe(false)
    expect(["q1", "q2"].map(present)).toEqual([true, true])
  })
})

describe("checkout", () => {
  it("shallow at the default branch, a branch or a commit; origin the host's URL; never hard-linked; no credential", async () => {
    const cache = MirrorCache.make({ root })
    const mirror = Either.getOrThrow(await run(cache.use("team_e", remote("app"), Effect.succeed)))
    const first = gitIn(mirror, "rev-list", "--max-parents=0", "main")
    const work = mkdtempSync(join(tmpdir(), "git-checkout-"))
    try {
      const options = { name: "acme/app", timeoutMs: 30_000, originUrl: `${host.url}/acme/app.git` }
      expect(await run(checkout(mirror, join(work, "app"), { ...options, depth: 1 }))).toEqual(Either.right(undefined))
      expect(gitIn(join(work, "app"), "rev-list", "--count", "HEAD")).toBe("1")
      expect(gitIn(join(work, "app"), "remote", "get-url", "origin")).toBe(`${host.url}/acme/app.git`)
      expect(readFileSync(join(work, "app", "docs/guide.md"), "utf8")).toBe("guide\n")

      expect(await run(checkoutCommit(mirror, join(work, "old"), first, options))).toEqual(Either.right(undefined))
      expect(readFileSync(join(work, "old", "README.md"), "utf8")).toBe("v1\n")
      const missing = await run(checkout(mirror, join(work, "none"), { ...options, ref: "no-such-branch", depth: 1 }))
      expect(Either.getLeft(missing).pipe((o) => o._tag === "Some" ? o.value.message : "")).toMatch(/^cloning acme\/app at no-such-branch failed/)

      // Nothing in the checkouts shares an inode with the mirror, or holds the token.
      const mirrorInodes = new Set(files(mirror).map((f) => statSync(f.path).ino))
      for (const f of files(work)) {
        expect(mirrorInodes.has(statSync(f.path).ino), f.path).toBe(false)
        expect(f.content.includes(token), f.path).toBe(false)
      }
    } finally {
      rmSync(work, { recursive: true, force: true })
    }
  })
})
