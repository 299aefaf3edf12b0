/**
 * HTTP benchmark (issue 4). Builds and starts the bundled server as a process on SQLite with a
 * temporary data directory, seeds one team with N finished runs (default 100,000; written straight
 * through the storage layer on the same database file), then drives it with C concurrent
 * keep-alive loopback connections (default 50) for S seconds per case (default 10, after a 1 s
 * warm-up): `POST /api/v1/agent/runs` and `GET /api/v1/agent/runs?limit=20`. The baseline is a
 * bare `node:http` server on a worker thread of this script answering the same requests with
 * bodies of the same size (the server's own responses, recorded first; a POST body is read and
 * parsed). The load generator is node:http with one keep-alive Agent (bench/support/load.ts).
 * Two floors are measured beside them, each on a worker thread too: the HTTP platform this service
 * is built on (Effect 3: @effect/platform-node's server and router) answering the same bodies with
 * no application code, and the same server written with Effect 4 (issue 34: a figure for a future
 * decision, not a migration), which bench/effect4/ installs apart from the workspace (`npm ci
 * --prefix bench/effect4`, run here when its node_modules is missing or stale; if that fails, its
 * rows are recorded as skipped).
 *
 *   npm run bench:http
 *   BENCH_SECONDS=2 BENCH_RUNS=5000 npm run bench:http      # a quick run
 *
 * Settings: BENCH_RUNS, BENCH_SECONDS, BENCH_WARMUP_SECONDS (1), BENCH_CONNECTIONS,
 * BENCH_SKIP_BUILD=1 (use the existing dist). Prints requests/s and p50/p99 latency per case and
 * the ratios bare/ours, bare/floor and Effect 3's floor / Effect 4's. Listens on 127.0.0.1 only,
 * stops by itself (a watchdog ends it if a case hangs), and removes its data directory. Never part
 * of `npm test`.
 */
import { type Ids, RunStore } from "@agent-runs/core"
import { SqliteStorage } from "@agent-runs/storage-sqlite"
import { Effect, Redacted } from "effect"
import { spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { readFileSync } from "node:fs"
import { cpus } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { REPO_ROOT, type Reply, spawnServer, tempDataDir } from "../../examples/server/test/process.js"
import { header, measure, type Measurement, number, rate, repeat, row, runBench, settings, startBare, type Target } from "../support/load.js"
import { higherIsBetter, record } from "../support/results.js"
import { storedRun } from "../support/runs.js"
import { buildUnlessSkipped, expectStatus, markProfile, send1, serverNodeOptions, teamPrincipal } from "../support/server.js"

const N = Number(process.env.BENCH_RUNS ?? 100_000)
const { connections: CONNECTIONS, seconds: SECONDS, warmupSeconds: WARMUP } = settings
const BATCH = 1_000
/** How long installing Effect 4 into bench/effect4 may take. */
const EFFECT4_INSTALL_MS = 180_000
/** The whole script's time limit: building, installing Effect 4, seeding and eight cases with generous slack. */
const WATCHDOG_MS = 300_000 + EFFECT4_INSTALL_MS + 8 * (SECONDS + WARMUP) * 2_000

// ---------------------------------------------------------------------------------------------
// The bare node:http baseline, on its own thread (as the server has its own process)

const BARE_SERVER = `
const { parentPort, workerData } = require("node:worker_threads")
const http = require("node:http")
const server = http.createServer((req, res) => {
  const chunks = []
  req.on("data", (chunk) => chunks.push(chunk))
  req.on("end", () => {
    let body = workerData.get
    if (req.method === "POST") {
      JSON.parse(Buffer.concat(chunks).toString("utf8"))
      body = workerData.post
    }
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
    res.end(body)
  })
})
server.keepAliveTimeout = 60000
server.listen(0, "127.0.0.1", () => parentPort.postMessage(server.address().port))
`

/**
 * The stack's own floor, also on its own thread: the HTTP server our service is built on
 * (@effect/platform-node's, with @effect/platform's router, as the service uses them) answering the
 * same bodies with no application code at all: no authentication, storage, validation or encoding.
 * What it costs over bare node:http is a cost no request of ours can go below.
 */
const EFFECT_FLOOR_SERVER = `
const { parentPort, workerData } = require("node:worker_threads")
const http = require("node:http")
const { HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } = require("@effect/platform")
const { NodeHttpServer } = require("@effect/platform-node")
const { Effect, Layer } = require("effect")
const json = (body) => HttpServerResponse.text(body, { contentType: "application/json" })
const router = HttpRouter.empty.pipe(
  HttpRouter.get("/api/v1/agent/runs", Effect.succeed(json(workerData.get))),
  HttpRouter.post(
    "/api/v1/agent/runs",
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => request.json).pipe(
      Effect.as(json(workerData.post)),
      Effect.orElseSucceed(() => HttpServerResponse.empty({ status: 400 }))
    )
  )
)
const server = http.createServer()
server.keepAliveTimeout = 60000
server.once("listening", () => parentPort.postMessage(server.address().port))
Effect.runFork(Layer.launch(HttpServer.serve(router).pipe(
  Layer.provide(NodeHttpServer.layer(() => server, { port: 0, host: "127.0.0.1" }))
)))
`

/**
 * Effect 4's floor (issue 34): the same server written with Effect 4 (`effect/http`'s router,
 * @effect/platform-node 4's NodeHttpServer). Its script lives in bench/effect4/, beside the
 * node_modules it resolves `effect` from (a package of its own, not a workspace: the workspace
 * stays on Effect 3), and runs as a file, not evaluated source.
 */
const EFFECT4_DIR = fileURLToPath(new URL("../effect4/", import.meta.url))
const EFFECT4_SERVER = new URL("../effect4/server.mjs", import.meta.url)
const EFFECT4_PACKAGES = ["effect", "@effect/platform-node"] as const

const versionIn = (dir: string, name: string): string | undefined => {
  try {
    return (JSON.parse(readFileSync(join(dir, "node_modules", name, "package.json"), "utf8")) as { version: string }).version
  } catch {
    return undefined
  }
}

/** Effect 3's floor's versions (the workspace's) and Effect 4's (bench/effect4's pins), for the report. */
const versions = (dir: string, pinned?: Readonly<Record<string, string>>) =>
  EFFECT4_PACKAGES.map((name) => `${name} ${pinned?.[name] ?? versionIn(dir, name) ?? "?"}`).join(", ")

/**
 * bench/effect4's node_modules with exactly the versions its package.json pins: installed with its
 * lockfile (`npm ci`, one line printed) when missing or stale. Its versions, or why it is skipped.
 */
const installEffect4 = Effect.sync((): { readonly versions: string } | { readonly skipped: string } => {
  const pinned = (JSON.parse(readFileSync(join(EFFECT4_DIR, "package.json"), "utf8")) as {
    dependencies: Record<string, string>
  }).dependencies
  const installed = () => EFFECT4_PACKAGES.every((name) => versionIn(EFFECT4_DIR, name) === pinned[name])
  if (installed()) return { versions: versions(EFFECT4_DIR, pinned) }
  const command = ["ci", "--prefix", "bench/effect4", "--no-audit", "--no-fund"]
  const started = performance.now()
  const install = spawnSync("npm", command, { cwd: REPO_ROOT, encoding: "utf8", timeout: EFFECT4_INSTALL_MS })
  const seconds = ((performance.now() - started) / 1000).toFixed(1)
  if (install.status === 0 && installed()) {
    console.log(`Effect 4 floor: installed ${versions(EFFECT4_DIR, pinned)} into bench/effect4 (npm ${command.join(" ")}, ${seconds} s)`)
    return { versions: versions(EFFECT4_DIR, pinned) }
  }
  const why = install.error?.message ??
    (`${install.stderr ?? ""}`.split("\n").filter((line) => line.startsWith("npm error")).slice(0, 3).join("; ").slice(0, 300) ||
      `exit ${install.status ?? install.signal}`)
  console.log(`Effect 4 floor: npm ${command.join(" ")} failed after ${seconds} s (${why}); its rows are recorded as skipped`)
  return { skipped: `npm ${command.join(" ")} failed: ${why}` }
})

// ---------------------------------------------------------------------------------------------
// Set-up: the server, its team and member, and the seeded runs

/** The body as the server sent it: compact JSON, so its length is the server's content-length. */
const bodyText = (reply: Reply) => {
  const text = JSON.stringify(reply.body)
  const length = Number(reply.headers.get("content-length"))
  if (length !== Buffer.byteLength(text)) console.log(`note: re-encoded body is ${Buffer.byteLength(text)} bytes, the server sent ${length}`)
  return text
}

const STATES = ["SUCCEEDED", "FAILED", "CANCELLED", "SUCCEEDED", "ERROR"] as const

/** The i-th seeded run: finished, created one second after the previous one. */
const seededRun = (i: number, base: number, team: Ids.TeamUid, creator: Ids.PrincipalUid): RunStore.StoredRun =>
  storedRun(base + i * 1_000, team, creator, {
    title: `Benchmark run ${i}`,
    prompt: `Fix issue number ${i} in the repository and open a pull request`,
    state: STATES[i % STATES.length]!,
    agent_config: { model_id: `model-${i % 3}` }
  })

/** Writes `N` finished runs of `team` in batches, straight through the storage layer. */
const seed = (filename: string, secretKey: Uint8Array, team: Ids.TeamUid, creator: Ids.PrincipalUid) =>
  Effect.gen(function*() {
    const store = yield* RunStore.RunStore
    const base = Date.now() - N * 1_000 - 3_600_000
    for (let from = 0; from < N; from += BATCH) {
      const runs = []
      for (let i = from; i < Math.min(N, from + BATCH); i++) runs.push({ run: seededRun(i, base, team, creator), events: [] })
      yield* store.create(runs)
    }
  }).pipe(Effect.provide(SqliteStorage.layer({ filename, secretKey: Redacted.make(secretKey) })))

// ---------------------------------------------------------------------------------------------
// Report

const program = Effect.gen(function*() {
  console.log(
    `HTTP benchmark: ${number(N)} seeded runs, ${CONNECTIONS} keep-alive connections, ${SECONDS} s per case ` +
      `(+${WARMUP} s warm-up), node ${process.version}, ${cpus().length} CPUs`
  )
  yield* buildUnlessSkipped
  const effect4 = yield* installEffect4
  const dataDir = yield* tempDataDir
  const secretKey = new Uint8Array(randomBytes(32))
  const adminToken = `ar_${randomBytes(32).toString("base64url")}`
  const server = yield* spawnServer({
    dataDir,
    // The per-team run quota off: the benchmark measures throughput, not the quota. Concurrency 0:
    // created runs stay QUEUED, so agents running beside the server do not share its CPUs (the
    // dispatch bench measures execution).
    env: {
      AGENT_RUNS_CONCURRENCY: "0",
      AGENT_RUNS_ADMIN_TOKEN: adminToken,
      AGENT_RUNS_SECRET_KEY: Buffer.from(secretKey).toString("hex"),
      AGENT_RUNS_RUNS_PER_MINUTE: "100000000",
      ...serverNodeOptions
    }
  })
  console.log(`server ${server.url} (pid ${server.pid}, SQLite in ${dataDir})`)

  const { principal, team, token } = yield* teamPrincipal(server, adminToken, "member")

  const seedStart = performance.now()
  yield* seed(join(dataDir, "agent-runs.db"), secretKey, team, principal)
  const seedSeconds = (performance.now() - seedStart) / 1000
  console.log(`seeded ${number(N)} runs in ${seedSeconds.toFixed(1)} s (${number(N / seedSeconds)} runs/s)`)
  // Seeding blocked this event loop for longer than the server's keep-alive timeout: let fetch see
  // the idle connections the server closed meanwhile before it reuses one.
  yield* Effect.sleep("200 millis")

  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
  const postBody = JSON.stringify({ prompt: "Fix the flaky test in the parser\nIt fails one run in ten", metadata: { bench: "http" } })
  const list: Target = { port: server.port, method: "GET", path: "/api/v1/agent/runs?limit=20", headers }
  const create: Target = { port: server.port, method: "POST", path: "/api/v1/agent/runs", headers, body: postBody }

  // Record one response of each, for the baseline's bodies, and check them.
  const listed = yield* send1(server, "GET", list.path, token).pipe(
    Effect.tapDefect(() => Effect.sync(() => console.error(`server output:\n${server.stdout()}\n${server.stderr()}`)))
  )
  const page = yield* expectStatus<{ runs: Array<unknown>; page_info: { has_next_page: boolean } }>("list runs", listed, 200)
  if (page.runs.length !== 20 || page.page_info.has_next_page !== true) {
    return yield* Effect.dieMessage(`expected a full page of the seeded runs, got ${JSON.stringify(page).slice(0, 300)}`)
  }
  const created = yield* send1(server, "POST", create.path, token, JSON.parse(postBody))
  yield* expectStatus("create run", created, 200)
  const bodies = { get: bodyText(listed), post: bodyText(created) }
  const bare = yield* startBare(BARE_SERVER, bodies)
  const floor = yield* startBare(EFFECT_FLOOR_SERVER, bodies)
  const floor4 = "skipped" in effect4 ? effect4 : yield* startBare(EFFECT4_SERVER, bodies).pipe(
    Effect.catchAllDefect((defect) => {
      const why = `its worker did not start: ${String(defect).slice(0, 300)}`
      console.log(`Effect 4 floor: ${why}; its rows are recorded as skipped`)
      return Effect.succeed({ skipped: why })
    })
  )
  console.log(
    `bodies: GET ${number(Buffer.byteLength(bodies.get))} bytes, POST ${number(Buffer.byteLength(bodies.post))} bytes ` +
      `(${bodies.post})`
  )
  const effect3Versions = versions(REPO_ROOT)
  const effect4Versions = "versions" in effect4 ? effect4.versions : "not installed"
  console.log(
    `servers: bare = node:http; eff3 = Effect 3's floor (${effect3Versions}); eff4 = Effect 4's floor (${effect4Versions}` +
      `${"skipped" in floor4 ? ": skipped" : ""}); ours = the service\n`
  )

  console.log(header())
  const results: Array<
    {
      readonly label: string
      readonly ours: Measurement
      readonly bare: Measurement
      readonly floor: Measurement
      readonly floor4: Measurement | undefined
    }
  > = []
  for (const [label, target] of [["GET /api/v1/agent/runs?limit=20", list], ["POST /api/v1/agent/runs", create]] as const) {
    const theirs = yield* Effect.promise(() => measure(repeat({ ...target, port: bare.port })))
    console.log(row(label, "bare", theirs))
    const floored = yield* Effect.promise(() => measure(repeat({ ...target, port: floor.port })))
    console.log(row("", "eff3", floored))
    let floored4: Measurement | undefined
    if ("port" in floor4) {
      const port = floor4.port
      floored4 = yield* Effect.promise(() => measure(repeat({ ...target, port })))
      console.log(row("", "eff4", floored4))
    } else {
      console.log(`${"".padEnd(34)} eff4  skipped`)
    }
    yield* markProfile(server)
    const ours = yield* Effect.promise(() => measure(repeat(target)))
    yield* markProfile(server)
    console.log(row("", "ours", ours))
    results.push({ label, ours, bare: theirs, floor: floored, floor4: floored4 })
  }
  console.log(
    "\nratios bare/ours (requests/s; p50 and p99 latency ours/bare), bare/floor (the stack's own cost) " +
      "and Effect 3's floor / Effect 4's (requests/s):"
  )
  for (const { bare: b, floor: f, floor4: f4, label, ours } of results) {
    console.log(
      `  ${label.padEnd(32)} throughput ${(rate(b) / rate(ours)).toFixed(1)}×, p50 ${(ours.p50 / b.p50).toFixed(1)}×, p99 ${
        (ours.p99 / b.p99).toFixed(1)
      }×; floor ${(rate(b) / rate(f)).toFixed(1)}× (Effect 3), ${
        f4 === undefined ? "skipped" : `${(rate(b) / rate(f4)).toFixed(1)}×`
      } (Effect 4); Effect 3 / Effect 4 ${f4 === undefined ? "skipped" : `${(rate(f) / rate(f4)).toFixed(2)}×`}`
    )
  }
  const goals = [
    { name: "GET /agent/runs?limit=20 of 100,000 (SQLite)", min: 3_000, maxRatio: 5, text: "≥ 3,000 req/s (≤ 5×)" },
    { name: "POST /agent/runs (SQLite)", min: 3_000, maxRatio: 6, text: "≥ 3,000 req/s (≤ 6×)" }
  ]
  results.forEach(({ bare: b, floor: f, floor4: f4, label, ours }, i) => {
    const goal = goals[i]!
    record(higherIsBetter(
      goal.name.replace("100,000", number(N)),
      rate(ours),
      rate(b),
      "req/s",
      goal,
      `baseline: bare node:http; ours p50 ${ours.p50.toFixed(1)} ms, p99 ${ours.p99.toFixed(1)} ms (${CONNECTIONS} connections)`
    ))
    record(higherIsBetter(
      `${label.replace("/api/v1", "")}: the Effect HTTP platform alone (no application code)`,
      rate(f),
      rate(b),
      "req/s",
      { text: "recorded: the floor under the goals above" },
      `baseline: bare node:http; @effect/platform-node's server and router answering the same body, p50 ${
        f.p50.toFixed(1)
      } ms (${CONNECTIONS} connections)`
    ))
    const name4 = `${label.replace("/api/v1", "")}: the Effect 4 HTTP platform alone (no application code)`
    const goal4 = "recorded: Effect 4's floor beside Effect 3's (the baseline), for a future decision, not a migration"
    record(
      f4 === undefined
        ? higherIsBetter(
          name4,
          0,
          rate(f),
          "req/s",
          { text: `skipped (Effect 4 not available); ${goal4}` },
          `skipped: ${"skipped" in floor4 ? floor4.skipped : "not measured"}`
        )
        : higherIsBetter(
          name4,
          rate(f4),
          rate(f),
          "req/s",
          { text: goal4 },
          `baseline: Effect 3's floor (${effect3Versions}), p50 ${f.p50.toFixed(1)} ms, p99 ${f.p99.toFixed(1)} ms; ` +
            `Effect 4 (${effect4Versions}, effect/http's router and NodeHttpServer, bench/effect4/server.mjs), p50 ${
              f4.p50.toFixed(1)
            } ms, p99 ${f4.p99.toFixed(1)} ms; bare node:http ${number(rate(b))} req/s (${CONNECTIONS} connections)`
        )
    )
  })
  const failures = results.flatMap(({ bare: b, floor: f, floor4: f4, label, ours }) => {
    const measured: Array<[string, Measurement]> = [["ours", ours], ["bare", b], ["eff3", f]]
    if (f4 !== undefined) measured.push(["eff4", f4])
    return measured.flatMap(([server, m]) =>
      [...m.statuses].filter(([status]) => status !== 200).map(([status, count]) => `${label} (${server}): ${count}×${status}`)
    )
  })
  if (failures.length > 0) console.log(`\nnon-200 responses: ${failures.join(", ")}`)
})

runBench("bench:http", WATCHDOG_MS, Effect.scoped(program))
