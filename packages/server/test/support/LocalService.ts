/**
 * Test support: the whole service on SQLite in a temporary directory, on 127.0.0.1, running the
 * scripted agent in local processes. Its teams' repositories are those of their GitHub host (a
 * host on 127.0.0.1: the GitHub double), or of the local repositories directory, as in the
 * bundled server. Served standalone (`Listen`) by default, or mounted in a
 * `node:http` host under a prefix (`mount`), where the host answers what the service does not own
 * with "the host's own page".
 */
import { FileBlobStore } from "@agent-runs/blob-store-fs"
import { GitHubRepoSource, OctokitHost } from "@agent-runs/github"
import { LocalRepoSource, ProcessExecutor } from "@agent-runs/executor-process"
import { SqliteStorage } from "@agent-runs/storage-sqlite"
import { freePort, mountedApi } from "@agent-runs/testing"
import { Effect, Exit, Layer, Redacted, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type AgentRuns, Listen, mount, type Mount } from "../../src/index.js"

/** What the host answers for a path the mounted service does not own. */
export const HOST_PAGE = "the host's own page"

export interface LocalServiceOptions {
  /** Names the temporary directory (`agent-runs-<name>-…`). */
  readonly name: string
  /** Mount the service under this prefix (`""` for the host's root) in a `node:http` host instead of serving it standalone. */
  readonly mountAt?: string
  /** Run agents (the process executor with the scripted agent); `true` unless said otherwise. */
  readonly executor?: boolean
  /** Sign-in with OpenID Connect (none: API tokens only). */
  readonly signIn?: AgentRuns.SignInOptions
}

export interface LocalService {
  /** The host's origin, `http://127.0.0.1:<port>`. */
  readonly origin: string
  /** The service's public URL: the origin, plus the prefix when mounted. */
  readonly base: string
  /** The temporary directory holding the database, blobs and sandboxes (removed by `close`). */
  readonly dir: string
  readonly adminToken: string
  readonly secretKey: Uint8Array
  /** The API as the admin token's holder. */
  readonly api: ReturnType<typeof mountedApi>
  /** The mounted service (only with `mountAt`): its handler, `fetch` and `owns`. */
  readonly mounted: Mount.Mounted | undefined
  readonly close: () => Promise<void>
}

/** The service's options on SQLite and files in `dir`, with the process executor unless `executor` is `false`. */
export const serviceOptions = ({ adminToken, dir, executor = true, publicUrl, secretKey }: {
  readonly dir: string
  readonly secretKey: Uint8Array
  readonly adminToken: string
  readonly publicUrl: string
  readonly executor?: boolean
}): AgentRuns.AgentRunsOptions<unknown, unknown, never> => ({
  storage: SqliteStorage.layer({ filename: join(dir, "agent-runs.db"), secretKey: Redacted.make(secretKey) }),
  blobs: FileBlobStore.layer({ root: join(dir, "blobs") }),
  ...(executor
    ? { executor: ProcessExecutor.layer({ root: join(dir, "sandboxes"), reposDir: join(dir, "repos"), mirrorsDir: join(dir, "mirrors"), isolation: undefined }) }
    : {}),
  repos: GitHubRepoSource.layer({ local: LocalRepoSource.layer({ reposDir: join(dir, "repos") }), mirrorsDir: join(dir, "mirrors") }),
  gitHost: OctokitHost.layer(),
  gitHubHosts: ["127.0.0.1"],
  // Outbound webhooks of the tests go to receivers on loopback.
  outboundWebhooks: { allowedRanges: ["127.0.0.0/8"] },
  secretKey,
  publicUrl,
  adminToken
})

/** Starts the service; `close` stops it and removes its directory. */
export const startLocalService = async (options: LocalServiceOptions): Promise<LocalService> => {
  const dir = mkdtempSync(join(tmpdir(), `agent-runs-${options.name}-`))
  const secretKey = new Uint8Array(randomBytes(32))
  const adminToken = `ar_${randomBytes(32).toString("base64url")}`
  const executor = options.executor ?? true
  const describe = (origin: string, base: string, mounted: Mount.Mounted | undefined, close: () => Promise<void>): LocalService => ({
    origin,
    base,
    dir,
    adminToken,
    secretKey,
    api: mountedApi(`${base}/api/v1`, adminToken),
    mounted,
    close: async () => {
      await close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
  if (options.mountAt === undefined) {
    const port = await freePort()
    const origin = `http://127.0.0.1:${port}`
    const scope = Effect.runSync(Scope.make())
    await Effect.runPromise(
      Layer.buildWithScope(
        Listen.layer({ ...serviceOptions({ dir, secretKey, adminToken, publicUrl: origin, executor }), signIn: options.signIn }, { port }),
        scope
      )
    )
    return describe(origin, origin, undefined, () => Effect.runPromise(Scope.close(scope, Exit.void)))
  }
  const holder: { agents?: Mount.Mounted } = {}
  const host = createServer((request, response) => {
    if (holder.agents?.owns(request.url)) return holder.agents.handler(request, response)
    response.writeHead(200, { "content-type": "text/plain" }).end(HOST_PAGE)
  })
  await new Promise<void>((resolve) => host.listen(0, "127.0.0.1", resolve))
  const origin = `http://127.0.0.1:${(host.address() as AddressInfo).port}`
  const base = `${origin}${options.mountAt}`
  const agents = await mount(serviceOptions({ dir, secretKey, adminToken, publicUrl: base, executor }))
  holder.agents = agents
  return describe(origin, base, agents, async () => {
    await agents.close()
    await new Promise((resolve) => host.close(resolve))
  })
}
