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
import { createServer } from "node:net"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createApp } from "../src/app.js"

const adminToken = `ar_${randomBytes(32).toString("base64url")}`
const secretKey = new Uint8Array(randomBytes(32))

/** A port free on 127.0.0.1 now: `publicUrl` names it before the app listens. */
const freePort = async (): Promise<number> => {
  const probe = createServer().listen(0, "127.0.0.1")
  await once(probe, "listening")
  const { port } = probe.address() as AddressInfo
  await new Promise((resolve) => probe.close(resolve))
  return port
}

// Test code reads arbitrary JSON answers field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const json = async (response: Response): Promise<any> => response.json()

/** A conversation's steps, as far as this test reads them. */
interface Step {
  readonly messages: ReadonlyArray<{ readonly role: string; readonly content: ReadonlyArray<{ readonly text?: string }> }>
  readonly steps: ReadonlyArray<Step>
}

/** Every text the assistant wrote in `steps` and their sub-steps. */
const assistantTexts = (steps: ReadonlyArray<Step>): Array<string> =>
  steps.flatMap((step) => [
    ...step.messages.filter((m) => m.role === "assistant").flatMap((m) => m.content.flatMap((part) => part.text ?? [])),
    ...assistantTexts(step.steps)
  ])

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

  const api = (method: string, path: string, body?: unknown) =>
    fetch(`${base}/agents/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })

  it("creates a run through the mounted API, which succeeds, and reads its conversation", async () => {
    const created = await api("POST", "/agent/runs", { prompt: "Say hello" })
    expect(created.status).toBe(200)
    const { run_id } = await json(created)
    let state = ""
    for (let i = 0; i < 300 && state !== "SUCCEEDED" && state !== "FAILED"; i++) {
      if (i > 0) await new Promise((resolve) => setTimeout(resolve, 100))
      state = (await json(await api("GET", `/agent/runs/${run_id}`))).state
    }
    expect(state).toBe("SUCCEEDED")
    const conversation = await json(await api("GET", `/agent/runs/${run_id}/conversation`))
    // The scripted agent answers "Done: <prompt>".
    expect(assistantTexts(conversation.steps)).toContain("Done: Say hello")
    // The service's tables are in the host's database, read through the host's pool.
    const rows = (await pool.query("SELECT state FROM runs WHERE run_id = $1", [run_id])).rows
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
