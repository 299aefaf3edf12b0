/**
 * A host with start-up work of its own serves the service while that work runs (as the bundled
 * server does with its bootstrap token and definitions), on SQLite and on PostgreSQL: the port is
 * open, `/healthz` and the pages that read nothing stored answer, `/readyz` and the API answer 503
 * "the service is starting" with `Retry-After`, and the administrator token the start-up work
 * provisions is never told 401; once the host says it has started (`Server.started`), the API
 * answers. The start-up work is held until the test has seen the window, so that without the gate
 * the token's 401 would be seen every time.
 */
import { Identities } from "@agent-runs/core"
import { FileBlobStore } from "@agent-runs/blob-store-fs"
import { Server } from "@agent-runs/http"
import { PgStorage } from "@agent-runs/storage-pg"
import { freshDatabase } from "@agent-runs/storage-pg/testing"
import { SqliteStorage } from "@agent-runs/storage-sqlite"
import { NodeHttpServer } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Layer, Option, Redacted, type Scope } from "effect"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { AgentRuns } from "../src/index.js"
import { freeLoopbackPort, send, STARTING, untilAnswered, untilReady } from "./support/Polling.js"

const secretKey = new Uint8Array(randomBytes(32))

/** A scoped temporary directory. */
const scratch = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "agent-runs-startup-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

type StorageLayer = AgentRuns.AgentRunsOptions<unknown, never, never>["storage"]

const stores: ReadonlyArray<readonly [string, (dir: string) => Effect.Effect<StorageLayer, unknown, Scope.Scope>]> = [
  ["SQLite", (dir) => Effect.succeed(SqliteStorage.layer({ filename: join(dir, "agent-runs.db"), secretKey: Redacted.make(secretKey) }))],
  [
    "PostgreSQL",
    () => Effect.map(freshDatabase, ({ url }) => PgStorage.layer({ url: Redacted.make(url), secretKey: Redacted.make(secretKey) }))
  ]
]

/**
 * The service served on `port` while the host's start-up work runs: it waits for `release`, then
 * provisions the administrator token, then says the service has started.
 */
const hostWithStartupWork = (storage: StorageLayer, dir: string, port: number, adminToken: string, release: Deferred.Deferred<void>) => {
  const startup = Layer.effectDiscard(
    Effect.gen(function*() {
      yield* Deferred.await(release)
      const identities = yield* Identities.Identities
      yield* identities.bootstrap(Option.some(adminToken), "the test host")
      yield* Server.started
    })
  )
  return Layer.merge(Server.serveApp, startup).pipe(
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port, host: "127.0.0.1" })),
    Layer.provide(AgentRuns.layer({
      storage,
      blobs: FileBlobStore.layer({ root: join(dir, "blobs") }),
      secretKey,
      publicUrl: `http://127.0.0.1:${port}`
    }))
  )
}

describe.each(stores)("a host with start-up work of its own, on %s", (_, storageIn) => {
  it.scopedLive("answers the API 503 while it starts, never 401 for the token it is provisioning, then 200", () =>
    Effect.gen(function*() {
      const dir = yield* scratch
      const storage = yield* storageIn(dir)
      const port = yield* freeLoopbackPort
      const base = `http://127.0.0.1:${port}`
      const adminToken = `ar_${randomBytes(32).toString("base64url")}`
      const release = yield* Deferred.make<void>()
      yield* Effect.forkScoped(Layer.launch(hostWithStartupWork(storage, dir, port, adminToken, release)))

      // The port is open and start-up work is held: the window a client could fall into.
      expect((yield* untilAnswered(`${base}/healthz`)).status).toBe(200)
      expect(yield* send(`${base}/api/v1/agent/runs`, adminToken)).toMatchObject(STARTING)
      expect(yield* send(`${base}/api/v1/agent/runs`, adminToken, { method: "POST", body: JSON.stringify({ prompt: "hi" }) })).toMatchObject(STARTING)
      expect(yield* send(`${base}/api/v1/agent/runs`)).toMatchObject(STARTING)
      const readyz = yield* send(`${base}/readyz`)
      expect(readyz.status).toBe(503)
      expect(readyz.json).toMatchObject({ error: "the service is starting" })
      for (const page of ["/", "/docs", "/docs/errors", "/openapi.json", "/app", "/healthz/", "/METRICS"]) {
        expect((yield* send(`${base}${page}`)).status, page).toBe(200)
      }

      yield* Deferred.succeed(release, undefined)
      const seen = yield* untilReady(base, adminToken)
      for (const reply of seen) {
        if (reply.status !== 200) expect(reply).toMatchObject(STARTING)
      }
      expect((yield* send(`${base}/api/v1/agent/runs`, adminToken)).status).toBe(200)
      // Started: a wrong token is a 401 again.
      expect((yield* send(`${base}/api/v1/agent/runs`, `ar_${randomBytes(32).toString("base64url")}`)).status).toBe(401)
    }), 60_000)
})
