/**
 * Where a clone from the host starts: the default branch; a branch, a tag or a commit the run or
 * environment names (pull requests then target the branch, else the default branch); the run's
 * own branch first when the host has it; a ref the repository does not have fails naming it. A
 * local repository is cloned at a ref too.
 */
import { type FakeGitHub, startFakeGitHub } from "@agent-runs/testing"
import { Effect, Either, Redacted } from "effect"
import { execFileSync } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { cloneRepository, MirrorCache } from "../src/index.js"

let host: FakeGitHub
let base: string
let first: string
let second: string
let remote: { url: string; token: Redacted.Redacted<string> }
beforeAll(async () => {
  host = await startFakeGitHub()
  host.createRepository("acme", "app", { "README.md": "v1\n" })
  first = host.branch("acme", "app", "main")!
  host.setRef("acme", "app", "refs/tags/v1.0", first)
  host.setRef("acme", "app", "refs/heads/release/1", first)
  host.commit("acme", "app", "release/1", { "README.md": "release\n" })
  second = host.commit("acme", "app", "main", { "README.md": "v2\n" })
  host.setRef("acme", "app", "refs/heads/agent-runs/run_1", second)
  remote = { url: `${host.url}/acme/app.git`, token: Redacted.make(host.addToken({ repositories: ["acme/app"], permission: "read" })) }
  base = mkdtempSync(join(tmpdir(), "git-refs-"))
})
afterAll(async () => {
  await host.close()
  rmSync(base, { recursive: true, force: true })
})

const mirrors = () => MirrorCache.make({ root: join(base, "mirrors") })
const clone = (dir: string, options: { ref?: string; prefer?: string; local?: string }) =>
  Effect.runPromise(Effect.either(cloneRepository({
    mirrors: mirrors(),
    team: "team_refs",
    name: "acme/app",
    remote: options.local === undefined ? remote : undefined,
    local: options.local ?? "",
    target: join(base, dir),
    timeoutMs: 30_000,
    prefer: options.prefer,
    ref: options.ref
  })))
const readme = (dir: string) => readFileSync(join(base, dir, "README.md"), "utf8")

describe("cloneRepository at a ref", () => {
  it("starts from the default branch, a branch, a tag or a commit; pull requests target the branch", async () => {
    expect(Either.getOrThrow(await clone("default", {}))).toEqual({ branch: "main", commit: second, base: undefined })
    expect(readme("default")).toBe("v2\n")

    const branch = Either.getOrThrow(await clone("branch", { ref: "release/1" }))
    expect(branch).toMatchObject({ branch: "release/1", base: "release/1" })
    expect(readme("branch")).toBe("release\n")

    expect(Either.getOrThrow(await clone("tag", { ref: "v1.0" }))).toEqual({ branch: undefined, commit: first, base: undefined })
    expect(readme("tag")).toBe("v1\n")

    expect(Either.getOrThrow(await clone("commit", { ref: first.slice(0, 12) }))).toEqual({ branch: undefined, commit: first, base: undefined })
    expect(readme("commit")).toBe("v1\n")
  })

  it("a follow-up starts from the run's branch, its pull request still targeting the ref's branch", async () => {
    expect(Either.getOrThrow(await clone("follow-up", { ref: "release/1", prefer: "agent-runs/run_1" })))
      .toEqual({ branch: "agent-runs/run_1", commit: second, base: "release/1" })
    // No run branch on the host yet: the ref.
    expect(Either.getOrThrow(await clone("first-execution", { ref: "v1.0", prefer: "agent-runs/run_2" })))
      .toEqual({ branch: undefined, commit: first, base: undefined })
  })

  it("a branch named like a commit is the branch, not a commit that name abbreviates", async () => {
    const abbreviating = first.slice(0, 8)
    host.setRef("acme", "app", `refs/heads/${abbreviating}`, second)
    expect(Either.getOrThrow(await clone("hex-branch", { ref: abbreviating }))).toEqual({ branch: abbreviating, commit: second, base: abbreviating })
    expect(readme("hex-branch")).toBe("v2\n")
  })

  it("a ref the repository does not have fails naming it", async () => {
    for (const ref of ["no-such-branch", "0123456789abcdef"]) {
      const failed = await clone(`missing-${ref}`, { ref })
      expect(Either.getLeft(failed).pipe((o) => (o._tag === "Some" ? o.value.message : ""))).toBe(`cloning acme/app: it has no branch, tag or commit ${ref}`)
    }
  })

  it("a local repository is cloned at the ref", async () => {
    const local = join(base, "local")
    const [mirror] = readdirSync(join(base, "mirrors", "team_refs"))
    execFileSync("git", ["clone", "--quiet", "--mirror", `file://${join(base, "mirrors", "team_refs", mirror!)}`, local])
    expect(Either.getOrThrow(await clone("from-local", { local, ref: "v1.0" }))).toEqual({ branch: undefined, commit: undefined, base: undefined })
    expect(readme("from-local")).toBe("v1\n")
  })
})
