/**
 * The bundled server as the HTTP benchmarks use it (bench/http, bench/ingress): built unless
 * BENCH_SKIP_BUILD=1, started as a process (examples/server/test/process.ts), JSON calls whose
 * status is checked, a team with one principal and its token, and a fresh PostgreSQL database on
 * 127.0.0.1:5432 for the PostgreSQL cases.
 */
import type { Ids } from "@agent-runs/core"
import { freshDatabase, SERVER as PG_SERVER } from "@agent-runs/storage-pg/testing"
import { Effect } from "effect"
import { spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { buildServer, call, REPO_ROOT, type Reply, type ServerProcess, spawnServer } from "../../examples/server/test/process.js"

/**
 * The servers' extra environment: `NODE_OPTIONS` from BENCH_SERVER_NODE_OPTIONS (Node refuses
 * `--cpu-prof` there; a `--require`d preload such as bench/support/cpu-profile.cjs can profile).
 */
export const serverNodeOptions: Readonly<Record<string, string>> = process.env.BENCH_SERVER_NODE_OPTIONS === undefined
  ? {}
  : { NODE_OPTIONS: process.env.BENCH_SERVER_NODE_OPTIONS }

/**
 * Marks a phase in a profiled server (bench/support/cpu-profile.cjs writes the profile so far on
 * SIGUSR2): called before and after a measured case, its profile is a file of its own.
 */
export const markProfile = (server: ServerProcess) =>
  Effect.sync(() => {
    if (process.env.BENCH_SERVER_NODE_OPTIONS?.includes("cpu-profile") === true) process.kill(server.pid, "SIGUSR2")
  })

/**
 * The bundled server on `dataDir` with a fresh admin token and secret key, the per-team run quota
 * out of the way (the benchmarks measure throughput, not the quota), and `env`.
 */
export const spawnBenchServer = (dataDir: string, env: Readonly<Record<string, string>>) =>
  Effect.gen(function*() {
    const adminToken = `ar_${randomBytes(32).toString("base64url")}`
    const server = yield* spawnServer({
      dataDir,
      env: {
        AGENT_RUNS_ADMIN_TOKEN: adminToken,
        AGENT_RUNS_SECRET_KEY: randomBytes(32).toString("hex"),
        AGENT_RUNS_RUNS_PER_MINUTE: "100000000",
        ...env
      }
    })
    return { server, adminToken }
  })

/** Builds every package and the server (`npx tsc -b tsconfig.json`) unless BENCH_SKIP_BUILD=1. */
export const buildUnlessSkipped = Effect.suspend(() => {
  if (process.env.BENCH_SKIP_BUILD === "1") return Effect.void
  console.log("building (npx tsc -b tsconfig.json)…")
  const build = buildServer()
  return build.ok ? Effect.void : Effect.dieMessage(`the build failed:\n${build.output}`)
})

/** The JSON body of a reply with the expected status (the script stops otherwise). */
export const expectStatus = <A>(what: string, reply: Reply, status: number): Effect.Effect<A> =>
  reply.status === status
    ? Effect.succeed(reply.body as A)
    : Effect.dieMessage(`${what}: expected ${status}, got ${reply.status}: ${JSON.stringify(reply.body)}`)

/** One JSON call with a bearer token. */
export const send1 = (server: ServerProcess, method: string, path: string, token: string, body?: unknown) =>
  Effect.promise(() => call(server, method, path, body === undefined ? { token } : { token, body }))

/** A new team with one principal of `role` in it, and that principal's token (through the admin API). */
export const teamPrincipal = (server: ServerProcess, adminToken: string, role: "admin" | "member") =>
  Effect.gen(function*() {
    const team = yield* expectStatus<{ uid: Ids.TeamUid }>(
      "create team",
      yield* send1(server, "POST", "/api/v1/admin/teams", adminToken, { name: "bench" }),
      201
    )
    const principal = yield* expectStatus<{ uid: Ids.PrincipalUid }>(
      "create principal",
      yield* send1(server, "POST", "/api/v1/admin/principals", adminToken, {
        type: "user",
        display_name: "bench",
        memberships: [{ team_uid: team.uid, role }]
      }),
      201
    )
    const { token } = yield* expectStatus<{ token: string }>(
      "create token",
      yield* send1(server, "POST", `/api/v1/admin/principals/${principal.uid}/tokens`, adminToken, {}),
      201
    )
    return { team: team.uid, principal: principal.uid, token }
  })

/** The benches' PostgreSQL databases still open, for `dropDatabasesNow`. */
const openDatabases = new Set<string>()

/**
 * A fresh PostgreSQL database (127.0.0.1:5432, `AGENT_RUNS_TEST_PG` overrides) for the scope,
 * dropped when the scope closes; yields its name and URL. A defect when it cannot be created.
 */
export const benchDatabase = Effect.tap(
  freshDatabase,
  ({ name }) => Effect.acquireRelease(Effect.sync(() => openDatabases.add(name)), () => Effect.sync(() => openDatabases.delete(name)))
)

/**
 * Drops the databases `benchDatabase` opened and no scope dropped yet, synchronously (a child
 * process, at most 20 s): for `runBench`'s cleanups, when the watchdog or a failure ends the script
 * before its scopes close. Best effort.
 */
export const dropDatabasesNow = (): void => {
  if (openDatabases.size === 0) return
  const script = `
const pg = require("pg")
const client = new pg.Client({ connectionString: process.argv[1] })
client.connect()
  .then(() => Promise.all(process.argv.slice(2).map((name) => client.query('DROP DATABASE IF EXISTS "' + name + '" WITH (FORCE)'))))
  .catch((error) => console.error(String(error)))
  .finally(() => client.end())
`
  spawnSync(process.execPath, ["-e", script, `${PG_SERVER}/test`, ...openDatabases], { cwd: REPO_ROOT, timeout: 20_000, stdio: "inherit" })
  openDatabases.clear()
}
