/**
 * The bundled server in-process for tests: `ServerLive` on a free loopback port with a temporary
 * data directory, on SQLite (a file in that directory) or on a fresh PostgreSQL database, with a
 * known admin token. `api` sends JSON requests to it.
 */
import { freshDatabase } from "@agent-runs/storage-pg/testing"
import { Effect, Exit, Layer, Option, Redacted, Scope } from "effect"
import { afterAll, beforeAll, expect } from "vitest"
import { randomBytes } from "node:crypto"
import { join } from "node:path"
import type { ServerConfig } from "@agent-runs/cli"
import { ServerLive } from "@agent-runs/cli"
import { call, freePort, tempDataDir } from "./support.js"

export { call, type Reply } from "./support.js"

export type DatabaseKind = "sqlite" | "postgres"

export interface TestServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  /** The bootstrap admin's token. */
  readonly adminToken: string
  readonly dataDir: string
  readonly config: ServerConfig
}

/** Starts the server for the scope. */
export const startServer = (
  kind: DatabaseKind,
  overrides: Partial<ServerConfig> = {},
  execution: Partial<ServerConfig["execution"]> = {}
) =>
  Effect.gen(function*() {
    const dataDir = yield* tempDataDir
    const adminToken = `ar_${randomBytes(32).toString("base64url")}`
    const database: ServerConfig["database"] = kind === "sqlite"
      ? { _tag: "Sqlite", filename: join(dataDir, "agent-runs.db") }
      : { _tag: "Postgres", url: Redacted.make((yield* freshDatabase).url) }
    const port = yield* freePort
    const url = `http://127.0.0.1:${port}`
    const config: ServerConfig = {
      port,
      host: "127.0.0.1",
      dataDir,
      database,
      adminToken: Option.some(Redacted.make(adminToken)),
      publicUrl: url,
      webhookBaseUrl: url,
      secretKey: Option.none(),
      maxBodyBytes: 1024 * 1024,
      downloadTtlSeconds: 900,
      blobDir: join(dataDir, "blobs"),
      execution: {
        executor: "process",
        harness: Option.none(),
        reposDir: join(dataDir, "repos"),
        // API tests keep their runs QUEUED; execution tests set a concurrency.
        concurrency: 0,
        leaseSeconds: 30,
        cancelGraceSeconds: 2,
        dockerImage: "agent-runs-test:latest",
        dockerNetwork: "none",
        ...execution
      },
      ingress: { trustedProxies: [], deliveriesPerMinute: 60 },
      // The GitHub double of the tests listens on loopback.
      githubHosts: ["github.com", "127.0.0.1"],
      scheduler: { enabled: true, graceSeconds: 2 },
      ...overrides
    }
    yield* Layer.build(ServerLive(config))
    return { url, adminToken, dataDir, config } satisfies TestServer
  })

/**
 * The server of a describe block: started (with `startServer`'s arguments) before its tests and
 * stopped after them; the getter answers it once started.
 */
export const suiteServer = (
  kind: DatabaseKind,
  overrides: Partial<ServerConfig> = {},
  execution: Partial<ServerConfig["execution"]> = {}
) => {
  const scope = Effect.runSync(Scope.make())
  let server: TestServer | undefined
  beforeAll(async () => {
    server = await Effect.runPromise(Scope.extend(startServer(kind, overrides, execution), scope))
  }, 60_000)
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)), 60_000)
  return () => server!
}

/** Creates a team with one principal per role; returns their tokens. */
export const makeTeam = async (server: Pick<TestServer, "url" | "adminToken">, name: string) => {
  const team = await call(server, "POST", "/api/v1/admin/teams", { token: server.adminToken, body: { name } })
  expect(team.status).toBe(201)
  const tokens: Record<"admin" | "member" | "viewer", string> = { admin: "", member: "", viewer: "" }
  const principals: Record<"admin" | "member" | "viewer", string> = { admin: "", member: "", viewer: "" }
  for (const role of ["admin", "member", "viewer"] as const) {
    const principal = await call(server, "POST", "/api/v1/admin/principals", {
      token: server.adminToken,
      body: { type: "user", display_name: `${name} ${role}`, memberships: [{ team_uid: team.body.uid, role }] }
    })
    expect(principal.status).toBe(201)
    principals[role] = principal.body.uid
    const token = await call(server, "POST", `/api/v1/admin/principals/${principal.body.uid}/tokens`, {
      token: server.adminToken,
      body: { name: "test" }
    })
    expect(token.status).toBe(201)
    tokens[role] = token.body.token
  }
  return { uid: team.body.uid as string, tokens, principals }
}


/** The states a run ends in. */
export const ENDED_STATES: ReadonlyArray<string> = ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED", "BLOCKED"]

/** Reads a run until `done` holds (by default: it ended) or `timeoutMs` passes; answers its last read. */
export const waitForRun = async (
  server: Pick<TestServer, "url">,
  token: string,
  runId: string,
  done: (run: { readonly state: string }) => boolean = (run) => ENDED_STATES.includes(run.state),
  timeoutMs = 30_000
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
): Promise<any> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const run = (await call(server, "GET", `/api/v1/agent/runs/${runId}`, { token })).body
    if (done(run) || Date.now() > deadline) return run
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
