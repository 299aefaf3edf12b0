/**
 * The custom storage example on 127.0.0.1 over the real PostgreSQL (127.0.0.1:5432, a fresh
 * database): the host's own pg.Pool is handed to Agent Runs; a run created through the API
 * mounted under /agents finishes, its conversation reads back and its row is in the host's
 * database; the host's page reads the same pool; after `agents.close()` the pool still works.
 */
import { freshDatabase } from "@agent-runs/storage-pg/testing"
import { Effect, Exit, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { once } from "node:events"
import { mkdtempSync, rmSync } from "node:fs"
import type { Server } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import { assistantTexts, freePort, mountedApi } from "@agent-runs/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createApp } from "../src/app.js"

const adminToken = `ar_${randomBytes(32).toString("base64url")}`
const secretKey = new Uint8Array(randomBytes(32))

// Test code reads arbitrary JSON answers field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const json = async (response: Response): Promise<any> => response.json()

describe("Agent Runs storing in the host's pg.Pool", () => {
  let dir: string
  let base: string
  let server: Server
  let agents: Awaited<ReturnType<typeof createApp>>["agents"] | undefined
  let closed = false
  let database: { readonly name: string; readonly url: string }
  let pool: pg.Pool
  const scope = Effect.runSync(Scope.make())

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "agent-runs-custom-storage-"))
    database = await Effect.runPromise(Scope.extend(freshDatabase, scope))
    pool = new pg.Pool({ connectionString: database.url, max: 5 })
    // pg.Pool's end() resolves once its clients are removed, before their connections have closed;
    // the database dropped (WITH FORCE) right after can then end one with an error that nothing
    // hears (an unhandled error in the test run, once in CI). The test's own teardown race only.
    pool.on("connect", (client) => client.on("error", () => {}))
    const port = await freePort()
    base = `http://127.0.0.1:${port}`
    const built = await createApp({ pool, dataDir: dir, publicUrl: `${base}/agents`, secretKey, adminToken })
    agents = built.agents
    server = built.server.listen(port, "127.0.0.1")
    await once(server, "listening")
  })

  afterAll(async () => {
    if (server !== undefined) await new Promise((resolve) => server.close(resolve))
    if (!closed) await agents?.close()
    await pool?.end()
    await Effect.runPromise(Scope.close(scope, Exit.void))
    rmSync(dir, { recursive: true, force: true })
  })

  it("creates a run through the mounted API, which succeeds, and reads its conversation", async () => {
    const run = await mountedApi(`${base}/agents/api/v1`, adminToken).runToEnd("Say hello")
    expect(run.state).toBe("SUCCEEDED")
    // The scripted agent answers "Done: <prompt>".
    expect(assistantTexts(run.conversation.steps)).toContain("Done: Say hello")
    // The service's tables are in the host's database, read through the host's pool.
    const rows = (await pool.query("SELECT state FROM runs WHERE run_id = $1", [run.runId])).rows
    expect(rows).toEqual([{ state: "SUCCEEDED" }])
  })

  it("leaves the other paths to the host, whose page reads the same pool", async () => {
    expect(await json(await fetch(`${base}/`))).toEqual({ database: database.name })
  })

  it("closes without ending the host's pool", async () => {
    await agents!.close()
    closed = true
    expect((await pool.query("SELECT 1 + 1 AS two")).rows).toEqual([{ two: 2 }])
    expect(pool.ending).toBe(false)
  })
})
