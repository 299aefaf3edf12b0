/**
 * Webhook ingress benchmark (issue 6): accepted deliveries per second through `POST
 * /webhooks/w/{uid}` with Standard Webhooks verification. Builds and starts the bundled server as a
 * process (concurrency 0, so runs stay QUEUED; `AGENT_RUNS_WEBHOOK_DELIVERIES_PER_MINUTE` raised to
 * 10,000,000 so the per-sender rate limit is out of the way), creates a team, its admin, and two
 * `signature`/`standard_webhooks` webhooks, one of them with an automation subscribed, then drives
 * each with C concurrent keep-alive loopback connections (default 50) for S seconds (default 10,
 * after a warm-up of at least 1 s). Every delivery has its own `webhook-id` (its identity, so none
 * is a duplicate) and a ~700-byte JSON body of its own, signed with `Signatures.sign` before its
 * phase starts (signing costs ~0.15 ms of this process's time, which would otherwise be taken from
 * the load generator): the warm-up's rate sizes the measured phase's pool (four times what it would
 * need in S seconds, at least 1,000 a second; running out is reported as a problem).
 *
 * Cases, per database: the baseline, the Effect floor (bench/support/floor.ts: the HTTP platform
 * the service is built on, Effect 3's @effect/platform-node server and @effect/platform router, on
 * a worker thread of this script, with no application code) answering `POST /webhooks/w/:uid` by
 * reading the same signed requests' JSON and answering 202 with the bytes of one of our 202s; beside
 * it, in the notes, a bare `node:http` server that does the same (202 `{"delivery_id":"…"}`, a new
 * id each; it verifies nothing); then ours, without and with the automation (each accepted delivery
 * also creates a QUEUED run and keeps its body as a blob). First SQLite, then PostgreSQL (a fresh
 * database on 127.0.0.1:5432; skipped with BENCH_PG=0 or when it cannot be reached), each
 * database's floors measured just before its cases. The rows: ours as a share of the Effect floor's
 * deliveries/s (issue 34's goals).
 *
 * After each of our cases the webhook's delivery log is read back through the API (100 per page):
 * the ACCEPTED entries must be exactly the 202s (the set-up's check delivery, the warm-up's and the
 * measured ones), none DUPLICATE or rejected, and with the automation each must have started one
 * run. Any non-202 and any mismatch is printed, and the script exits 1 at the end.
 *
 *   npm run bench:ingress
 *   BENCH_SECONDS=2 BENCH_PG=0 npm run bench:ingress      # a quick run
 *
 * Settings: BENCH_SECONDS, BENCH_WARMUP_SECONDS, BENCH_CONNECTIONS (bench/support/load.ts),
 * BENCH_PG (1/0), BENCH_SKIP_BUILD=1 (use the existing dist), BENCH_SERVER_NODE_OPTIONS (the
 * servers' NODE_OPTIONS, e.g. `--require <a profiler preload>`). Prints req/s, p50/p99 latency, the
 * server process's CPU time per delivery (/proc), the machine's load average (other work on the
 * same CPUs distorts every figure) and ours as a share of the floor's and the bare server's rate.
 * Listens on 127.0.0.1 only, stops by itself (a watchdog ends it if a case hangs, and drops the
 * database), and removes its data directories.
 * Never part of `npm test`.
 */
import { Signatures } from "@agent-runs/core"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import { readFileSync } from "node:fs"
import { cpus, loadavg } from "node:os"
import { call, type ServerProcess, tempDataDir } from "../../examples/server/test/process.js"
import { shareText, startEffectFloor } from "../support/floor.js"
import {
  cycle,
  drive,
  each,
  header,
  type Measurement,
  number,
  rate,
  row,
  runBench,
  settings,
  startBare,
  type Target
} from "../support/load.js"
import { higherIsBetter, record } from "../support/results.js"
import {
  benchDatabase,
  buildUnlessSkipped,
  dropDatabasesNow,
  expectStatus,
  send1,
  serverNodeOptions,
  spawnBenchServer,
  teamPrincipal
} from "../support/server.js"

const { connections: CONNECTIONS, seconds: SECONDS } = settings
/** The warm-up also sizes the measured phase's pool, so it runs for at least a second. */
const WARMUP = Math.max(1, settings.warmupSeconds)
const PG = process.env.BENCH_PG !== "0"
/** Signed deliveries for a warm-up (more than any server here accepts in that time). */
const WARMUP_POOL = Math.ceil(3_000 * WARMUP)
/**
 * The measured phase's pool: four times what the warm-up's rate (still compiling) would need, and
 * at least this many a second.
 */
const MIN_RATE = 1_000
/** The floors are sent these round and round (they check no signature and no identity). */
const BARE_POOL = 5_000
/**
 * The whole script's time limit: building, then generously per case (signing, running, reading the
 * log back): two databases × (two floors + two of ours).
 */
const WATCHDOG_MS = 300_000 + 8 * (SECONDS + WARMUP) * 6_000
const LABEL_WIDTH = 48

// ---------------------------------------------------------------------------------------------
// The bare node:http server, on its own thread (as the server has its own process); the Effect
// floor is bench/support/floor.ts's

const BARE_SERVER = `
const { parentPort } = require("node:worker_threads")
const http = require("node:http")
const { randomBytes } = require("node:crypto")
let next = 0
const prefix = randomBytes(8).toString("hex")
const server = http.createServer((req, res) => {
  const chunks = []
  req.on("data", (chunk) => chunks.push(chunk))
  req.on("end", () => {
    JSON.parse(Buffer.concat(chunks).toString("utf8"))
    const body = JSON.stringify({ delivery_id: prefix + String(next++).padStart(14, "0") })
    res.writeHead(202, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
    res.end(body)
  })
})
server.keepAliveTimeout = 60000
server.listen(0, "127.0.0.1", () => parentPort.postMessage(server.address().port))
`

// ---------------------------------------------------------------------------------------------
// Signed deliveries

/** Where a webhook's deliveries go, and how they are signed. */
interface Hook {
  readonly uid: string
  readonly secret: string
}

/** The i-th delivery's body: a Standard Webhooks-style event of about 700 bytes. */
const eventBody = (id: string, i: number) =>
  JSON.stringify({
    type: "issue.opened",
    timestamp: new Date().toISOString(),
    data: {
      delivery: id,
      repository: { id: 4_242, full_name: "acme/widgets", private: true, default_branch: "main" },
      issue: {
        number: i,
        title: `The parser drops the last token of input ${i}`,
        state: "open",
        labels: ["bug", "parser", "needs-triage"],
        body: "Steps to reproduce: feed the parser an input that ends without a newline; the last token " +
          "is missing from the output. Expected: every token, as with a trailing newline. Seen on main " +
          "since the tokenizer was rewritten; the flaky test in the parser suite fails one run in ten."
      },
      sender: { login: "octocat", id: 583_231, type: "User" }
    }
  })

const encoder = new TextEncoder()

/** `count` deliveries to `hook` at `port`, each with its own id and body, signed now. */
const presign = (port: number, hook: Hook, count: number) =>
  Effect.forEach(
    Array.from({ length: count }, (_, i) => i),
    (i) => {
      const id = `msg_${randomBytes(12).toString("base64url")}`
      const body = eventBody(id, i)
      return Signatures.sign("standard_webhooks", { secret: hook.secret, body: encoder.encode(body), now: Date.now(), id }).pipe(
        Effect.orDie,
        Effect.map((signed): Target => ({
          port,
          method: "POST",
          path: `/webhooks/w/${hook.uid}`,
          headers: { "content-type": "application/json", ...signed },
          body
        }))
      )
    },
    { concurrency: 4 }
  )

// ---------------------------------------------------------------------------------------------
// The server under test

/** The machine's 1-minute load average: other work on the same CPUs shows up in it. */
const load = () => `, load ${loadavg()[0]!.toFixed(1)}`

/** The CPU time (user + system, ms) a process has used so far, where /proc is there. */
const cpuMillis = (pid: number): number => {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
    return (Number(fields[11]) + Number(fields[12])) * 10 // utime, stime in clock ticks (100 Hz)
  } catch {
    return NaN
  }
}

/** What the delivery log of a webhook holds: entries by outcome, and the runs they started. */
const deliveryLog = (server: ServerProcess, token: string, uid: string) =>
  Effect.gen(function*() {
    const outcomes = new Map<string, number>()
    let runs = 0
    let cursor: string | null = null
    for (;;) {
      const path: string = `/api/v1/agent/webhooks/${uid}/deliveries?limit=100${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`
      const page = yield* expectStatus<{
        deliveries: Array<{ outcome: string; run_ids: Array<string> }>
        page_info: { has_next_page: boolean; next_cursor: string | null }
      }>("list deliveries", yield* send1(server, "GET", path, token), 200)
      for (const d of page.deliveries) {
        outcomes.set(d.outcome, (outcomes.get(d.outcome) ?? 0) + 1)
        runs += d.run_ids.length
      }
      if (!page.page_info.has_next_page || page.page_info.next_cursor === null) return { outcomes, runs }
      cursor = page.page_info.next_cursor
    }
  })

/** Problems found by the checks; the script fails at the end when there are any. */
const problems: Array<string> = []

const count202 = (m: Measurement) => m.statuses.get(202) ?? 0
const non202 = (label: string, m: Measurement) => {
  const others = [...m.statuses].filter(([status]) => status !== 202)
  if (others.length > 0) problems.push(`${label}: ${others.map(([status, n]) => `${n}×${status}`).join(", ")}`)
}

/**
 * One of our cases: a warm-up with its own signed deliveries, then the measured phase with a pool
 * sized from the warm-up's rate, then the delivery log checked against the 202s.
 */
const oursCase = (
  label: string,
  server: ServerProcess,
  token: string,
  hook: Hook,
  /** Runs each accepted delivery starts, and 202s before this case (the set-up's check). */
  expected: { readonly runsPerDelivery: number; readonly before: number }
) =>
  Effect.gen(function*() {
    const warmPool = yield* presign(server.port, hook, WARMUP_POOL)
    const warm = yield* Effect.promise(() => drive(each(warmPool), WARMUP, CONNECTIONS, false))
    const size = Math.ceil(Math.max(MIN_RATE, 4 * rate(warm)) * SECONDS) + CONNECTIONS
    const pool = yield* presign(server.port, hook, size)
    const cpuBefore = cpuMillis(server.pid)
    const measured = yield* Effect.promise(() => drive(each(pool), SECONDS, CONNECTIONS, true))
    const cpuPerRequest = (cpuMillis(server.pid) - cpuBefore) / measured.requests
    console.log(row(label, "ours", measured, LABEL_WIDTH) + `   server CPU ${cpuPerRequest.toFixed(2)} ms/delivery${load()}`)
    if (measured.exhausted) problems.push(`${label}: the ${number(size)} signed deliveries ran out before ${SECONDS} s`)
    non202(`${label} (warm-up)`, warm)
    non202(label, measured)

    const accepted = expected.before + count202(warm) + count202(measured)
    const log = yield* deliveryLog(server, token, hook.uid)
    const logged = [...log.outcomes].map(([outcome, n]) => `${number(n)} ${outcome}`).join(", ")
    console.log(
      `${"".padEnd(LABEL_WIDTH)}   log: ${logged}; ${number(log.runs)} runs started; 202s: ${number(accepted)} ` +
        `(${expected.before} set-up + ${number(count202(warm))} warm-up + ${number(count202(measured))} measured)`
    )
    const acceptedLogged = log.outcomes.get("ACCEPTED") ?? 0
    if (acceptedLogged !== accepted) problems.push(`${label}: ${acceptedLogged} ACCEPTED logged for ${accepted} 202s`)
    const otherLogged = [...log.outcomes].filter(([outcome]) => outcome !== "ACCEPTED")
    if (otherLogged.length > 0) problems.push(`${label}: logged ${otherLogged.map(([o, n]) => `${n} ${o}`).join(", ")}`)
    if (log.runs !== acceptedLogged * expected.runsPerDelivery) {
      problems.push(`${label}: ${log.runs} runs for ${acceptedLogged} accepted deliveries (expected ${expected.runsPerDelivery} each)`)
    }
    return { label, measured, cpuPerRequest }
  })

/** A server on `database` for the scope, a team admin's token, and its two webhooks (one with an automation), each checked with one delivery. */
const startServer = (database: "SQLite" | "PostgreSQL", env: Readonly<Record<string, string>>) =>
  Effect.gen(function*() {
    const dataDir = yield* tempDataDir
    // Deliveries to the automation start runs: the team's run quota is out of the way too.
    const { adminToken, server } = yield* spawnBenchServer(dataDir, {
      AGENT_RUNS_CONCURRENCY: "0",
      AGENT_RUNS_WEBHOOK_DELIVERIES_PER_MINUTE: "10000000",
      ...serverNodeOptions,
      ...env
    })
    console.log(`server ${server.url} (pid ${server.pid}, ${database}, data in ${dataDir})`)
    const { token } = yield* teamPrincipal(server, adminToken, "admin")
    const webhook = (name: string) =>
      Effect.flatMap(
        send1(server, "POST", "/api/v1/agent/webhooks", token, { name, auth_mode: "signature", signature_scheme: "standard_webhooks" }),
        (reply) => expectStatus<Hook>(`create webhook ${name}`, reply, 201)
      )
    const plain = yield* webhook("bench plain")
    const automated = yield* webhook("bench automated")
    yield* expectStatus(
      "create automation",
      yield* send1(server, "POST", "/api/v1/agent/automations", token, {
        name: "bench triage",
        prompt: "Triage the issue.",
        trigger: { provider: "webhook", event: "received", filter: { webhook_ids: [automated.uid] } }
      }),
      201
    )
    // One signed delivery each: the signing, the 202 and the log (counted by the checks later).
    // The first 202's body is what the Effect floor answers.
    const accepted: Array<string> = []
    for (const hook of [plain, automated]) {
      const [check] = yield* presign(server.port, hook, 1)
      const reply = yield* Effect.promise(() => call(server, "POST", check!.path, { headers: { ...check!.headers }, body: check!.body }))
      accepted.push(JSON.stringify(yield* expectStatus(`a check delivery to ${hook.uid}`, reply, 202)))
    }
    return { server, token, plain, automated, accepted: accepted[0]! }
  })

type Started = Effect.Effect.Success<ReturnType<typeof startServer>>

/**
 * The floors beside a database's cases, each on a worker thread for the scope and sent the same
 * signed deliveries round and round: bare node:http, then the Effect floor (Effect 3's platform
 * answering `POST /webhooks/w/:uid` with the bytes of our first 202 once it has read the JSON).
 */
const floors = (database: "SQLite" | "PostgreSQL", started: Started) =>
  Effect.gen(function*() {
    const baseline = yield* startBare(BARE_SERVER, undefined)
    const floor = yield* startEffectFloor([
      { method: "POST", pattern: "/webhooks/w/:uid", path: `/webhooks/w/${started.plain.uid}`, status: 202, body: started.accepted }
    ])
    const requests = yield* presign(baseline.port, started.plain, BARE_POOL)
    console.log(
      `deliveries: JSON bodies of about ${number(Buffer.byteLength(requests[0]!.body!))} bytes, headers ${
        Object.keys(requests[0]!.headers).join(", ")
      }; the floor answers ${started.accepted}\n`
    )
    console.log(header(LABEL_WIDTH))
    const phase = (port: number) =>
      Effect.promise(async () => {
        const targets = requests.map((target) => ({ ...target, port }))
        await drive(cycle(targets), WARMUP, CONNECTIONS, false)
        return drive(cycle(targets), SECONDS, CONNECTIONS, true)
      })
    const bare = yield* phase(baseline.port)
    console.log(row(`${database}: bare node:http, 202`, "bare", bare, LABEL_WIDTH) + `   ${load().slice(2)}`)
    non202(`${database}: bare`, bare)
    const floored = yield* phase(floor.port)
    console.log(row(`${database}: the Effect floor, 202`, "eff3", floored, LABEL_WIDTH) + `   ${load().slice(2)}`)
    non202(`${database}: the Effect floor`, floored)
    return { bare, floor: floored }
  })

const withServerOutput = (server: ServerProcess) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(
    Effect.tapDefect(() => Effect.sync(() => console.error(`server output:\n${server.stdout().slice(-5_000)}\n${server.stderr().slice(-5_000)}`)))
  )

/** Our two cases on a server: the webhook without, then the one with the automation. */
const oursOn = (database: "SQLite" | "PostgreSQL", started: Started) =>
  Effect.gen(function*() {
    const { automated, plain, server, token } = started
    const guarded = withServerOutput(server)
    const first = yield* guarded(oursCase(`${database}, no automation`, server, token, plain, { runsPerDelivery: 0, before: 1 }))
    const second = yield* guarded(
      oursCase(`${database}, one automation (a QUEUED run each)`, server, token, automated, { runsPerDelivery: 1, before: 1 })
    )
    return [first, second]
  })

/** A database's floors and our two cases on it. */
interface DatabaseResult {
  readonly database: "SQLite" | "PostgreSQL"
  readonly bare: Measurement
  readonly floor: Measurement
  readonly cases: ReadonlyArray<{ readonly label: string; readonly measured: Measurement; readonly cpuPerRequest: number }>
}

/** One database's part: its server, its floors, then our two cases. */
const onDatabase = (database: "SQLite" | "PostgreSQL", env: Readonly<Record<string, string>>) =>
  Effect.gen(function*() {
    const started = yield* startServer(database, env)
    const { bare, floor } = yield* floors(database, started)
    return { database, bare, floor, cases: yield* oursOn(database, started) } satisfies DatabaseResult
  })

/** The PostgreSQL cases, or why they were skipped. */
const postgres = Effect.gen(function*() {
  if (!PG) return { skipped: "BENCH_PG=0" }
  const database = yield* Effect.either(Effect.catchAllDefect(benchDatabase, (defect) => Effect.fail(defect)))
  if (database._tag === "Left") return { skipped: `no PostgreSQL database: ${String(database.left).slice(0, 200)}` }
  return yield* onDatabase("PostgreSQL", { AGENT_RUNS_DATABASE_URL: database.right.url })
})

/** Issue 34's goals: ours as a share of the Effect floor's deliveries/s, by case. */
const GOALS: Record<string, { readonly name: string; readonly share: number }> = {
  "SQLite, no automation": { name: "Webhook ingress (SQLite) vs the Effect floor POST", share: 0.2 },
  "SQLite, one automation (a QUEUED run each)": {
    name: "Webhook ingress + automation starting a run (SQLite) vs the Effect floor POST",
    share: 0.12
  },
  "PostgreSQL, no automation": { name: "Webhook ingress (PostgreSQL) vs the Effect floor POST", share: 0.12 },
  "PostgreSQL, one automation (a QUEUED run each)": {
    name: "Webhook ingress + automation starting a run (PostgreSQL) vs the Effect floor POST",
    share: 0.08
  }
}

const program = Effect.gen(function*() {
  console.log(
    `Webhook ingress benchmark: Standard Webhooks signatures, distinct delivery ids, ${CONNECTIONS} keep-alive connections, ` +
      `${SECONDS} s per case (+${WARMUP} s warm-up), node ${process.version}, ${cpus().length} CPUs`
  )
  yield* buildUnlessSkipped

  // Each database in a scope of its own: its server, floors and database are gone before the next.
  const sqlite = yield* Effect.scoped(onDatabase("SQLite", {}))
  const pg = yield* Effect.scoped(postgres)
  if ("skipped" in pg) console.log(`PostgreSQL cases skipped: ${pg.skipped}`)
  const databases: ReadonlyArray<DatabaseResult> = "skipped" in pg ? [sqlite] : [sqlite, pg]

  console.log("\nours as a share of the Effect floor's deliveries/s (the goal) and of bare node:http's; p50 and p99 latency ours/floor:")
  for (const { bare, cases, floor } of databases) {
    for (const { label, measured } of cases) {
      console.log(
        `  ${label.padEnd(LABEL_WIDTH)} ${shareText(rate(measured), rate(floor))} (goal ≥ ${(GOALS[label]?.share ?? 0) * 100}%), ` +
          `${((100 * rate(measured)) / rate(bare)).toFixed(2)}% of bare; p50 ${(measured.p50 / floor.p50).toFixed(1)}×, ` +
          `p99 ${(measured.p99 / floor.p99).toFixed(1)}×`
      )
    }
  }
  if (problems.length > 0) {
    console.log(`\nproblems:\n  ${problems.join("\n  ")}`)
    return yield* Effect.dieMessage(`${problems.length} check(s) failed`)
  }
  console.log("\nchecks: every response 202; every 202 logged ACCEPTED (and with the automation, one run each)")
  for (const { bare, cases, floor } of databases) {
    for (const { cpuPerRequest, label, measured } of cases) {
      const goal = GOALS[label]
      if (goal === undefined) continue
      record(higherIsBetter(
        goal.name,
        rate(measured),
        rate(floor),
        "deliveries/s",
        { minShare: goal.share, text: `≥ ${goal.share * 100}% of the floor` },
        `ours ${shareText(rate(measured), rate(floor))}, p50 ${measured.p50.toFixed(1)} ms, p99 ${measured.p99.toFixed(1)} ms, ` +
          `server CPU ${cpuPerRequest.toFixed(2)} ms/delivery, stored before the 202 (API-only server, AGENT_RUNS_CONCURRENCY=0); ` +
          `baseline: the Effect floor POST (Effect 3's @effect/platform-node server and router reading the JSON and answering ` +
          `202, no application code, no verification), p50 ${floor.p50.toFixed(1)} ms, p99 ${floor.p99.toFixed(1)} ms; ` +
          `bare node:http ${number(rate(bare))} deliveries/s (the floor ${((100 * rate(floor)) / rate(bare)).toFixed(0)}% of it, ours ${
            ((100 * rate(measured)) / rate(bare)).toFixed(2)
          }%), measured just before; ${CONNECTIONS} connections`
      ))
    }
  }
})

runBench("bench:ingress", WATCHDOG_MS, program, [dropDatabasesNow])
