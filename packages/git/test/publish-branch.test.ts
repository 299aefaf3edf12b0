/**
 * A sandbox's work pushed as a branch, against the Git host on loopback: nothing to push without
 * a commit; the branch pushed, then a follow-up's clone starting from it and pushing on top; the
 * agent's hooks and configuration never run on the service's side; a read-only token is the
 * host's 403 and a branch that moved on the host is refused, both named.
 */
import { type FakeGitHub, startFakeGitHub } from "@agent-runs/testing"
import { Effect, Either, Option, Redacted } from "effect"
import { execFileSync } from "node:child_process"
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { cloneRepository, MirrorCache, publishBranch } from "../src/index.js"

let host: FakeGitHub
let base: string
beforeAll(async () => {
  host = await startFakeGitHub()
  host.createRepository("acme", "app", { "README.md": "v1\n" })
  base = mkdtempSync(join(tmpdir(), "git-publish-"))
})
afterAll(async () => {
  await host.close()
  rmSync(base, { recursive: true, force: true })
})

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(Effect.either(effect))
const sh = (cwd: string, ...args: Array<string>) =>
  execFileSync("git", args, { cwd, encoding: "utf8", env: { ...process.env, GIT_AUTHOR_NAME: "a", GIT_AUTHOR_EMAIL: "a@a", GIT_COMMITTER_NAME: "a", GIT_COMMITTER_EMAIL: "a@a" } }).trim()

describe("publishBranch", () => {
  it("pushes the sandbox's commits as the run's branch; a follow-up starts from it; nothing to push is no push", async () => {
    const token = host.addToken({ repositories: ["acme/app"], permission: "write" })
    const remote = { url: `${host.url}/acme/app.git`, name: "acme/app", token: Redacted.make(token) }
    const mirrors = MirrorCache.make({ root: join(base, "mirrors") })
    const scratch = join(base, "scratch")
    mkdirSync(scratch)
    const clone = (target: string) =>
      run(cloneRepository({ mirrors, team: "team_a", name: "acme/app", remote, local: "", target, timeoutMs: 30_000, prefer: "agent-runs/run-1" }))
    const publish = (source: string, from: string) =>
      run(Effect.flatMap(mirrors.refresh("team_a", remote), (mirror) =>
        publishBranch({ source, mirror, base: from, remote, branch: "agent-runs/run-1", scratch, timeoutMs: 30_000 })))

    const first = join(base, "first")
    expect(await clone(first)).toEqual(Either.right({ branch: "main" }))
    expect(Either.getOrThrow(await publish(first, "main")).pushed).toBe(false)
    expect(host.branch("acme", "app", "agent-runs/run-1")).toBeUndefined()

    // The agent's own hooks and configuration, which must not run on the service's side.
    const marker = join(base, "hook-ran")
    writeFileSync(join(first, ".git", "hooks", "post-checkout"), `#!/bin/sh\ntouch ${marker}\n`)
    chmodSync(join(first, ".git", "hooks", "post-checkout"), 0o755)
    writeFileSync(join(first, "work.txt"), "done\n")
    sh(first, "add", "work.txt")
    sh(first, "commit", "-q", "--no-verify", "-m", "the agent's work")
    sh(first, "config", "core.fsmonitor", `touch ${marker}`)
    const pushed = Either.getOrThrow(await publish(first, "main"))
    expect(pushed).toEqual({ pushed: true, head: sh(first, "-c", "core.fsmonitor=", "rev-parse", "HEAD") })
    expect(host.branch("acme", "app", "agent-runs/run-1")).toBe(pushed.head)
    expect(existsSync(marker)).toBe(false)
    expect(readdirSync(scratch)).toEqual([])

    // A follow-up: its clone starts from the run's branch and pushes on top.
    const second = join(base, "second")
    expect(await clone(second)).toEqual(Either.right({ branch: "agent-runs/run-1" }))
    writeFileSync(join(second, "more.txt"), "more\n")
    sh(second, "add", "more.txt")
    sh(second, "commit", "-q", "-m", "more work")
    expect(Either.getOrThrow(await publish(second, "agent-runs/run-1")).pushed).toBe(true)
    expect(host.file("acme", "app", "agent-runs/run-1", "work.txt")).toBe("done")
    expect(host.file("acme", "app", "agent-runs/run-1", "more.txt")).toBe("more")

    // Someone pushed to the branch meanwhile: refused, not overwritten.
    host.commit("acme", "app", "agent-runs/run-1", { "theirs.txt": "theirs\n" })
    writeFileSync(join(second, "late.txt"), "late\n")
    sh(second, "add", "late.txt")
    sh(second, "commit", "-q", "-m", "late")
    const refused = await run(publishBranch({
      source: second, mirror: mirrors.pathOf("team_a", remote.url), base: "agent-runs/run-1", remote, branch: "agent-runs/run-1", scratch, timeoutMs: 30_000
    }))
    expect(Either.getLeft(refused).pipe(Option.map((e) => e.message))).toEqual(
      Option.some("pushing agent-runs/run-1 to acme/app failed: the branch moved on the host since (someone else pushed to it); it was not overwritten")
    )
    expect(host.file("acme", "app", "agent-runs/run-1", "theirs.txt")).toBe("theirs")
  })

  it("a read-only token is the host's 403, named; the token is in no message", async () => {
    const token = host.addToken({ repositories: ["acme/app"], permission: "read" })
    const remote = { url: `${host.url}/acme/app.git`, name: "acme/app", token: Redacted.make(token) }
    const mirrors = MirrorCache.make({ root: join(base, "mirrors-read") })
    const target = join(base, "read-only")
    Either.getOrThrow(await run(cloneRepository({ mirrors, team: "team_b", name: "acme/app", remote, local: "", target, timeoutMs: 30_000 })))
    writeFileSync(join(target, "x.txt"), "x\n")
    sh(target, "add", "x.txt")
    sh(target, "commit", "-q", "-m", "x")
    const scratch = mkdtempSync(join(base, "scratch-"))
    const refused = await run(publishBranch({
      source: target, mirror: mirrors.pathOf("team_b", remote.url), base: "main", remote, branch: "agent-runs/run-2", scratch, timeoutMs: 30_000
    }))
    const error = Either.getLeft(refused).pipe(Option.getOrThrow)
    expect([error.status, error.message.startsWith("pushing agent-runs/run-2 to acme/app failed: the credential may not do this (403)")]).toEqual([403, true])
    expect(error.message).not.toContain(token)
  })
})
