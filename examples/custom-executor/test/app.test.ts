/**
 * The custom executor example on 127.0.0.1: a run created through the API mounted under /agents is
 * executed by TempDirExecutor (the scripted agent in a temporary directory), finishes and its
 * conversation reads back; its sandbox is removed; the host's own page still answers.
 */
import { randomBytes } from "node:crypto"
import { once } from "node:events"
import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import type { Server } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assistantTexts, freePort, mountedApi } from "@agent-runs/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createApp } from "../src/app.js"

const adminToken = `ar_${randomBytes(32).toString("base64url")}`
const secretKey = new Uint8Array(randomBytes(32))

describe("Agent Runs executing with TempDirExecutor", () => {
  let dir: string
  let base: string
  let server: Server
  let agents: Awaited<ReturnType<typeof createApp>>["agents"] | undefined

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "agent-runs-custom-executor-"))
    const port = await freePort()
    base = `http://127.0.0.1:${port}`
    const built = await createApp({ dataDir: dir, publicUrl: `${base}/agents`, secretKey, adminToken })
    agents = built.agents
    server = built.server.listen(port, "127.0.0.1")
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
    // The run's sandbox, a temporary directory below <dataDir>/sandboxes, is gone once it has ended.
    let sandboxes = readdirSync(join(dir, "sandboxes"))
    for (let i = 0; i < 50 && sandboxes.length > 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      sandboxes = readdirSync(join(dir, "sandboxes"))
    }
    expect(sandboxes).toEqual([])
  })

  it("leaves the other paths to the host", async () => {
    expect(await (await fetch(`${base}/`)).text()).toBe("the host's own page\n")
    expect(await (await fetch(`${base}/agentsx`)).text()).toBe("the host's own page\n")
  })
})
