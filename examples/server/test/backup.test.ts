/**
 * Backups (docs/operations.md) with the built CLI, on SQLite and PostgreSQL: `agent-runs backup`
 * copies a live server while runs are created and webhook deliveries arrive; `agent-runs restore`
 * puts the copy into a new data directory and database; a server started on it has every run that
 * existed when the backup began (their conversations and transcripts readable) and opens what the
 * old key sealed (a webhook's token is verified, a team secret is listed and kept).
 */
import { freshDatabase } from "@agent-runs/storage-pg/testing"
import { Effect, Exit, Option, Redacted, Scope } from "effect"
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { call, type DatabaseKind, makeTeam, startServer, type TestServer, waitForRun } from "./harness.js"
import { REPO_ROOT } from "./process.js"
import { postRaw } from "./support.js"

const CLI = join(REPO_ROOT, "packages/cli/dist/main.js")

/** Runs the built CLI with the environment of `server`'s storage (none of this process's AGENT_RUNS_*). */
const cli = (args: ReadonlyArray<string>, storage: { readonly dataDir: string; readonly database: TestServer["config"]["database"] }) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("AGENT_RUNS_")))
    const database = storage.database._tag === "Sqlite" ? `sqlite:${storage.database.filename}` : Redacted.value(storage.database.url)
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: REPO_ROOT,
      env: { ...inherited, AGENT_RUNS_DATA_DIR: storage.dataDir, AGENT_RUNS_DATABASE_URL: database }
    })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    child.once("error", reject)
    child.once("close", (code) => resolve({ code, stdout, stderr }))
  })

describe.each<DatabaseKind>(["sqlite", "postgres"])("backup and restore (%s)", (kind) => {
  it("backs up a live server under load; a server restored from it has every run and opens every secret", async () => {
    const scope = Effect.runSync(Scope.make())
    const target = mkdtempSync(join(tmpdir(), "agent-runs-restored-"))
    const backupDir = join(mkdtempSync(join(tmpdir(), "agent-runs-backup-")), "backup")
    try {
      const first = await Effect.runPromise(Scope.extend(startServer(kind, {}, { concurrency: 2 }), scope))
      const { tokens } = await makeTeam(first, `backup-${kind}`)
      const api = (server: TestServer, method: string, path: string, body?: unknown) =>
        call(server, method, `/api/v1${path}`, { token: tokens.admin, ...(body === undefined ? {} : { body }) })
      expect((await api(first, "PUT", "/agent/secrets/API_KEY", { value: "s3cret-value" })).status).toBe(200)
      const hook = (await api(first, "POST", "/agent/webhooks", { name: "kept hook" })).body
      expect((await api(first, "POST", "/agent/automations", {
        name: "on delivery",
        prompt: "hello",
        trigger: { provider: "webhook", event: "received", filter: { webhook_ids: [hook.uid] } }
      })).status).toBe(201)
      const deliver = (server: TestServer, n: number) =>
        postRaw(server, `/webhooks/w/${hook.uid}`, JSON.stringify({ n }), { authorization: `Bearer ${hook.secret}` })
      const create = async () => (await api(first, "POST", "/agent/runs", { prompt: "hello" })).body.run_id as string
      const before: Array<string> = []
      for (let i = 0; i < 4; i++) before.push(await create())
      expect((await deliver(first, 0)).status).toBe(202)
      for (const id of before) expect((await waitForRun(first, tokens.admin, id)).state).toBe("SUCCEEDED")

      // Load while the backup runs: runs created and deliveries received all along.
      let loading = true
      const load = (async () => {
        for (let n = 1; loading; n++) {
          await create()
          await deliver(first, n)
        }
      })()
      const made = await cli(["backup", backupDir], { dataDir: first.dataDir, database: first.config.database })
      loading = false
      await load
      expect(made.stderr).toBe("")
      expect(made.code).toBe(0)
      expect(made.stdout).toContain("backed up")
      // Again into the same directory: refused, nothing overwritten.
      expect((await cli(["backup", backupDir], { dataDir: first.dataDir, database: first.config.database })).code).toBe(1)
      const adminToken = first.adminToken

      // A new data directory and an empty database.
      const database: TestServer["config"]["database"] = kind === "sqlite"
        ? { _tag: "Sqlite", filename: join(target, "agent-runs.db") }
        : { _tag: "Postgres", url: Redacted.make((await Effect.runPromise(Scope.extend(freshDatabase, scope))).url) }
      const restored = await cli(["restore", backupDir], { dataDir: target, database })
      expect(restored.stderr).toBe("")
      expect(restored.code).toBe(0)
      // Into a place that holds it already: refused.
      expect((await cli(["restore", backupDir], { dataDir: target, database })).code).toBe(1)

      const second = await Effect.runPromise(Scope.extend(
        startServer(kind, { dataDir: target, database, blobDir: join(target, "blobs"), adminToken: Option.some(Redacted.make(adminToken)) }),
        scope
      ))
      for (const id of before) {
        const run = await api(second, "GET", `/agent/runs/${id}`)
        expect(run.body.state).toBe("SUCCEEDED")
        const conversation = await api(second, "GET", `/agent/runs/${id}/conversation`)
        expect(conversation.status).toBe(200)
        const transcript = await call(second, "GET", `/api/v1/agent/runs/${id}/transcript-link`, { token: tokens.admin })
        expect(transcript.status).toBe(200)
        const file = await fetch(transcript.body.url)
        expect(file.status).toBe(200)
        expect((await file.text()).length).toBeGreaterThan(0)
      }
      expect((await api(second, "GET", "/agent/secrets")).body.secrets.map((s: { name: string }) => s.name)).toContain("API_KEY")
      // The webhook's token was sealed with the old key: the restored server verifies it.
      expect((await deliver(second, 9999)).status).toBe(202)
      expect((await postRaw(second, `/webhooks/w/${hook.uid}`, "{}", { authorization: "Bearer wrong" })).status).toBe(401)
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      rmSync(target, { recursive: true, force: true })
      rmSync(join(backupDir, ".."), { recursive: true, force: true })
    }
  }, 120_000)
})
