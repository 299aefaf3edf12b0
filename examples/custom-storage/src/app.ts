/** A node:http server that already has a pg.Pool, with Agent Runs mounted under /agents storing in it. */
import { FileBlobStore } from "@agent-runs/blob-store-fs"
import { ProcessExecutor } from "@agent-runs/executor-process"
import { type Mounted, mount } from "@agent-runs/server"
import { PgStorage } from "@agent-runs/storage-pg"
import { createServer, type Server } from "node:http"
import { join } from "node:path"
import type pg from "pg"

export interface AppOptions {
  readonly pool: pg.Pool // the host's own: Agent Runs shares it and never ends it
  readonly dataDir: string // transcripts and sandboxes
  readonly publicUrl: string // where clients reach Agent Runs: http://localhost:3000/agents
  readonly secretKey: Uint8Array // 32 bytes, kept: it signs run tokens and encrypts secrets
  readonly adminToken: string // ar_ and 32 or more characters
}

export const createApp = async ({ adminToken, dataDir, pool, publicUrl, secretKey }: AppOptions): Promise<{ server: Server; agents: Mounted }> => {
  const agents = await mount({
    publicUrl, secretKey, adminToken,
    storage: PgStorage.layerFromPool({ pool, secretKey }),
    blobs: FileBlobStore.layer({ root: join(dataDir, "blobs") }),
    executor: ProcessExecutor.layer({ root: join(dataDir, "sandboxes"), reposDir: join(dataDir, "repos") })
  })
  const server = createServer((request, response) => agents.owns(request.url ?? "/")
    ? agents.handler(request, response) // the host's own page reads the same pool:
    : void pool.query("SELECT current_database() AS database").then(({ rows }) => response.end(JSON.stringify(rows[0])), () => response.writeHead(500).end()))
  return { server, agents }
}
