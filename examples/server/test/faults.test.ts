/**
 * Storage faults: the built server on SQLite whose data directory is a 64 MiB tmpfs, filled up
 * while runs are in flight, for longer than two leases (4 s each; short, so that a lease lost to the
 * fault shows, long enough that a loaded machine renews in time).
 *
 * While the disk is full: creates answer 503 `resource_unavailable` with `Retry-After` (never a
 * 500), `/readyz` answers 503 saying storage failed. Once space is back: `/readyz` is ready again
 * by itself, and every run ends SUCCEEDED on its first attempt (no lease expired, nothing run
 * twice), its conversation and transcript holding everything its agent printed, including what
 * it printed while the disk was full. Needs root (to mount the tmpfs), as CI has.
 */
import { randomBytes } from "node:crypto"
import { execFileSync } from "node:child_process"
import { closeSync, mkdtempSync, openSync, rmSync, unlinkSync, writeSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Exit, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest"
import { makeTeam } from "./harness.js"
import { assertBuilt, call, type ServerProcess, spawnServer } from "./process.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const isRoot = process.getuid?.() === 0
const ENDED = ["SUCCEEDED", "FAILED", "BLOCKED", "ERROR", "CANCELLED"]

/** Writes zeros into `path` until the file system has no room left. */
const fill = (path: string) => {
  const fd = openSync(path, "w")
  try {
    for (const size of [1024 * 1024, 4096, 1]) {
      const chunk = Buffer.alloc(size)
      for (;;) {
        try {
          writeSync(fd, chunk)
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === "ENOSPC") break
          throw error
        }
      }
    }
  } finally {
    closeSync(fd)
  }
}

/** Every text block the agent said in a conversation (not the user's messages), in order. */
const texts = (steps: ReadonlyArray<Json>): Array<string> =>
  steps.flatMap((step) => [
    ...step.messages.flatMap((m: Json) =>
      m.role === "user" ? [] : m.content.filter((b: Json) => b.type === "text").map((b: Json) => b.text)
    ),
    ...texts(step.steps)
  ])

const until = async <A>(get: () => Promise<A>, done: (a: A) => boolean, timeoutMs: number): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await get()
    if (done(value) || Date.now() > deadline) return value
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

describe.runIf(isRoot)("a full disk under SQLite", () => {
  const adminToken = `ar_${randomBytes(32).toString("base64url")}`
  const mount = mkdtempSync(join(tmpdir(), "agent-runs-full-"))
  const filler = join(mount, "filler")
  const scope = Effect.runSync(Scope.make())
  let server: ServerProcess

  beforeAll(async () => {
    assertBuilt(inject("serverBuild"))
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=64m,mode=0755", "tmpfs", mount])
    server = await Effect.runPromise(
      spawnServer({
        dataDir: join(mount, "data"),
        env: { AGENT_RUNS_ADMIN_TOKEN: adminToken, AGENT_RUNS_LEASE_SECONDS: "4" }
      }).pipe(Scope.extend(scope))
    )
  }, 60_000)

  afterAll(async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    execFileSync("umount", ["-l", mount])
    rmSync(mount, { recursive: true, force: true })
  }, 60_000)

  it("answers 503 with Retry-After and is not ready while full; then every run ends once, with all its output", async () => {
    const team = await makeTeam({ url: server.url, adminToken }, "faults")
    const token = team.tokens.member
    const get = (path: string) => call(server, "GET", `/api/v1${path}`, { token })
    const runIds: Array<string> = []
    for (const i of [1, 2, 3]) {
      const prompt = `@say first ${i}\n@sleep 4000\n@say second ${i}\n@big 20000\n@say last ${i}`
      const created = await call(server, "POST", "/api/v1/agent/runs", { token, body: { prompt } })
      expect(created.status).toBe(200)
      runIds.push(created.body.run_id)
    }
    await until(() => Promise.all(runIds.map(async (id) => (await get(`/agent/runs/${id}`)).body)), (runs) => runs.every((r) => r.state === "INPROGRESS"), 15_000)

    fill(filler)
    // Creates fail with a 503 that says when to come back (a create that found room is a run too).
    const statuses: Array<number> = []
    for (let i = 0; i < 20 && !statuses.includes(503); i++) {
      const created = await call(server, "POST", "/api/v1/agent/runs", { token, body: { prompt: `while full ${i}` } })
      statuses.push(created.status)
      if (created.status === 200) runIds.push(created.body.run_id)
      if (created.status === 503) {
        expect(created.headers.get("retry-after")).toBe("5")
        expect(created.body.error_code).toBe("resource_unavailable")
      }
    }
    expect(statuses).toContain(503)
    expect(statuses.filter((s) => s !== 200 && s !== 503)).toEqual([])
    const notReady = await until(() => call(server, "GET", "/readyz"), (r) => r.status === 503, 15_000)
    expect(notReady.status).toBe(503)
    expect(notReady.body.error).toContain("storage failed")
    // The agents print while the disk is full, for longer than two leases.
    await new Promise((resolve) => setTimeout(resolve, 10_000))

    unlinkSync(filler)
    const runs = await until(
      () => Promise.all(runIds.map(async (id) => (await get(`/agent/runs/${id}`)).body)),
      (all) => all.every((r) => ENDED.includes(r.state)),
      60_000
    )
    expect(runs.map((r) => r.state)).toEqual(runIds.map(() => "SUCCEEDED"))
    expect(runs.map((r) => r.attempt)).toEqual(runIds.map(() => 1))
    for (const [index, id] of runIds.slice(0, 3).entries()) {
      const i = index + 1
      const timeline = (await get(`/agent/runs/${id}/timeline`)).body.events.map((e: Json) => e.event_type)
      expect(timeline).not.toContain("lease_expired")
      expect(timeline.filter((t: string) => t === "run_in_progress")).toHaveLength(1)
      const said = texts((await get(`/agent/runs/${id}/conversation`)).body.steps)
      expect(said.filter((t) => !t.startsWith("x"))).toEqual([`first ${i}`, `second ${i}`, `last ${i}`])
      expect(said.filter((t) => t.startsWith("x")).map((t) => t.length)).toEqual([20_000])
      const transcript = (await get(`/agent/runs/${id}/transcript`))
      const raw = await fetch(transcript.headers.get("location")!).then((r) => r.text())
      expect(raw).toContain(`"last ${i}"`)
    }
    const ready = await until(() => call(server, "GET", "/readyz"), (r) => r.status === 200, 30_000)
    expect(ready.status).toBe(200)
  }, 150_000)
})
