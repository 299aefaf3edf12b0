/**
 * HTTP benchmark (issues 4 and 34). For each database (BENCH_ADAPTERS, default
 * `sqlite,postgresql`), builds and starts the bundled server as a process, API-only
 * (`AGENT_RUNS_CONCURRENCY=0`: created runs stay QUEUED, no engine runs them, so no agent shares the
 * CPUs), on a temporary data directory: SQLite in it, or a fresh PostgreSQL database on
 * 127.0.0.1:5432 (dropped at the end). Seeds one team with N finished runs (default 100,000;
 * written straight through the storage layer, SqliteStorage or PgStorage's RunStore, on the same
 * database), then drives it with C concurrent keep-alive loopback connections (default 50) for S
 * seconds per case (default 10, after a 1 s warm-up): `GET /api/v1/agent/runs?limit=20`, `GET
 * /api/v1/agent/runs/{id}` (a seeded run) and `POST /api/v1/agent/runs`.
 *
 * The same routes are answered, with the server's own bodies (recorded first) and no application
 * code, by three servers on worker threads of this script (bench/support/floor.ts), each measured
 * just before ours in every case: a bare `node:http` server; the Effect floor, the HTTP platform
 * this service is built on (Effect 3: @effect/platform-node's server and @effect/platform's
 * router); and the same floor written with Effect 4 (issue 34: a figure for a future decision, not
 * a migration), which bench/effect4/ installs apart from the workspace (`npm ci --prefix
 * bench/effect4`, run here when its node_modules is missing or stale; if that fails, its rows are
 * recorded as skipped). A POST's JSON body is read and parsed by each.
 *
 * Rows (bench/support/results.ts): per case and database, ours against the Effect floor, the goal a
 * share of the floor's requests/s (issue 34); the bare server's figure in the notes. Per case and
 * database also Effect 4's floor against Effect 3's (recorded).
 *
 *   npm run bench:http
 *   BENCH_SECONDS=2 BENCH_RUNS=2000 npm run bench:http      # a quick run
 *   BENCH_ADAPTERS=sqlite npm run bench:http
 *
 * Settings: BENCH_ADAPTERS, BENCH_RUNS, BENCH_SECONDS, BENCH_WARMUP_SECONDS (1), BENCH_CONNECTIONS,
 * BENCH_SKIP_BUILD=1 (use the existing dist), BENCH_SERVER_NODE_OPTIONS. Prints requests/s and
 * p50/p99 latency per case and server, and ours as a share of each floor. Listens on 127.0.0.1
 * only, stops by itself (a watchdog ends it if a case hangs, and drops the database), and removes
 * its data directories. Never part of `npm test`.
 */
import { type Ids, RunStore } from "@agent-runs/core"
import { PgStorage } from "@agent-runs/storage-pg"
import { SqliteStorage } from "@agent-runs/storage-sqlite"
import { SqlClient } from "@effect/sql"
import { Effect, Redacted } from "effect"
import { spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { readFileSync } from "node:fs"
import { cpus, loadavg } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { REPO_ROOT, type Reply, spawnServer, tempDataDir } from "../../examples/server/test/process.js"
import { type FloorRoute, shareText, startBareRoutes, startEffectFloor, startFloorFile } from "../support/floor.js"
import { header, measure, type Measurement, number, rate, repeat, row, runBench, settings, type Target } from "../support/load.js"
import { higherIsBetter, record } from "../support/results.js"
import { storedRun } from "../support/runs.js"
import {
  benchDatabase,
  buildUnlessSkipped,
  dropDatabasesNow,
  expectStatus,
  markProfile,
  send1,
  serverNodeOptions,
  teamPrincipal
} from "../support/server.js"

const N = Number(process.env.BENCH_RUNS ?? 100_000)
const { connections: CONNECTIONS, seconds: SECONDS, warmupSeconds: WARMUP } = settings
const BATCH = 1_000

type Adapter = "sqlite" | "postgresql"
const DATABASE: Record<Adapter, "SQLite" | "PostgreSQL"> = { sqlite: "SQLite", postgresql: "PostgreSQL" }
const ADAPTERS = (process.env.BENCH_ADAPTERS ?? "sqlite,postgresql").split(",").map((s) => s.trim()).filter((s) => s !== "")
for (const adapter of ADAPTERS) {
  if (!(adapter in DATABASE)) throw new Error(`BENCH_ADAPTERS: unknown adapter ${adapter} (sqlite, postgresql)`)
}

/** The cases, in the order measured (the POST last: it adds runs), and their goals per database. */
const CASES = [
  {
    key: "list",
    label: "GET /api/v1/agent/runs?limit=20",
    name: `GET /agent/runs?limit=20 of ${number(N)}`,
    share: { sqlite: 0.25, postgresql: 0.15 }
  },
  { key: "get", label: "GET /api/v1/agent/runs/{id}", name: "GET /agent/runs/{id}", share: { sqlite: 0.4, postgresql: 0.25 } },
  {
    key: "create",
    label: "POST /api/v1/agent/runs",
    name: "POST /agent/runs, API-only replica",
    share: { sqlite: 0.2, postgresql: 0.12 }
  }
] as const

/** How long installing Effect 4 into bench/effect4 may take. */
const EFFECT4_INSTALL_MS = 180_000
/**
 * The whole script's time limit: building, installing Effect 4, then per database starting the
 * server, seeding (generously 2 ms a run) and 3 cases × 4 servers with generous slack.
 */
const WATCHDOG_MS = 300_000 + EFFECT4_INSTALL_MS + ADAPTERS.length * (60_000 + 2 * N + CASES.length * 4 * (SECONDS + WARMUP) * 2_000)

/** The machine's 1-minute load average: other work on the same CPUs shows up in it. */
const load = () => `load ${loadavg()[0]!.toFixed(1)}`

// ---------------------------------------------------------------------------------------------
// The floors (bench/support/floor.ts); Effect 4's lives in bench/effect4/

/**
 * Effect 4's floor (issue 34): the Effect 3 floor written with Effect 4 (`effect/http`'s router,
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

/**
 * Writes `N` finished runs of `team` in batches, straight through the storage layer's RunStore;
 * on PostgreSQL then `ANALYZE` (fresh planner statistics, as autovacuum would gather on a live
 * server).
 */
const seedRuns = (team: Ids.TeamUid, creator: Ids.PrincipalUid) =>
  Effect.gen(function*() {
    const store = yield* RunStore.RunStore
    const base = Date.now() - N * 1_000 - 3_600_000
    for (let from = 0; from < N; from += BATCH) {
      const runs = []
      for (let i = from; i < Math.min(N, from + BATCH); i++) runs.push({ run: seededRun(i, base, team, creator), events: [] })
      yield* store.create(runs)
    }
    const sql = yield* SqlClient.SqlClient
    yield* sql.onDialectOrElse({ pg: () => sql`ANALYZE`, orElse: () => Effect.void })
  })

/** The seeding on the server's database: its SQLite file, or its PostgreSQL database. */
const seed = (
  database: { readonly sqlite: string } | { readonly url: string },
  secretKey: Uint8Array,
  team: Ids.TeamUid,
  creator: Ids.PrincipalUid
) =>
  "sqlite" in database
    ? seedRuns(team, creator).pipe(Effect.provide(SqliteStorage.layer({ filename: database.sqlite, secretKey: Redacted.make(secretKey) })))
    : seedRuns(team, creator).pipe(
      Effect.provide(PgStorage.layer({ url: Redacted.make(database.url), secretKey: Redacted.make(secretKey), maxConnections: 2 }))
    )

// ---------------------------------------------------------------------------------------------
// One database: its server, seeded, and every case against the floors

type Effect4 = { readonly versions: string } | { readonly skipped: string }

interface CaseResult {
  readonly case: (typeof CASES)[number]
  readonly ours: Measurement
  readonly bare: Measurement
  readonly floor: Measurement
  readonly floor4: Measurement | undefined
}

/** What one database's part recorded, for the summary. */
interface DatabaseResult {
  readonly adapter: Adapter
  readonly results: ReadonlyArray<CaseResult>
  readonly floor4: { readonly port: number } | { readonly skipped: string }
}

const onDatabase = (adapter: Adapter, effect4: Effect4) =>
  Effect.gen(function*() {
    const db = DATABASE[adapter]
    const dataDir = yield* tempDataDir
    const pg = adapter === "postgresql" ? yield* benchDatabase : undefined
    const secretKey = new Uint8Array(randomBytes(32))
    const adminToken = `ar_${randomBytes(32).toString("base64url")}`
    const server = yield* spawnServer({
      dataDir,
      // The per-team run quota off: the benchmark measures throughput, not the quota. Concurrency 0:
      // an API-only replica, where created runs stay QUEUED (no engine claims them, and no agent
      // shares the CPUs; the dispatch bench measures execution).
      env: {
        AGENT_RUNS_CONCURRENCY: "0",
        AGENT_RUNS_ADMIN_TOKEN: adminToken,
        AGENT_RUNS_SECRET_KEY: Buffer.from(secretKey).toString("hex"),
        AGENT_RUNS_RUNS_PER_MINUTE: "100000000",
        ...(pg === undefined ? {} : { AGENT_RUNS_DATABASE_URL: pg.url }),
        ...serverNodeOptions
      }
    })
    console.log(
      `\n== ${db}: server ${server.url} (pid ${server.pid}, API-only: AGENT_RUNS_CONCURRENCY=0; ${
        pg === undefined ? `SQLite in ${dataDir}` : `PostgreSQL database ${pg.name}`
      })`
    )
    const guarded = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      effect.pipe(
        Effect.tapDefect(() =>
          Effect.sync(() => console.error(`server output:\n${server.stdout().slice(-5_000)}\n${server.stderr().slice(-5_000)}`))
        )
      )

    const { principal, team, token } = yield* guarded(teamPrincipal(server, adminToken, "member"))

    const seedStart = performance.now()
    yield* seed(pg === undefined ? { sqlite: join(dataDir, "agent-runs.db") } : { url: pg.url }, secretKey, team, principal)
    const seedSeconds = (performance.now() - seedStart) / 1000
    console.log(`seeded ${number(N)} runs in ${seedSeconds.toFixed(1)} s (${number(N / seedSeconds)} runs/s)`)
    // Seeding blocked this event loop for longer than the server's keep-alive timeout: let fetch see
    // the idle connections the server closed meanwhile before it reuses one.
    yield* Effect.sleep("200 millis")

    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
    const postBody = JSON.stringify({ prompt: "Fix the flaky test in the parser\nIt fails one run in ten", metadata: { bench: "http" } })

    // Record one response of each, for the floors' bodies, and check them.
    const listPath = "/api/v1/agent/runs?limit=20"
    const listed = yield* guarded(send1(server, "GET", listPath, token))
    const page = yield* guarded(expectStatus<{ runs: Array<{ run_id: string }>; page_info: { has_next_page: boolean } }>(
      "list runs",
      listed,
      200
    ))
    if (page.runs.length !== 20 || page.page_info.has_next_page !== true) {
      return yield* Effect.dieMessage(`expected a full page of the seeded runs, got ${JSON.stringify(page).slice(0, 300)}`)
    }
    // The newest seeded run (the POST check below comes after it).
    const getPath = `/api/v1/agent/runs/${page.runs[0]!.run_id}`
    const got = yield* send1(server, "GET", getPath, token)
    yield* guarded(expectStatus("get run", got, 200))
    const created = yield* send1(server, "POST", "/api/v1/agent/runs", token, JSON.parse(postBody))
    yield* guarded(expectStatus("create run", created, 200))

    const routes: Record<(typeof CASES)[number]["key"], FloorRoute> = {
      list: { method: "GET", pattern: "/api/v1/agent/runs", path: "/api/v1/agent/runs", status: 200, body: bodyText(listed) },
      get: { method: "GET", pattern: "/api/v1/agent/runs/:run_id", path: getPath, status: 200, body: bodyText(got) },
      create: { method: "POST", pattern: "/api/v1/agent/runs", path: "/api/v1/agent/runs", status: 200, body: bodyText(created) }
    }
    const targets: Record<(typeof CASES)[number]["key"], Target> = {
      list: { port: server.port, method: "GET", path: listPath, headers },
      get: { port: server.port, method: "GET", path: getPath, headers },
      create: { port: server.port, method: "POST", path: "/api/v1/agent/runs", headers, body: postBody }
    }
    const all = Object.values(routes)
    const bare = yield* startBareRoutes(all)
    const floor = yield* startEffectFloor(all)
    const floor4 = "skipped" in effect4 ? effect4 : yield* startFloorFile(EFFECT4_SERVER, all).pipe(
      Effect.catchAllDefect((defect) => {
        const why = `its worker did not start: ${String(defect).slice(0, 300)}`
        console.log(`Effect 4 floor: ${why}; its rows are recorded as skipped`)
        return Effect.succeed({ skipped: why })
      })
    )
    console.log(
      `bodies: ${
        CASES.map((c) => `${c.label.replace("/api/v1", "")} ${number(Buffer.byteLength(routes[c.key].body))} bytes`).join(", ")
      } (POST: ${routes.create.body})\n`
    )

    console.log(header())
    const results: Array<CaseResult> = []
    for (const c of CASES) {
      const target = targets[c.key]
      const theirs = yield* Effect.promise(() => measure(repeat({ ...target, port: bare.port })))
      console.log(row(c.label, "bare", theirs))
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
      console.log(`${row("", "ours", ours)}   ${shareText(rate(ours), rate(floored))} (eff3), ${load()}`)
      results.push({ case: c, ours, bare: theirs, floor: floored, floor4: floored4 })
    }
    return { adapter, results, floor4: "port" in floor4 ? { port: floor4.port } : floor4 } satisfies DatabaseResult
  })

// ---------------------------------------------------------------------------------------------
// Report

const program = Effect.gen(function*() {
  console.log(
    `HTTP benchmark: ${ADAPTERS.map((a) => DATABASE[a as Adapter]).join(" and ")}, ${number(N)} seeded runs, ` +
      `${CONNECTIONS} keep-alive connections, ${SECONDS} s per case (+${WARMUP} s warm-up), node ${process.version}, ` +
      `${cpus().length} CPUs, ${load()}`
  )
  yield* buildUnlessSkipped
  const effect4 = yield* installEffect4
  const effect3Versions = versions(REPO_ROOT)
  const effect4Versions = "versions" in effect4 ? effect4.versions : "not installed"
  console.log(
    `servers: bare = node:http; eff3 = the Effect floor, Effect 3's (${effect3Versions}); eff4 = Effect 4's floor ` +
      `(${effect4Versions}${"skipped" in effect4 ? ": skipped" : ""}); ours = the service (API-only)`
  )

  const databases: Array<DatabaseResult> = []
  for (const adapter of ADAPTERS as ReadonlyArray<Adapter>) {
    // Each database in a scope of its own: its server, floors and database are gone before the next.
    databases.push(yield* Effect.scoped(onDatabase(adapter, effect4)))
  }

  console.log(
    "\nours as a share of the Effect floor's requests/s (the goal) and of bare node:http's; the floor's share of bare's; " +
      "Effect 3's floor / Effect 4's (requests/s):"
  )
  for (const { adapter, results } of databases) {
    for (const { bare: b, case: c, floor: f, floor4: f4, ours } of results) {
      console.log(
        `  ${`${c.label} (${DATABASE[adapter]})`.padEnd(46)} ${shareText(rate(ours), rate(f))} (goal ≥ ${c.share[adapter] * 100}%), ` +
          `${((100 * rate(ours)) / rate(b)).toFixed(2)}% of bare; floor ${((100 * rate(f)) / rate(b)).toFixed(0)}% of bare; ` +
          `Effect 3 / Effect 4 ${f4 === undefined ? "skipped" : `${(rate(f) / rate(f4)).toFixed(2)}×`}`
      )
    }
  }

  for (const { adapter, floor4, results } of databases) {
    const db = DATABASE[adapter]
    for (const { bare: b, case: c, floor: f, floor4: f4, ours } of results) {
      const minShare = c.share[adapter]
      record(higherIsBetter(
        `${c.name} (${db}) vs the Effect floor`,
        rate(ours),
        rate(f),
        "req/s",
        { minShare, text: `≥ ${minShare * 100}% of the floor` },
        `ours ${shareText(rate(ours), rate(f))}, p50 ${ours.p50.toFixed(1)} ms, p99 ${ours.p99.toFixed(1)} ms, ` +
          `API-only server (AGENT_RUNS_CONCURRENCY=0), ${number(N)} seeded runs; baseline: the Effect floor ` +
          `(Effect 3: @effect/platform-node's server and @effect/platform's router answering the same body, no application ` +
          `code; ${effect3Versions}), p50 ${f.p50.toFixed(1)} ms, p99 ${f.p99.toFixed(1)} ms; bare node:http ` +
          `${number(rate(b))} req/s (the floor ${((100 * rate(f)) / rate(b)).toFixed(0)}% of it, ours ${
            ((100 * rate(ours)) / rate(b)).toFixed(2)
          }%); ${CONNECTIONS} connections`
      ))
      const name4 = `${c.label.replace("/api/v1", "")} (${db} run): the Effect 4 HTTP platform alone (no application code)`
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
    }
  }
  const failures = databases.flatMap(({ adapter, results }) =>
    results.flatMap(({ bare: b, case: c, floor: f, floor4: f4, ours }) => {
      const measured: Array<[string, Measurement]> = [["ours", ours], ["bare", b], ["eff3", f]]
      if (f4 !== undefined) measured.push(["eff4", f4])
      return measured.flatMap(([server, m]) =>
        [...m.statuses].filter(([status]) => status !== 200).map(([status, count]) =>
          `${c.label} (${DATABASE[adapter]}, ${server}): ${count}×${status}`
        )
      )
    })
  )
  if (failures.length > 0) console.log(`\nnon-200 responses: ${failures.join(", ")}`)
})

runBench("bench:http", WATCHDOG_MS, program, [dropDatabasesNow])
