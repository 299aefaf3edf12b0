/** An Express app with Agent Runs mounted under /agents, beside its own routes. */
import { FileBlobStore } from "@agent-runs/blob-store-fs"
import { ProcessExecutor } from "@agent-runs/executor-process"
import { type Mounted, mount } from "@agent-runs/server"
import { SqliteStorage } from "@agent-runs/storage-sqlite"
import express, { type Express } from "express"
import { join } from "node:path"

export interface AppOptions {
  readonly dataDir: string
  readonly publicUrl: string // where clients reach Agent Runs: http://localhost:3000/agents
  readonly secretKey: Uint8Array // 32 bytes, kept: it signs run tokens and encrypts secrets
  readonly adminToken: string // ar_ and 32 or more characters
}

export const createApp = async ({ adminToken, dataDir, publicUrl, secretKey }: AppOptions): Promise<{ app: Express; agents: Mounted }> => {
  const agents = await mount({
    publicUrl, secretKey, adminToken,
    storage: SqliteStorage.layer({ filename: join(dataDir, "agent-runs.db"), secretKey }),
    blobs: FileBlobStore.layer({ root: join(dataDir, "blobs") }),
    executor: ProcessExecutor.layer({ root: join(dataDir, "sandboxes"), reposDir: join(dataDir, "repos") })
  })
  const app = express()
  app.use("/agents", agents.handler) // before the body parsers: the service reads its own bodies
  app.use(express.json())
  app.post("/notes", (req, res) => void res.status(201).json({ saved: req.body }))
  return { app, agents }
}
