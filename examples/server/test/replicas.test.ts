/**
 * Two replicas of the built server on one PostgreSQL database, each with its own data directory
 * and process executor, sharing the secret key and the blob directory (as a fleet does): they
 * share the runs created through either, both execute some, and no run is executed twice. Each
 * replica's harness prints its name first, so the transcript tells which one ran a run.
 */
import { installCopy } from "@agent-runs/scripted-agent/Location"
import { freshDatabase } from "@agent-runs/storage-pg/testing"
import { Effect, Exit, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest"
import { makeTeam } from "./harness.js"
import { assertBuilt, call, type ServerProcess, spawnServer, tempDataDir } from "./process.js"
import { sharedDir } from "./support.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

describe("two replicas on one PostgreSQL", () => {
  const scope = Effect.runSync(Scope.make())
  const adminToken = `ar_${randomBytes(32).toString("base64url")}`
  const replicas: Array<ServerProcess> = []

  beforeAll(async () => {
    assertBuilt(inject("serverBuild"))
    await Effect.runPromise(
      Effect.gen(function*() {
        const { url } = yield* freshDatabase
        const env = {
          AGENT_RUNS_DATABASE_URL: url,
          AGENT_RUNS_ADMIN_TOKEN: adminToken,
          AGENT_RUNS_CONCURRENCY: "4",
          AGENT_RUNS_SECRET_KEY: randomBytes(32).toString("hex"),
          AGENT_RUNS_BLOB_DIR: yield* tempDataDir
        }
        // A copy sandbox users can run (the checkout may be private; sandboxes run as users of their own).
        const shared = yield* sharedDir
        installCopy(join(shared, "scripted-agent"))
        const agent = join(shared, "scripted-agent", "dist", "main.js")
        const harness = (name: string) => `/bin/sh -c 'echo ${name}; exec "$0" "$1"' '${process.execPath}' '${agent}'`
        // One replica first (it bootstraps the administrator), then the second.
        for (const name of ["replica-a", "replica-b"]) {
          replicas.push(yield* spawnServer({ dataDir: yield* tempDataDir, env: { ...env, AGENT_RUNS_HARNESS: harness(name) } }))
        }
      }).pipe(Scope.extend(scope))
    )
  }, 120_000)
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)), 60_000)

  it("share the work: every run runs once, some on each replica", async () => {
    const [a, b] = replicas as [ServerProcess, ServerProcess]
    const team = await makeTeam({ url: a.url, adminToken }, "replicas")
    const teams = await call(a, "GET", "/api/v1/admin/teams", { token: adminToken })
    const uid = teams.body.teams.find((t: Json) => t.name === "replicas").uid
    await call(a, "PATCH", `/api/v1/admin/teams/${uid}`, { token: adminToken, body: { max_concurrent_runs: 50 } })
    const token = team.tokens.member
    const ids = await Promise.all(
      Array.from({ length: 24 }, async (_, i) =>
        (await call(i % 2 === 0 ? a : b, "POST", "/api/v1/agent/runs", { token, body: { prompt: `Run ${i}\n@sleep 300` } })).body
          .run_id as string)
    )
    const deadline = Date.now() + 60_000
    let runs: Array<Json> = []
    while (Date.now() < deadline) {
      runs = await Promise.all(ids.map(async (id) => (await call(b, "GET", `/api/v1/agent/runs/${id}`, { token })).body))
      if (runs.every((r) => r.state === "SUCCEEDED")) break
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    expect(runs.map((r) => r.state)).toEqual(ids.map(() => "SUCCEEDED"))
    expect(runs.every((r) => r.attempt === 1)).toBe(true)
    const ranOn = { "replica-a": 0, "replica-b": 0 } as Record<string, number>
    for (const id of ids) {
      const events = (await call(a, "GET", `/api/v1/agent/runs/${id}/timeline`, { token })).body.events.map((e: Json) => e.event_type)
      expect(events.filter((t: string) => t === "run_claimed")).toHaveLength(1)
      expect(events.filter((t: string) => t === "run_in_progress")).toHaveLength(1)
      // Any replica serves any transcript (shared blobs and key): one agent wrote it.
      const transcript = await call(b, "GET", `/api/v1/agent/runs/${id}/transcript`, { token })
      const raw = await fetch(transcript.headers.get("location")!).then((r) => r.text())
      const lines = raw.split("\n")
      expect(lines.filter((l) => l.includes("\"type\":\"session\""))).toHaveLength(1)
      ranOn[lines[0]!] = (ranOn[lines[0]!] ?? 0) + 1
    }
    expect(ranOn["replica-a"]! + ranOn["replica-b"]!).toBe(ids.length)
    expect(ranOn["replica-a"]).toBeGreaterThan(0)
    expect(ranOn["replica-b"]).toBeGreaterThan(0)
  }, 120_000)
})
