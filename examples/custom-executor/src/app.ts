/** A node:http server with Agent Runs mounted under /agents, its runs executed by TempDirExecutor. */
import { FileBlobStore } from "@agent-runs/blob-store-fs"
import { type Mounted, mount } from "@agent-runs/server"
import { SqliteStorage } from "@agent-runs/storage-sqlite"
import { createServer, type Server } from "node:http"
import { join } from "node:path"
import * as TempDirExecutor from "./TempDirExecutor.js"

export interface AppOptions {
  readonly dataDir: string
  readonly publicUrl: string // where clients reach Agent Runs: http://localhost:3000/agents
  readonly secretKey: Uint8Array // 32 bytes, kept: it signs run tokens and encrypts secrets
  readonly adminToken: string // ar_ and 32 or more characters
}

export const createApp = async ({ adminToken, dataDir, publicUrl, secretKey }: AppOptions): Promise<{ server: Server; agents: Mounted }> => {
  const agents = await mount({
    publicUrl, secretKey, adminToken,
    storage: SqliteStorage.layer({ filename: join(dataDir, "agent-runs.db"), secretKey }),
    blobs: FileBlobStore.layer({ root: join(dataDir, "blobs") }),
    executor: TempDirExecutor.layer({ root: join(dataDir, "sandboxes") })
  })
  const server = createServer((request, response) =>
    agents.owns(request.url ?? "/") ? agents.handler(request, response) : response.end("the host's own page\n"))
  return { server, agents }
}
