/**
 * The service mounted under `/agents` in a Fastify app, answered from an `onRequest` hook (before
 * Fastify parses the body, which the service reads itself), beside the app's own JSON route.
 */
import { FileBlobStore } from "@agent-runs/blob-store-fs"
import { ProcessExecutor } from "@agent-runs/executor-process"
import { SqliteStorage } from "@agent-runs/storage-sqlite"
import { assistantTexts, mountedApi } from "@agent-runs/testing"
import Fastify from "fastify"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { mount, type Mounted } from "../src/index.js"

const adminToken = `ar_${randomBytes(32).toString("base64url")}`
const secretKey = new Uint8Array(randomBytes(32))

describe("mount under a prefix in Fastify", () => {
  const dir = mkdtempSync(join(tmpdir(), "agent-runs-fastify-"))
  const app = Fastify()
  let agents: Mounted
  let base = ""

  beforeAll(async () => {
    app.addHook("onRequest", (request, reply, done) => {
      if (!agents.owns(request.url)) return done()
      reply.hijack()
      agents.handler(request.raw, reply.raw)
    })
    app.post("/notes", async (request) => ({ saved: request.body }))
    await app.listen({ port: 0, host: "127.0.0.1" })
    base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
    agents = await mount({
      publicUrl: `${base}/agents`,
      secretKey,
      adminToken,
      storage: SqliteStorage.layer({ filename: join(dir, "agent-runs.db"), secretKey }),
      blobs: FileBlobStore.layer({ root: join(dir, "blobs") }),
      executor: ProcessExecutor.layer({ root: join(dir, "sandboxes"), reposDir: join(dir, "repos"), isolation: undefined })
    })
  })

  afterAll(async () => {
    await agents?.close()
    await app.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it("creates a run through the mounted API and reads its conversation; the app's own route still answers", async () => {
    const run = await mountedApi(`${base}/agents/api/v1`, adminToken).runToEnd("@say hello from fastify")
    expect(run.state).toBe("SUCCEEDED")
    expect(assistantTexts(run.conversation.steps)).toContain("hello from fastify")
    const headers = { "content-type": "application/json" }
    const note = await fetch(`${base}/notes`, { method: "POST", headers, body: JSON.stringify({ text: "mine" }) })
    expect(await note.json()).toEqual({ saved: { text: "mine" } })
  })
})
