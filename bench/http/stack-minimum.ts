/**
 * The stack's minimum for the HTTP reads (issue 34, a figure for deciding where the rest of a
 * request's cost lies; not a row of `npm run bench`): the two reads of `bench:http` served with
 * the least this stack allows, beside the Effect floor (bench/support/floor.ts) in the same script.
 *
 * - `floor`: @effect/platform's router answering recorded bytes (the Effect floor of bench:http).
 * - `httpapi`: the same bytes through `HttpApiBuilder` with a bearer security middleware (a fixed
 *   token), no storage: what the API framework itself costs.
 * - `minimum`: `HttpApiBuilder` with the bearer middleware and one `@effect/sql` statement on a
 *   read-only SQLite connection per request, answering stored JSON text: a run by its id, or the
 *   first page of 20 of a team's runs (by `created_at`, from 20,000, on an index) concatenated.
 *   Nothing else: no tokens, teams or memberships, no access checks, no metrics or problem
 *   middleware, no spans of our own.
 *
 * Each server runs on a worker thread, measured alternately with bench/support/load.ts
 * (BENCH_SECONDS, BENCH_CONNECTIONS). Run on a quiet machine:
 *   npx vite-node --config bench/vite.config.ts bench/http/stack-minimum.ts
 */
import Database from "better-sqlite3"
import { Effect } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { startEffectFloor } from "../support/floor.js"
import { measure, number, rate, repeat, startBare } from "../support/load.js"

const RUNS = 20_000
const TOKEN = "bench-token"

/** The servers' worker: `workerData.storage` (a SQLite file) or recorded bodies (`workerData.bodies`). */
const SERVER = `
const { parentPort, workerData } = require("node:worker_threads")
const http = require("node:http")
const { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSecurity, HttpApiSchema, HttpServerResponse } = require("@effect/platform")
const { NodeHttpServer } = require("@effect/platform-node")
const { SqliteClient } = require("@effect/sql-sqlite-node")
const { SqlClient } = require("@effect/sql")
const { Context, Effect, Layer, Redacted, Schema } = require("effect")
class Caller extends Context.Tag("Caller")() {}
class Unauthorized extends Schema.TaggedError()("Unauthorized", {}, HttpApiSchema.annotations({ status: 401 })) {}
class Auth extends HttpApiMiddleware.Tag()("Auth", { failure: Unauthorized, provides: Caller, security: { bearer: HttpApiSecurity.bearer } }) {}
const Api = HttpApi.make("minimum").add(HttpApiGroup.make("runs")
  .add(HttpApiEndpoint.get("get", "/api/v1/agent/runs/:run_id").setPath(Schema.Struct({ run_id: Schema.String })))
  .add(HttpApiEndpoint.get("list", "/api/v1/agent/runs"))
  .middleware(Auth))
const json = (text) => HttpServerResponse.text(text, { contentType: "application/json" })
const recorded = (bodies) => (h) => Effect.succeed(h.handle("get", () => Effect.succeed(json(bodies.get))).handle("list", () => Effect.succeed(json(bodies.list))))
const stored = (h) => Effect.map(SqlClient.SqlClient, (sql) => h
  .handle("get", ({ path }) => Effect.map(sql\`SELECT json FROM runs WHERE run_id = \${path.run_id}\`, (rows) => json(rows[0].json)))
  .handle("list", () => Effect.map(sql\`SELECT json FROM runs WHERE team = 'team' ORDER BY created_at DESC LIMIT 21\`, (rows) =>
    json('{"runs":[' + rows.slice(0, 20).map((r) => r.json).join(",") + '],"page_info":{"has_next_page":' + (rows.length > 20) + '}}'))))
const AuthLive = Layer.succeed(Auth, { bearer: (token) => Redacted.value(token) === workerData.token ? Effect.succeed({}) : Effect.fail(new Unauthorized()) })
const handlers = workerData.storage === undefined
  ? HttpApiBuilder.group(Api, "runs", recorded(workerData.bodies))
  : HttpApiBuilder.group(Api, "runs", stored).pipe(Layer.provide(SqliteClient.layer({ filename: workerData.storage, readonly: true })))
const server = http.createServer()
server.keepAliveTimeout = 60000
server.once("listening", () => parentPort.postMessage(server.address().port))
Effect.runFork(Layer.launch(HttpApiBuilder.serve().pipe(
  Layer.provide(HttpApiBuilder.api(Api).pipe(Layer.provide(handlers), Layer.provide(AuthLive))),
  Layer.provide(NodeHttpServer.layer(() => server, { port: 0, host: "127.0.0.1" }))
)))
`

/** A run's stored JSON, about the size of a seeded run of bench:http. */
const runJson = (i: number) =>
  JSON.stringify({
    run_id: `run-${String(i).padStart(6, "0")}`,
    title: `Benchmark run ${i}`,
    prompt: `Fix issue number ${i} in the repository and open a pull request`,
    state: "SUCCEEDED",
    padding: "x".repeat(900)
  })

/** A SQLite file of `RUNS` runs of one team, indexed as the list reads them. */
const seed = (file: string) => {
  const db = new Database(file)
  db.pragma("journal_mode = WAL")
  db.exec("CREATE TABLE runs (run_id TEXT PRIMARY KEY, team TEXT NOT NULL, created_at INTEGER NOT NULL, json TEXT NOT NULL)")
  db.exec("CREATE INDEX runs_team_created ON runs (team, created_at)")
  const insert = db.prepare("INSERT INTO runs VALUES (?, 'team', ?, ?)")
  db.transaction(() => {
    for (let i = 0; i < RUNS; i++) insert.run(`run-${String(i).padStart(6, "0")}`, i, runJson(i))
  })()
  db.close()
}

const program = Effect.gen(function*() {
  const dir = mkdtempSync(join(tmpdir(), "agent-runs-stack-minimum-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
  const storage = join(dir, "runs.db")
  seed(storage)
  const getPath = "/api/v1/agent/runs/run-000100"
  const page = Array.from({ length: 20 }, (_, i) => runJson(RUNS - 1 - i))
  const bodies = { get: runJson(100), list: `{"runs":[${page.join(",")}],"page_info":{"has_next_page":true}}` }
  const floor = yield* startEffectFloor([
    { method: "GET", pattern: "/api/v1/agent/runs/:run_id", path: getPath, status: 200, body: bodies.get },
    { method: "GET", pattern: "/api/v1/agent/runs", path: "/api/v1/agent/runs", status: 200, body: bodies.list }
  ])
  const httpapi = yield* startBare(SERVER, { token: TOKEN, bodies })
  const minimum = yield* startBare(SERVER, { token: TOKEN, storage })
  const headers = { authorization: `Bearer ${TOKEN}` }
  for (const [label, path] of [["GET /agent/runs/{id}", getPath], ["GET /agent/runs?limit=20", "/api/v1/agent/runs?limit=20"]] as const) {
    const rates: Record<string, number> = {}
    for (const [name, port] of [["floor", floor.port], ["httpapi", httpapi.port], ["minimum", minimum.port]] as const) {
      const measured = yield* Effect.promise(() => measure(repeat({ port, method: "GET", path, headers })))
      const other = [...measured.statuses.keys()].filter((status) => status !== 200)
      if (other.length > 0) return yield* Effect.dieMessage(`${name} ${label}: answered ${other.join(", ")}`)
      rates[name] = rate(measured)
    }
    const share = (name: string) => `${((100 * rates[name]!) / rates.floor!).toFixed(1)}%`
    console.log(
      `${label.padEnd(26)} floor ${number(rates.floor!)} req/s; HttpApi + bearer ${number(rates.httpapi!)} (${share("httpapi")}); ` +
        `+ one SQL read ${number(rates.minimum!)} (${share("minimum")})`
    )
  }
})

Effect.runPromise(Effect.scoped(program)).catch((error) => {
  console.error(error)
  process.exit(1)
})
