/**
 * The Express example on 127.0.0.1: a run created through the API mounted under /agents finishes
 * and its conversation reads back; the app's own route (behind `express.json()`) still answers.
 */
import { randomBytes } from "node:crypto"
import { once } from "node:events"
import { mkdtempSync, rmSync } from "node:fs"
import type { Server } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assistantTexts, freePort, mountedApi } from "@agent-runs/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createApp } from "../src/app.js"

const adminToken = `ar_${randomBytes(32).toString("base64url")}`
const secretKey = new Uint8Array(randomBytes(32))

// Test code reads arbitrary JSON answers field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const json = async (response: Response): Promise<any> => response.json()

describe("Agent Runs in an Express app", () => {
  let dir: string
  let base: string
  let server: Server
  let agents: Awaited<ReturnType<typeof createApp>>["agents"] | undefined

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "agent-runs-embed-express-"))
    const port = await freePort()
    base = `http://127.0.0.1:${port}`
    const built = await createApp({ dataDir: dir, publicUrl: `${base}/agents`, secretKey, adminToken })
    agents = built.agents
    server = built.app.listen(port, "127.0.0.1")
    await once(server, "listening")
  })

  afterAll(async () => {
    if (server !== undefined) await new Promise((resolve) => server.close(resolve))
    await agents?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it("creates a run through the mounted API, which succeeds, and reads its conversation", async () => {
    const run = await mountedApi(`${base}/agents/api/v1`, adminToken).runToEnd("Say hello")
    expect(run.state).toBe("SUCCEEDED")
    // The scripted agent answers "Done: <prompt>".
    expect(assistantTexts(run.conversation.steps)).toContain("Done: Say hello")
  })

  it("leaves the app's own routes to Express, body parser included", async () => {
    const response = await fetch(`${base}/notes`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ text: "buy milk" })
    })
    expect(response.status).toBe(201)
    expect(await json(response)).toEqual({ saved: { text: "buy milk" } })
    expect((await fetch(`${base}/agentsx`)).status).toBe(404)
  })
})
