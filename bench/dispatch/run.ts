/**
 * Dispatch benchmark (issue 5). Builds and starts the bundled server as a process on SQLite with a
 * temporary data directory and the process executor, its harness being `bench/dispatch/agent.mjs`
 * (plain Node: reads the start line, writes its first output line and at that moment appends
 * `<run_id> <ms since the epoch>` to a log file, prints a message, exits 0). Two measures, each
 * against the same agent spawned directly by this script (`child_process.spawn(process.execPath,
 * [agent.mjs, log])`, a start line written to its stdin):
 *
 * 1. Latency to first output, p50/p99 over BENCH_RUNS runs (200) sent one at a time: from just
 *    before `POST /api/v1/agent/runs` is sent to the agent's logged first output. The next run is
 *    sent once the previous one is seen SUCCEEDED, so each starts on an idle server. Baseline: from
 *    just before `spawn` to the logged first output; the next once the child exited.
 * 2. Throughput: BENCH_THROUGHPUT_RUNS short runs (1,000) POSTed BENCH_CONCURRENCY (16) at a time
 *    to a server executing as many at once, until none is live any more and all are SUCCEEDED;
 *    runs/s. Baseline: the agent spawned as many times, as many at a time, each to its exit.
 *
 *   npm run bench:dispatch
 *   BENCH_RUNS=20 BENCH_THROUGHPUT_RUNS=100 npm run bench:dispatch      # a quick run
 *
 * Settings: BENCH_RUNS, BENCH_THROUGHPUT_RUNS, BENCH_CONCURRENCY, BENCH_WARMUP_RUNS (5, not
 * measured, before each case), BENCH_SKIP_BUILD=1 (use the existing dist). No Docker variant yet
 * (against `docker run` of the same image). Listens on 127.0.0.1 only, stops by itself (a
 * watchdog ends it if a case hangs), and removes its data directory. Never part of `npm test`.
 */
import { type Ids } from "@agent-runs/core"
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { closeSync, type FSWatcher, mkdtempSync, openSync, readSync, rmSync, watch, writeFileSync } from "node:fs"
import { cpus, tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import {
  buildServer,
  call,
  type Reply,
  type ServerProcess,
  spawnServer,
  tempDataDir
} from "../../examples/server/test/process.js"

const RUNS = Number(process.env.BENCH_RUNS ?? 200)
const THROUGHPUT_RUNS = Number(process.env.BENCH_THROUGHPUT_RUNS ?? 1_000)
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16)
const WARMUP_RUNS = Number(process.env.BENCH_WARMUP_RUNS ?? 5)
/** The whole script's time limit: building and start-up, then generously per run. */
const WATCHDOG_MS = 300_000 + (RUNS + WARMUP_RUNS) * 2 * 1_000 + (THROUGHPUT_RUNS + WARMUP_RUNS) * 2 * 200
/** How long one run may take to show its first output or to end before the script gives up. */
const RUN_TIMEOUT_MS = 30_000

const AGENT = fileURLToPath(new URL("./agent.mjs", import.meta.url))

/** Milliseconds since the epoch with sub-millisecond precision, as the agent logs them. */
const now = () => performance.timeOrigin + performance.now()

/** Removed by the scope, or by the watchdog before it exits. */
const cleanups: Array<() => void> = []

// ---------------------------------------------------------------------------------------------
// The agents' log: `<id> <ms>` lines, read as they are appended

class LogTail {
  private readonly seen = new Map<string, number>()
  private readonly waiting = new Map<string, (at: number) => void>()
  private offset = 0
  private partial = ""
  private readonly fd: number
  private readonly watcher: FSWatcher
  private readonly fallback: NodeJS.Timeout

  constructor(readonly path: string) {
    writeFileSync(path, "")
    this.fd = openSync(path, "r")
    this.watcher = watch(path, () => this.read())
    // fs.watch may coalesce or miss events; a slow poll makes sure nothing waits forever.
    this.fallback = setInterval(() => this.read(), 10)
  }

  /** The logged time of `id`'s first output, once it is there. */
  waitFor(id: string): Promise<number> {
    this.read()
    const at = this.seen.get(id)
    if (at !== undefined) return Promise.resolve(at)
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id)
        reject(new Error(`no first output of ${id} within ${RUN_TIMEOUT_MS} ms`))
      }, RUN_TIMEOUT_MS)
      this.waiting.set(id, (logged) => {
        clearTimeout(timer)
        resolve(logged)
      })
    })
  }

  get count() {
    return this.seen.size
  }

  private read() {
    const buffer = Buffer.alloc(65_536)
    for (;;) {
      const n = readSync(this.fd, buffer, 0, buffer.length, this.offset)
      if (n === 0) break
      this.offset += n
      this.partial += buffer.toString("utf8", 0, n)
    }
    const lines = this.partial.split("\n")
    this.partial = lines.pop() ?? ""
    for (const line of lines) {
      const [id, at] = line.split(" ")
      if (id === undefined || at === undefined) continue
      this.seen.set(id, Number(at))
      const resolve = this.waiting.get(id)
      if (resolve !== undefined) {
        this.waiting.delete(id)
        resolve(Number(at))
      }
    }
  }

  close() {
    clearInterval(this.fallback)
    this.watcher.close()
    closeSync(this.fd)
  }
}

const logTail = (path: string) => Effect.acquireRelease(Effect.sync(() => new LogTail(path)), (tail) => Effect.sync(() => tail.close()))

/** A temporary directory for the scope (the agents' logs, the direct agents' work directory). */
const tempDir = Effect.acquireRelease(
  Effect.sync(() => {
    const dir = mkdtempSync(join(tmpdir(), "agent-runs-bench-dispatch-"))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    return dir
  }),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

// ---------------------------------------------------------------------------------------------
// The baseline: the agent spawned directly

/** The environment the server gives an agent: PATH and HOME (and its own four variables). */
const agentEnv = () => ({ PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/" })

/** Spawns the agent with a start line for `id`; resolves with the spawn time once it exited 0. */
const spawnDirect = (id: string, log: string, cwd: string): { readonly sent: number; readonly exited: Promise<number> } => {
  const sent = now()
  const child: ChildProcess = spawn(process.execPath, [AGENT, log], { cwd, env: agentEnv(), stdio: ["pipe", "pipe", "inherit"] })
  child.stdout!.on("data", () => {})
  child.stdin!.on("error", () => {}) // the agent may exit before reading all of it
  child.stdin!.write(`${JSON.stringify({ type: "start", run_id: id, prompt: "Fix the flaky test in the parser" })}\n`)
  const exited = new Promise<number>((resolve, reject) => {
    child.once("error", reject)
    child.once("close", (code, signal) =>
      code === 0 ? resolve(now()) : reject(new Error(`the direct agent ${id} exited with ${code ?? signal}`)))
  })
  return { sent, exited }
}

// ---------------------------------------------------------------------------------------------
// The server

/** The JSON body of a reply with the expected status (the script stops otherwise). */
const expectStatus = <A>(what: string, reply: Reply, status: number): Promise<A> =>
  reply.status === status
    ? Promise.resolve(reply.body as A)
    : Promise.reject(new Error(`${what}: expected ${status}, got ${reply.status}: ${JSON.stringify(reply.body)}`))

const ENDED = new Set(["SUCCEEDED", "FAILED", "BLOCKED", "ERROR", "CANCELLED"])
const LIVE = "state=PENDING&state=QUEUED&state=CLAIMED&state=INPROGRESS"

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface Api {
  readonly server: ServerProcess
  readonly token: string
}

const createRun = async ({ server, token }: Api, i: number): Promise<string> => {
  const reply = await call(server, "POST", "/api/v1/agent/runs", {
    token,
    body: { prompt: `Fix the flaky test in the parser (${i})`, metadata: { bench: "dispatch" } }
  })
  return (await expectStatus<{ run_id: string }>("create run", reply, 200)).run_id
}

/** Polls the run every 5 ms until it ended; its state. */
const waitEnded = async ({ server, token }: Api, runId: string): Promise<string> => {
  const deadline = Date.now() + RUN_TIMEOUT_MS
  for (;;) {
    const run = await expectStatus<{ state: string }>("get run", await call(server, "GET", `/api/v1/agent/runs/${runId}`, { token }), 200)
    if (ENDED.has(run.state)) return run.state
    if (Date.now() > deadline) throw new Error(`run ${runId} did not end within ${RUN_TIMEOUT_MS} ms (${run.state})`)
    await sleep(5)
  }
}

/** How many runs of the team are in `states` (`state=…&state=…`), counted through pages of 100. */
const countRuns = async ({ server, token }: Api, states: string): Promise<number> => {
  let count = 0
  let cursor: string | null = null
  for (;;) {
    const path: string = `/api/v1/agent/runs?${states}&limit=100${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`
    const page = await expectStatus<{ runs: Array<unknown>; page_info: { has_next_page: boolean; next_cursor: string | null } }>(
      "list runs",
      await call(server, "GET", path, { token }),
      200
    )
    count += page.runs.length
    if (!page.page_info.has_next_page || page.page_info.next_cursor === null) return count
    cursor = page.page_info.next_cursor
  }
}

// ---------------------------------------------------------------------------------------------
// Cases

interface Latencies {
  /** Sent → first output, ms, sorted. */
  readonly first: ReadonlyArray<number>
  /** Sent → exited (direct) or seen SUCCEEDED (ours), ms, sorted. */
  readonly ended: ReadonlyArray<number>
  /** Ours: each measured run with its send time and logged first output, for the breakdown. */
  readonly runs?: ReadonlyArray<{ readonly runId: string; readonly sent: number; readonly logged: number }>
}

const sorted = (values: Array<number>) => values.sort((a, b) => a - b)
const at = (values: ReadonlyArray<number>, p: number) => values[Math.min(values.length - 1, Math.floor(p * values.length))] ?? NaN

const latencyDirect = async (tail: LogTail, cwd: string, runs: number, warmup: number): Promise<Latencies> => {
  const first: Array<number> = []
  const ended: Array<number> = []
  for (let i = 0; i < warmup + runs; i++) {
    const id = `direct-latency-${i}`
    const { exited, sent } = spawnDirect(id, tail.path, cwd)
    const logged = await tail.waitFor(id)
    const exit = await exited
    if (i >= warmup) {
      first.push(logged - sent)
      ended.push(exit - sent)
    }
  }
  return { first: sorted(first), ended: sorted(ended) }
}

const latencyOurs = async (api: Api, tail: LogTail, runs: number, warmup: number): Promise<Latencies> => {
  const first: Array<number> = []
  const ended: Array<number> = []
  const measured: Array<{ runId: string; sent: number; logged: number }> = []
  for (let i = 0; i < warmup + runs; i++) {
    const sent = now()
    const runId = await createRun(api, i)
    const logged = await tail.waitFor(runId)
    const state = await waitEnded(api, runId)
    const end = now()
    if (state !== "SUCCEEDED") throw new Error(`run ${runId} ended ${state}`)
    if (i >= warmup) {
      first.push(logged - sent)
      ended.push(end - sent)
      measured.push({ runId, sent, logged })
    }
  }
  return { first: sorted(first), ended: sorted(ended), runs: measured }
}

/** The points of a run's way, in order: the timeline events' times (ms resolution) and the logged first output. */
const STAGES = [
  ["POST sent", "run_created"],
  ["run_created", "run_queued"],
  ["run_queued", "run_claimed"],
  ["run_claimed", "environment_setup_started"],
  ["environment_setup_started", "environment_setup_succeeded"],
  ["environment_setup_succeeded", "run_in_progress"],
  ["run_in_progress", "first output"],
  ["first output", "run_succeeded"]
] as const

/** p50 of each stage over the measured runs, from their timelines (read after the measurement). */
const breakdown = async ({ server, token }: Api, runs: NonNullable<Latencies["runs"]>) => {
  const durations = new Map<string, Array<number>>()
  for (const { logged, runId, sent } of runs) {
    const timeline = await expectStatus<{ events: Array<{ event_type: string; occurred_at: string }> }>(
      "get timeline",
      await call(server, "GET", `/api/v1/agent/runs/${runId}/timeline`, { token }),
      200
    )
    const points = new Map<string, number>([["POST sent", sent], ["first output", logged]])
    for (const event of timeline.events) if (!points.has(event.event_type)) points.set(event.event_type, Date.parse(event.occurred_at))
    for (const [from, to] of STAGES) {
      const a = points.get(from)
      const b = points.get(to)
      if (a === undefined || b === undefined) continue
      const key = `${from} → ${to}`
      durations.set(key, [...(durations.get(key) ?? []), b - a])
    }
  }
  return [...durations].map(([stage, values]) => {
    const ordered = sorted(values)
    return { stage, p50: at(ordered, 0.5), p99: at(ordered, 0.99) }
  })
}

/** `total` tasks, `concurrency` at a time. */
const pool = async (total: number, concurrency: number, task: (i: number) => Promise<void>) => {
  let next = 0
  const loop = async () => {
    while (next < total) await task(next++)
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, loop))
}

interface Throughput {
  readonly runs: number
  readonly seconds: number
}

const throughputDirect = async (log: string, cwd: string, runs: number, warmup: number): Promise<Throughput> => {
  await pool(warmup, CONCURRENCY, (i) => spawnDirect(`direct-warmup-${i}`, log, cwd).exited.then(() => {}))
  const start = now()
  await pool(runs, CONCURRENCY, (i) => spawnDirect(`direct-throughput-${i}`, log, cwd).exited.then(() => {}))
  return { runs, seconds: (now() - start) / 1000 }
}

/** Waits until the team has no live run (polled every 10 ms). */
const drained = async (api: Api, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const page = await expectStatus<{ runs: Array<unknown> }>("list live runs", await call(api.server, "GET", `/api/v1/agent/runs?${LIVE}&limit=1`, { token: api.token }), 200)
    if (page.runs.length === 0) return
    if (Date.now() > deadline) throw new Error(`runs still live after ${timeoutMs} ms`)
    await sleep(10)
  }
}

const throughputOurs = async (api: Api, runs: number, warmup: number): Promise<Throughput> => {
  await pool(warmup, CONCURRENCY, (i) => createRun(api, i).then(() => {}))
  await drained(api, RUN_TIMEOUT_MS)
  const start = now()
  await pool(runs, CONCURRENCY, (i) => createRun(api, i).then(() => {}))
  await drained(api, RUN_TIMEOUT_MS + runs * 1_000)
  return { runs, seconds: (now() - start) / 1000 }
}

// ---------------------------------------------------------------------------------------------
// Report

/** The label column. */
const WIDTH = 62
const ms = (n: number) => n.toFixed(1).padStart(8)
const number = (n: number, digits = 0) => n.toLocaleString("en", { minimumFractionDigits: digits, maximumFractionDigits: digits })
const rate = (t: Throughput) => t.runs / t.seconds

/** A shell word. */
const quote = (word: string) => `'${word.replaceAll("'", "'\\''")}'`

const program = Effect.gen(function*() {
  console.log(
    `Dispatch benchmark: process executor on SQLite (no Docker variant yet); ` +
      `${RUNS} latency runs one at a time, ${number(THROUGHPUT_RUNS)} throughput runs ${CONCURRENCY} at a time ` +
      `(+${WARMUP_RUNS} warm-up runs per case), node ${process.version}, ${cpus().length} CPUs`
  )
  if (process.env.BENCH_SKIP_BUILD !== "1") {
    console.log("building (npx tsc -b tsconfig.json)…")
    const build = buildServer()
    if (!build.ok) return yield* Effect.dieMessage(`the build failed:\n${build.output}`)
  }
  const clockSkew = () => Date.now() - now()
  const skewAtStart = clockSkew()

  const dir = yield* tempDir
  const serverLog = join(dir, "server-agents.log")
  const directLog = join(dir, "direct-agents.log")
  /** The direct agents' work directory. */
  const workDir = mkdtempSync(join(dir, "work-"))
  const serverTail = yield* logTail(serverLog)
  const directTail = yield* logTail(directLog)

  const dataDir = yield* tempDataDir
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }))
  const adminToken = `ar_${randomBytes(32).toString("base64url")}`
  const server = yield* spawnServer({
    dataDir,
    env: {
      AGENT_RUNS_ADMIN_TOKEN: adminToken,
      AGENT_RUNS_SECRET_KEY: randomBytes(32).toString("hex"),
      AGENT_RUNS_CONCURRENCY: String(CONCURRENCY),
      AGENT_RUNS_HARNESS: [process.execPath, AGENT, serverLog].map(quote).join(" ")
    }
  })
  cleanups.unshift(() => {
    try {
      process.kill(server.pid, "SIGKILL")
    } catch {
      // gone already
    }
  })
  console.log(`server ${server.url} (pid ${server.pid}, SQLite in ${dataDir}, concurrency ${CONCURRENCY})`)

  const api = yield* Effect.promise(async (): Promise<Api> => {
    const admin = (method: string, path: string, body: unknown) => call(server, method, path, { token: adminToken, body })
    const team = await expectStatus<{ uid: Ids.TeamUid }>("create team", await admin("POST", "/api/v1/admin/teams", { name: "bench" }), 201)
    await expectStatus("raise max_concurrent_runs", await admin("PATCH", `/api/v1/admin/teams/${team.uid}`, { max_concurrent_runs: 10_000 }), 200)
    const principal = await expectStatus<{ uid: Ids.PrincipalUid }>(
      "create principal",
      await admin("POST", "/api/v1/admin/principals", { type: "user", display_name: "bench", memberships: [{ team_uid: team.uid, role: "member" }] }),
      201
    )
    const { token } = await expectStatus<{ token: string }>(
      "create token",
      await admin("POST", `/api/v1/admin/principals/${principal.uid}/tokens`, {}),
      201
    )
    return { server, token }
  })
  const withServerOutput = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    effect.pipe(Effect.tapDefect(() => Effect.sync(() => console.error(`server output:\n${server.stdout().slice(-5_000)}\n${server.stderr().slice(-5_000)}`))))

  // 1. Latency to first output
  console.log(`\nlatency to first output (${RUNS} runs, one at a time)`)
  const direct = yield* Effect.promise(() => latencyDirect(directTail, workDir, RUNS, WARMUP_RUNS))
  const ours = yield* withServerOutput(Effect.promise(() => latencyOurs(api, serverTail, RUNS, WARMUP_RUNS)))
  console.log(`${"".padEnd(WIDTH)} ${"p50 ms".padStart(8)} ${"p99 ms".padStart(8)}`)
  console.log(`${"direct spawn → first output".padEnd(WIDTH)} ${ms(at(direct.first, 0.5))} ${ms(at(direct.first, 0.99))}`)
  console.log(`${"ours: POST → first output".padEnd(WIDTH)} ${ms(at(ours.first, 0.5))} ${ms(at(ours.first, 0.99))}`)
  console.log(
    `${"overhead (ours − direct)".padEnd(WIDTH)} ${ms(at(ours.first, 0.5) - at(direct.first, 0.5))} ${
      ms(at(ours.first, 0.99) - at(direct.first, 0.99))
    }`
  )
  console.log(`${"direct spawn → exited".padEnd(WIDTH)} ${ms(at(direct.ended, 0.5))} ${ms(at(direct.ended, 0.99))}`)
  console.log(`${"ours: POST → seen SUCCEEDED (5 ms polls)".padEnd(WIDTH)} ${ms(at(ours.ended, 0.5))} ${ms(at(ours.ended, 0.99))}`)
  const stages = yield* Effect.promise(() => breakdown(api, ours.runs ?? []))
  console.log("ours, by stage (timeline times have ms resolution; the stages' p50s need not add up):")
  for (const { p50, p99, stage } of stages) console.log(`  ${stage.padEnd(WIDTH - 2)} ${ms(p50)} ${ms(p99)}`)
  const overhead = at(ours.first, 0.5) - at(direct.first, 0.5)
  console.log(`goal: overhead ≤ 15 ms p50 (${overhead <= 15 ? "met" : "not met"}: ${overhead.toFixed(1)} ms)`)

  // 2. Throughput
  console.log(`\nthroughput (${number(THROUGHPUT_RUNS)} runs, ${CONCURRENCY} at a time)`)
  const directRate = yield* Effect.promise(() => throughputDirect(directLog, workDir, THROUGHPUT_RUNS, WARMUP_RUNS))
  console.log(`${"direct spawn, each to its exit".padEnd(WIDTH)} ${number(rate(directRate), 1).padStart(8)} runs/s (${directRate.seconds.toFixed(2)} s)`)
  const oursRate = yield* withServerOutput(Effect.promise(() => throughputOurs(api, THROUGHPUT_RUNS, WARMUP_RUNS)))
  console.log(`${"ours: POSTed, until all SUCCEEDED".padEnd(WIDTH)} ${number(rate(oursRate), 1).padStart(8)} runs/s (${oursRate.seconds.toFixed(2)} s)`)
  console.log(`ratio direct/ours ${(rate(directRate) / rate(oursRate)).toFixed(2)}×`)

  // Every run of the team must have succeeded.
  const created = (RUNS + WARMUP_RUNS) + (THROUGHPUT_RUNS + WARMUP_RUNS)
  const succeeded = yield* Effect.promise(() => countRuns(api, "state=SUCCEEDED"))
  const other = yield* Effect.promise(() => countRuns(api, `${LIVE}&state=FAILED&state=BLOCKED&state=ERROR&state=CANCELLED`))
  console.log(`\nruns: ${number(created)} created, ${number(succeeded)} SUCCEEDED, ${number(other)} in another state; agents logged ${number(serverTail.count)}`)
  if (succeeded !== created || other !== 0) return yield* Effect.dieMessage("not every run SUCCEEDED")
  const skew = clockSkew() - skewAtStart
  if (Math.abs(skew) > 1) console.log(`note: the wall clock moved ${skew.toFixed(1)} ms against this process's monotonic clock during the benchmark`)
})

const watchdog = setTimeout(() => {
  console.error(`bench:dispatch did not finish within ${WATCHDOG_MS / 1000} s; stopping`)
  for (const cleanup of cleanups) {
    try {
      cleanup()
    } catch {
      // best effort
    }
  }
  process.exit(2)
}, WATCHDOG_MS)
watchdog.unref()

Effect.runPromise(Effect.scoped(program)).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
