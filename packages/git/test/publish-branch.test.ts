/**
 * A sandbox's work pushed as a branch, against the Git host on loopback: nothing to push without
 * a commit; the branch pushed, then a follow-up's clone starting from it and pushing on top; the
 * agent's hooks and configuration never run on the service's side; a read-only token is the
 * host's 403 and a branch that moved on the host is refused, both named.
 */
import { type FakeGitHub, startFakeGitHub } from "@agent-runs/testing"
import { Effect, Either, Option, Redacted, Stream } from "effect"
import { execFileSync, spawn } from "node:child_process"
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, dirname, join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Cloned, cloneRepository, MirrorCache, publishRepository, type StartInSandbox } from "../src/index.js"

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

/** A sandbox at `dir`: commands run there (as this test's user: the executors run them as the sandbox's). */
const sandboxAt = (dir: string): StartInSandbox => (command, env) =>
  Effect.acquireRelease(
    Effect.sync(() => spawn(command[0]!, command.slice(1), { cwd: dir, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "ignore"] })),
    (child) => Effect.sync(() => child.kill("SIGKILL"))
  ).pipe(Effect.map((child) => {
    const closed = new Promise<number>((resolve) => child.on("close", (code) => resolve(code ?? -1)))
    return { stdout: Stream.fromAsyncIterable(child.stdout as AsyncIterable<Uint8Array>, (e) => e), exitCode: Effect.promise(() => closed) }
  }))
const sh = (cwd: string, ...args: Array<string>) =>
  execFileSync("git", args, { cwd, encoding: "utf8", env: { ...process.env, GIT_AUTHOR_NAME: "a", GIT_AUTHOR_EMAIL: "a@a", GIT_COMMITTER_NAME: "a", GIT_COMMITTER_EMAIL: "a@a" } }).trim()

/** A clone in `<base>/<dir>` of a team of its own, with one commit of the agent's, and how to publish it. */
const committedClone = async (permission: "read" | "write", dir: string) => {
  const token = host.addToken({ repositories: ["acme/app"], permission })
  const remote = { url: `${host.url}/acme/app.git`, name: "acme/app", token: Redacted.make(token) }
  const mirrors = MirrorCache.make({ root: join(base, `mirrors-${dir}`) })
  const target = join(base, dir)
  const team = `team_${dir.replace(/\W/g, "")}`
  const cloned = Either.getOrThrow(await run(cloneRepository({ mirrors, team, name: "acme/app", remote, local: "", target, timeoutMs: 30_000 })))
  writeFileSync(join(target, "x.txt"), "x\n")
  sh(target, "add", "x.txt")
  sh(target, "commit", "-q", "-m", "x")
  const publish = (branch: string) =>
    run(publishRepository({ mirrors, team, name: "acme/app", remote, start: sandboxAt(base), repoDir: dir, started: cloned, branch, timeoutMs: 30_000 }))
  return { publish, target, token }
}

describe("publishBranch", () => {
  it("pushes the sandbox's commits as the run's branch; a follow-up starts from it; nothing to push is no push", async () => {
    const token = host.addToken({ repositories: ["acme/app"], permission: "write" })
    const remote = { url: `${host.url}/acme/app.git`, name: "acme/app", token: Redacted.make(token) }
    const mirrors = MirrorCache.make({ root: join(base, "mirrors") })
    const clone = (target: string) =>
      run(cloneRepository({ mirrors, team: "team_a", name: "acme/app", remote, local: "", target, timeoutMs: 30_000, prefer: "agent-runs/run-1" }))
    const publish = (source: string, started: Cloned) =>
      run(publishRepository({ mirrors, team: "team_a", name: "acme/app", remote, start: sandboxAt(dirname(source)), repoDir: basename(source), started, branch: "agent-runs/run-1", timeoutMs: 30_000 }))

    const first = join(base, "first")
    const firstClone = Either.getOrThrow(await clone(first))
    expect(firstClone.branch).toBe("main")
    expect(Either.getOrThrow(await publish(first, firstClone)).pushed).toBe(false)
    expect(host.branch("acme", "app", "agent-runs/run-1")).toBeUndefined()

    // The agent's own hooks and configuration, which must not run on the service's side.
    const marker = join(base, "hook-ran")
    writeFileSync(join(first, ".git", "hooks", "post-checkout"), `#!/bin/sh\ntouch ${marker}\n`)
    chmodSync(join(first, ".git", "hooks", "post-checkout"), 0o755)
    writeFileSync(join(first, "work.txt"), "done\n")
    sh(first, "add", "work.txt")
    sh(first, "commit", "-q", "--no-verify", "-m", "the agent's work")
    sh(first, "config", "core.fsmonitor", `touch ${marker}`)
    const pushed = Either.getOrThrow(await publish(first, firstClone))
    expect(pushed).toEqual({ pushed: true, head: sh(first, "-c", "core.fsmonitor=", "rev-parse", "HEAD") })
    expect(host.branch("acme", "app", "agent-runs/run-1")).toBe(pushed.head)
    expect(existsSync(marker)).toBe(false)
    expect(readdirSync(dirname(mirrors.pathOf("team_a", remote.url))).filter((e) => e.startsWith("publish-"))).toEqual([])

    // A follow-up: its clone starts from the run's branch and pushes on top.
    const second = join(base, "second")
    const secondClone = Either.getOrThrow(await clone(second))
    expect(secondClone.branch).toBe("agent-runs/run-1")
    writeFileSync(join(second, "more.txt"), "more\n")
    sh(second, "add", "more.txt")
    sh(second, "commit", "-q", "-m", "more work")
    expect(Either.getOrThrow(await publish(second, secondClone)).pushed).toBe(true)
    expect(host.file("acme", "app", "agent-runs/run-1", "work.txt")).toBe("done")
    expect(host.file("acme", "app", "agent-runs/run-1", "more.txt")).toBe("more")

    // Someone pushed to the branch meanwhile: refused, not overwritten.
    host.commit("acme", "app", "agent-runs/run-1", { "theirs.txt": "theirs\n" })
    writeFileSync(join(second, "late.txt"), "late\n")
    sh(second, "add", "late.txt")
    sh(second, "commit", "-q", "-m", "late")
    const refused = await publish(second, secondClone)
    expect(Either.getLeft(refused).pipe(Option.map((e) => e.message))).toEqual(
      Option.some("pushing agent-runs/run-1 to acme/app failed: the branch moved on the host since (someone else pushed to it); it was not overwritten")
    )
    expect(host.file("acme", "app", "agent-runs/run-1", "theirs.txt")).toBe("theirs")
  })

  it("a read-only token is the host's 403, named; the token is in no message", async () => {
    const { publish, token } = await committedClone("read", "read-only")
    const refused = await publish("agent-runs/run-2")
    const error = Either.getLeft(refused).pipe(Option.getOrThrow)
    expect([error.status, error.message.startsWith("pushing agent-runs/run-2 to acme/app failed: the credential may not do this (403)")]).toEqual([403, true])
    expect(error.message).not.toContain(token)
  })

  it("what the sandbox's repository points at is read by the sandbox only: a .git/shallow linked to a file of the service's is never read by the service", async () => {
    const { publish, target } = await committedClone("write", "attack")
    const secret = join(base, "service-secret")
    writeFileSync(secret, "TOPSECRET-of-the-service\n", { mode: 0o600 })
    rmSync(join(target, ".git", "shallow"))
    execFileSync("ln", ["-s", secret, join(target, ".git", "shallow")])
    // Here the sandbox's git runs as this test's user and can read the file; an executor runs it as
    // the sandbox's user, who cannot. What matters: the service reads only the bundle's bytes.
    const published = await publish("agent-runs/run-3")
    const said = Either.isLeft(published) ? published.left.message : JSON.stringify(published.right)
    expect(said).not.toContain("TOPSECRET")
  })
})
