/** A Hono app with Agent Runs mounted under /agents, beside its own routes. */
import { FileBlobStore } from "@agent-runs/blob-store-fs"
import { ProcessExecutor } from "@agent-runs/executor-process"
import { type Mounted, mount } from "@agent-runs/server"
import { SqliteStorage } from "@agent-runs/storage-sqlite"
import { Hono } from "hono"
import { join } from "node:path"

export interface AppOptions {
  readonly dataDir: string
  readonly publicUrl: string // where clients reach Agent Runs: http://localhost:3000/agents
  readonly secretKey: Uint8Array // 32 bytes, kept: it signs run tokens and encrypts secrets
  readonly adminToken: string // ar_ and 32 or more characters
}

export const createApp = async ({ adminToken, dataDir, publicUrl, secretKey }: AppOptions): Promise<{ app: Hono; agents: Mounted }> => {
  const agents = await mount({
    publicUrl, secretKey, adminToken,
    storage: SqliteStorage.layer({ filename: join(dataDir, "agent-runs.db"), secretKey }),
    blobs: FileBlobStore.layer({ root: join(dataDir, "blobs") }),
    executor: ProcessExecutor.layer({ root: join(dataDir, "sandboxes"), reposDir: join(dataDir, "repos") })
  })
  const app = new Hono()
  app.all("/agents/*", (c) => agents.fetch(c.req.raw)) // the request as it came, prefix included
  app.post("/notes", async (c) => c.json({ saved: await c.req.json() }, 201))
  return { app, agents }
}
