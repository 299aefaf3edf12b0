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
 * A second part, the Docker executor (BENCH_DOCKER=1; by default on when `docker info` answers),
 * starts a second server (its own data directory) with `AGENT_RUNS_EXECUTOR=docker`, the image
 * `agent-runs-test:latest` (busybox + this Node, made by `ensureTestImage`) and network `none`.
 * Host files are not visible in the container, so its harness is an inline agent, `node -e
 * <DOCKER_AGENT>`, whose first output line carries its own wall-clock time (`first-output <ms>`;
 * containers share the host kernel's clock). Ours: the time is read back from the run's transcript
 * once it is SUCCEEDED. Baseline: `docker run --rm -i --network none <image> node -e <same>`
 * spawned by this script, the time read from its stdout. Latency over BENCH_DOCKER_RUNS (50) runs
 * one at a time, throughput over BENCH_DOCKER_THROUGHPUT_RUNS (100) runs BENCH_DOCKER_CONCURRENCY
 * (8) at a time. A Docker run that ends FAILED (the executor now and then reports "the agent
 * exited with code -1") is listed and left out of the latencies instead of stopping the script;
 * the counts at the end include them. The containers of this script (its server's, label `agent-runs.root`, and its
 * `docker run`s, label `agent-runs.bench`) are removed at the end, also by the watchdog.
 *
 * Settings: BENCH_RUNS, BENCH_THROUGHPUT_RUNS, BENCH_CONCURRENCY, BENCH_WARMUP_RUNS (5, not
 * measured, before each case), BENCH_SKIP_BUILD=1 (use the existing dist), BENCH_DOCKER (1/0),
 * BENCH_DOCKER_RUNS, BENCH_DOCKER_THROUGHPUT_RUNS, BENCH_DOCKER_CONCURRENCY. Listens on 127.0.0.1
 * only, stops by itself (a watchdog ends it if a case hangs), and removes its data directories.
 * Never part of `npm test`.
 */
import { type Ids } from "@agent-runs/core"
import { Effect } from "effect"
import { ensureEngine, ensureTestImage, removeSandboxesUnder, testImage } from "@agent-runs/executor-docker/testing"
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { closeSync, type FSWatcher, mkdtempSync, openSync, readSync, rmSync, watch, writeFileSync } from "node:fs"
import { cpus, tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { runBench } from "../support/load.js"
import { lowerIsBetter, record } from "../support/results.js"
import {
  buildServer,
  call,
  type Reply,
  type ServerProcess,
  tempDataDir
} from "../../examples/server/test/process.js"
import { spawnBenchServer } from "../support/server.js"

const RUNS = Number(process.env.BENCH_RUNS ?? 200)
const THROUGHPUT_RUNS = Number(process.env.BENCH_THROUGHPUT_RUNS ?? 1_000)
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16)
const WARMUP_RUNS = Number(process.env.BENCH_WARMUP_RUNS ?? 5)
const DOCKER_RUNS = Number(process.env.BENCH_DOCKER_RUNS ?? 50)
const DOCKER_THROUGHPUT_RUNS = Number(process.env.BENCH_DOCKER_THROUGHPUT_RUNS ?? 100)
const DOCKER_CONCURRENCY = Number(process.env.BENCH_DOCKER_CONCURRENCY ?? 8)

/** Whether `docker info` answers within 10 s. */
const dockerAnswers = () => spawnSync("docker", ["info"], { stdio: "ignore", timeout: 10_000 }).status === 0
/** BENCH_DOCKER=1 or 0, else on when the engine answers; and why. */
const DOCKER: { readonly on: boolean; readonly why: string } = process.env.BENCH_DOCKER === "1"
  ? { on: true, why: "BENCH_DOCKER=1" }
  : process.env.BENCH_DOCKER === "0"
  ? { on: false, why: "BENCH_DOCKER=0" }
  : dockerAnswers()
  ? { on: true, why: "docker info answers" }
  : { on: false, why: "docker info does not answer" }

/** The whole script's time limit: building and start-up, then generously per run. */
const WATCHDOG_MS = 300_000 + (RUNS + WARMUP_RUNS) * 2 * 1_000 + (THROUGHPUT_RUNS + WARMUP_RUNS) * 2 * 200 +
  (DOCKER.on ? 120_000 + (DOCKER_RUNS + WARMUP_RUNS) * 10_000 + (DOCKER_THROUGHPUT_RUNS + WARMUP_RUNS) * 5_000 : 0)
/** How long one run may take to show its first output or to end before the script gives up. */
const RUN_TIMEOUT_MS = 30_000

const AGENT = fileURLToPath(new URL("./agent.mjs", import.meta.url))

/**
 * The Docker part's agent (`node -e`; no file of the host is visible in the container): reads the
 * start line, writes a status line with its wall-clock time as its first output, a message, and
 * exits 0. Pipes are written synchronously on Linux, so the lines are out when `exit` is called.
 */
const DOCKER_AGENT = [
  `let b = ""`,
  `const line = (o) => process.stdout.write(JSON.stringify(o) + "\\n")`,
  `process.stdin.setEncoding("utf8").on("data", (c) => {`,
  `  b += c`,
  `  if (!b.includes("\\n")) return`,
  `  line({ type: "status", message: "first-output " + (performance.timeOrigin + performance.now()).toFixed(3) })`,
  `  line({ type: "message", role: "assistant", text: "done" })`,
  `  process.exit(0)`,
  `})`
].join("\n")

/** The time in a `first-output <ms>` status line of the Docker agent's output (stdout or transcript). */
const firstOutputIn = (text: string, what: string): number => {
  const match = /first-output (\d+(?:\.\d+)?)/.exec(text)
  if (match === null) throw new Error(`no first-output line in ${what}: ${text.slice(0, 500)}`)
  return Number(match[1])
}

/** Removes the containers labelled `label` (`key=value`); how many there were. */
const removeContainers = (label: string): number => {
  const ids = spawnSync("docker", ["ps", "-aq", "--filter", `label=${label}`], { encoding: "utf8", timeout: 30_000 }).stdout?.split("\n")
    .filter((id) => id !== "") ?? []
  if (ids.length > 0) spawnSync("docker", ["rm", "-f", ...ids], { stdio: "ignore", timeout: 60_000 })
  return ids.length
}
/** The label of this script's `docker run` containers. */
const BENCH_LABEL = `agent-runs.bench=dispatch-${process.pid}`

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

/** Removes a directory, with the Docker sandboxes (mounts) a server may have left in it. */
const removeDir = (dir: string) => {
  removeSandboxesUnder(dir)
  rmSync(dir, { recursive: true, force: true })
}

/** A temporary directory for the scope (the agents' logs, the direct agents' work directory). */
const tempDir = Effect.acquireRelease(
  Effect.sync(() => {
    const dir = mkdtempSync(join(tmpdir(), "agent-runs-bench-dispatch-"))
    cleanups.push(() => removeDir(dir))
    return dir
  }),
  (dir) => Effect.sync(() => removeDir(dir))
)

// ---------------------------------------------------------------------------------------------
// The baseline: the agent spawned directly

/** The environment the server gives an agent: PATH and HOME (and its own four variables). */
const agentEnv = () => ({ PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/" })

/** An agent spawned by this script: when, when it showed its first output, when it exited 0. */
interface Spawned {
  readonly sent: number
  readonly firstOutput: Promise<number>
  readonly exited: Promise<number>
}

const startLine = (id: string) => `${JSON.stringify({ type: "start", run_id: id, prompt: "Fix the flaky test in the parser" })}\n`

/**
 * Spawns `command` with a start line for `id` on its stdin; `firstOutput` is given its first
 * stdout line and returns the time of its first output.
 */
const spawnAgent = (
  id: string,
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd?: string; readonly env: NodeJS.ProcessEnv },
  firstOutput: (firstLine: Promise<string>) => Promise<number>
): Spawned => {
  const sent = now()
  const child: ChildProcess = spawn(command, args, { ...options, stdio: ["pipe", "pipe", "inherit"] })
  let out = ""
  let onLine: (line: string) => void = () => {}
  const firstLine = new Promise<string>((resolve) => (onLine = resolve))
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
    out += chunk
    const end = out.indexOf("\n")
    if (end >= 0) onLine(out.slice(0, end))
  })
  child.stdin!.on("error", () => {}) // the agent may exit before reading all of it
  child.stdin!.write(startLine(id))
  const exited = new Promise<number>((resolve, reject) => {
    child.once("error", reject)
    child.once("close", (code, signal) => {
      onLine(out) // no line: what there is (firstOutput fails on it)
      return code === 0 ? resolve(now()) : reject(new Error(`the direct agent ${id} exited with ${code ?? signal}`))
    })
  })
  return { sent, firstOutput: firstOutput(firstLine), exited }
}

/** The process part's baseline: agent.mjs spawned directly; its first output from the log. */
const spawnDirect = (id: string, tail: LogTail, cwd: string): Spawned =>
  spawnAgent(id, process.execPath, [AGENT, tail.path], { cwd, env: agentEnv() }, () => tail.waitFor(id))

/** The Docker part's baseline: `docker run` of the image; its first output from its stdout. */
const spawnDockerRun = (id: string): Spawned =>
  spawnAgent(
    id,
    "docker",
    ["run", "--rm", "-i", "--network", "none", "--label", BENCH_LABEL, testImage, "node", "-e", DOCKER_AGENT],
    { env: process.env },
    (firstLine) => firstLine.then((line) => firstOutputIn(line, `the stdout of docker run ${id}`))
  )

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

/** The run's transcript: the API answers 302 to a signed URL of the same server. */
const transcript = async ({ server, token }: Api, runId: string): Promise<string> => {
  const reply = await call(server, "GET", `/api/v1/agent/runs/${runId}/transcript`, { token })
  const location = reply.headers.get("location")
  if (reply.status !== 302 || location === null) throw new Error(`transcript of ${runId}: expected 302, got ${reply.status}`)
  const response = await fetch(new URL(location, server.url))
  if (response.status !== 200) throw new Error(`transcript of ${runId}: the signed URL answered ${response.status}`)
  return await response.text()
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

const latencyDirect = async (spawnOne: (id: string) => Spawned, runs: number, warmup: number): Promise<Latencies> => {
  const first: Array<number> = []
  const ended: Array<number> = []
  for (let i = 0; i < warmup + runs; i++) {
    const { exited, firstOutput, sent } = spawnOne(`direct-latency-${i}`)
    const logged = await firstOutput
    const exit = await exited
    if (i >= warmup) {
      first.push(logged - sent)
      ended.push(exit - sent)
    }
  }
  return { first: sorted(first), ended: sorted(ended) }
}

/**
 * Where the time of a run's first output is read: as it happens, before polling the run (the
 * process agents' log), or once the run ended (the Docker agent's line in the transcript).
 */
type FirstOutput =
  | { readonly live: (runId: string) => Promise<number> }
  | { readonly ended: (runId: string) => Promise<number> }

/** With `failed`, a run that did not succeed is listed there (its status message) and not measured. */
const latencyOurs = async (api: Api, firstOutput: FirstOutput, runs: number, warmup: number, failed?: Array<string>): Promise<Latencies> => {
  const first: Array<number> = []
  const ended: Array<number> = []
  const measured: Array<{ runId: string; sent: number; logged: number }> = []
  for (let i = 0; i < warmup + runs; i++) {
    const sent = now()
    const runId = await createRun(api, i)
    const live = "live" in firstOutput ? await firstOutput.live(runId) : undefined
    const state = await waitEnded(api, runId)
    const end = now()
    if (state !== "SUCCEEDED") {
      const run = await call(api.server, "GET", `/api/v1/agent/runs/${runId}`, { token: api.token })
      const why = `run ${runId} ended ${state}: ${JSON.stringify((run.body as { status_message?: unknown }).status_message)}`
      if (failed === undefined) throw new Error(why)
      failed.push(why)
      continue
    }
    const logged = "ended" in firstOutput ? await firstOutput.ended(runId) : live!
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

const throughputDirect = async (spawnOne: (id: string) => Spawned, runs: number, warmup: number, concurrency: number): Promise<Throughput> => {
  await pool(warmup, concurrency, (i) => spawnOne(`direct-warmup-${i}`).exited.then(() => {}))
  const start = now()
  await pool(runs, concurrency, (i) => spawnOne(`direct-throughput-${i}`).exited.then(() => {}))
  return { runs, seconds: (now() - start) / 1000 }
}

/** The goal of the row "Create → agent's first output": at most this much over a direct spawn, p50 (issue 34; issue 20 asked 10). */
const OVERHEAD_GOAL_MS = 15

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

const throughputOurs = async (api: Api, runs: number, warmup: number, concurrency: number): Promise<Throughput> => {
  await pool(warmup, concurrency, (i) => createRun(api, i).then(() => {}))
  await drained(api, RUN_TIMEOUT_MS)
  const start = now()
  await pool(runs, concurrency, (i) => createRun(api, i).then(() => {}))
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

/** A server for the scope: its own data directory, a team whose limit is out of the way, a member's token. */
const startServer = (env: Readonly<Record<string, string>>, concurrency: number, afterStop: (dataDir: string) => void = () => {}) =>
  Effect.gen(function*() {
    const dataDir = yield* tempDataDir
    cleanups.push(() => removeDir(dataDir))
    // Runs once the server stopped (the scope's finalizers run in reverse order), or by the watchdog.
    yield* Effect.addFinalizer(() => Effect.sync(() => afterStop(dataDir)))
    const { adminToken, server } = yield* spawnBenchServer(dataDir, { AGENT_RUNS_CONCURRENCY: String(concurrency), ...env })
    cleanups.unshift(() => {
      try {
        process.kill(server.pid, "SIGKILL")
      } catch {
        // gone already
      }
      afterStop(dataDir)
    })
    console.log(`server ${server.url} (pid ${server.pid}, SQLite in ${dataDir}, concurrency ${concurrency})`)
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
    return api
  })

/** Prints the server's last output when `effect` dies. */
const withServerOutput = ({ server }: Api) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(Effect.tapDefect(() => Effect.sync(() => console.error(`server output:\n${server.stdout().slice(-5_000)}\n${server.stderr().slice(-5_000)}`))))

const row = (label: string, ...values: ReadonlyArray<string>) => console.log(`${label.padEnd(WIDTH)} ${values.join(" ")}`)
const p50p99 = (values: ReadonlyArray<number>) => [ms(at(values, 0.5)), ms(at(values, 0.99))]

/** One executor against its baseline. */
interface Part {
  readonly api: Api
  /** What the baseline is called in the report ("direct spawn", "docker run"). */
  readonly baseline: string
  readonly spawnOne: (id: string) => Spawned
  readonly firstOutput: FirstOutput
  readonly runs: number
  readonly throughputRuns: number
  readonly concurrency: number
  /** Whether runs that end FAILED are tolerated (listed, not measured) instead of stopping the script. */
  readonly tolerateFailed?: boolean
  /** How many first outputs the agents logged (the process part). */
  readonly logged?: () => number
}

/** Latency, its breakdown, throughput, and that every run SUCCEEDED; the p50s and p99s to first output (ms). */
const measure = (part: Part) =>
  Effect.gen(function*() {
    const { api, baseline, concurrency, runs, throughputRuns } = part
    const guarded = withServerOutput(api)

    console.log(`\nlatency to first output (${runs} runs, one at a time)`)
    const direct = yield* Effect.promise(() => latencyDirect(part.spawnOne, runs, WARMUP_RUNS))
    const failed: Array<string> = []
    const ours = yield* guarded(Effect.promise(() => latencyOurs(api, part.firstOutput, runs, WARMUP_RUNS, part.tolerateFailed ? failed : undefined)))
    if (failed.length > 0) console.log(`${failed.length} latency run(s) did not succeed (not measured):\n  ${failed.join("\n  ")}`)
    row("", "p50 ms".padStart(8), "p99 ms".padStart(8))
    row(`${baseline} → first output`, ...p50p99(direct.first))
    row("ours: POST → first output", ...p50p99(ours.first))
    row(`overhead (ours − ${baseline})`, ms(at(ours.first, 0.5) - at(direct.first, 0.5)), ms(at(ours.first, 0.99) - at(direct.first, 0.99)))
    row(`${baseline} → exited`, ...p50p99(direct.ended))
    row("ours: POST → seen SUCCEEDED (5 ms polls)", ...p50p99(ours.ended))
    const stages = yield* Effect.promise(() => breakdown(api, ours.runs ?? []))
    console.log("ours, by stage (timeline times have ms resolution; the stages' p50s need not add up):")
    for (const { p50, p99, stage } of stages) row(`  ${stage}`.padEnd(WIDTH), ms(p50), ms(p99))

    console.log(`\nthroughput (${number(throughputRuns)} runs, ${concurrency} at a time)`)
    const directRate = yield* Effect.promise(() => throughputDirect(part.spawnOne, throughputRuns, WARMUP_RUNS, concurrency))
    row(`${baseline}, each to its exit`, `${number(rate(directRate), 1).padStart(8)} runs/s (${directRate.seconds.toFixed(2)} s)`)
    const oursRate = yield* guarded(Effect.promise(() => throughputOurs(api, throughputRuns, WARMUP_RUNS, concurrency)))
    row("ours: POSTed, until all SUCCEEDED", `${number(rate(oursRate), 1).padStart(8)} runs/s (${oursRate.seconds.toFixed(2)} s)`)
    console.log(`ratio ${baseline}/ours ${(rate(directRate) / rate(oursRate)).toFixed(2)}×`)

    // Every run of the team must have succeeded.
    const created = (runs + WARMUP_RUNS) + (throughputRuns + WARMUP_RUNS)
    const succeeded = yield* Effect.promise(() => countRuns(api, "state=SUCCEEDED"))
    const other = yield* Effect.promise(() => countRuns(api, `${LIVE}&state=BLOCKED&state=ERROR&state=CANCELLED`))
    const failedRuns = yield* Effect.promise(() => countRuns(api, "state=FAILED"))
    console.log(
      `\nruns: ${number(created)} created, ${number(succeeded)} SUCCEEDED, ${number(failedRuns)} FAILED, ${number(other)} in another state` +
        (part.logged === undefined ? "" : `; agents logged ${number(part.logged())}`)
    )
    if (succeeded + failedRuns !== created || other !== 0 || (failedRuns > 0 && part.tolerateFailed !== true)) {
      return yield* Effect.dieMessage("not every run SUCCEEDED")
    }
    return {
      ours: { p50: at(ours.first, 0.5), p99: at(ours.first, 0.99) },
      baseline: { p50: at(direct.first, 0.5), p99: at(direct.first, 0.99) }
    }
  })

/** The process executor, its harness agent.mjs, against agent.mjs spawned directly. */
const processPart = Effect.gen(function*() {
  console.log(`\n== process executor, against the agent spawned directly`)
  const dir = yield* tempDir
  const serverTail = yield* logTail(join(dir, "server-agents.log"))
  const directTail = yield* logTail(join(dir, "direct-agents.log"))
  /** The direct agents' work directory. */
  const workDir = mkdtempSync(join(dir, "work-"))
  // The agent runs as this script's user, as the direct spawn does (as root the server would run
  // it as a sandbox user of its own, which cannot write the log file here nor reach agent.mjs).
  const api = yield* startServer({
    AGENT_RUNS_HARNESS: [process.execPath, AGENT, serverTail.path].map(quote).join(" "),
    AGENT_RUNS_PROCESS_ISOLATION: "none"
  }, CONCURRENCY)
  const latency = yield* measure({
    api,
    baseline: "direct spawn",
    spawnOne: (id) => spawnDirect(id, directTail, workDir),
    firstOutput: { live: (runId) => serverTail.waitFor(runId) },
    runs: RUNS,
    throughputRuns: THROUGHPUT_RUNS,
    concurrency: CONCURRENCY,
    logged: () => serverTail.count
  })
  const overhead = latency.ours.p50 - latency.baseline.p50
  console.log(`goal: overhead ≤ ${OVERHEAD_GOAL_MS} ms p50 (${overhead <= OVERHEAD_GOAL_MS ? "met" : "not met"}: ${overhead.toFixed(1)} ms)`)
  record(lowerIsBetter(
    "Create → agent's first output, over a direct spawn (SQLite, process executor)",
    latency.ours.p50,
    latency.baseline.p50,
    "ms p50",
    { maxOver: OVERHEAD_GOAL_MS, text: `≤ +${OVERHEAD_GOAL_MS} ms p50` },
    `p99 ${latency.ours.p99.toFixed(1)} vs ${latency.baseline.p99.toFixed(1)} ms; ${RUNS} runs one at a time`
  ))
})

/** The Docker executor, its harness the inline agent, against `docker run` of the same image. */
const dockerPart = Effect.gen(function*() {
  console.log(`\n== Docker executor (${testImage}, network none), against docker run of the same image`)
  ensureEngine()
  ensureTestImage()
  /** Removes what is left of this script's containers once the server stopped; says so if any. */
  const leftovers = (dataDir: string) => {
    const left = removeContainers(`agent-runs.root=${join(dataDir, "sandboxes")}`) + removeContainers(BENCH_LABEL)
    if (left > 0) console.log(`removed ${left} container(s) of this benchmark left behind`)
  }
  const api = yield* startServer(
    { AGENT_RUNS_EXECUTOR: "docker", AGENT_RUNS_DOCKER_IMAGE: testImage, AGENT_RUNS_DOCKER_NETWORK: "none", AGENT_RUNS_HARNESS: `node -e ${quote(DOCKER_AGENT)}` },
    DOCKER_CONCURRENCY,
    leftovers
  )
  yield* measure({
    api,
    baseline: "docker run",
    spawnOne: spawnDockerRun,
    firstOutput: { ended: (runId) => transcript(api, runId).then((text) => firstOutputIn(text, `the transcript of ${runId}`)) },
    runs: DOCKER_RUNS,
    throughputRuns: DOCKER_THROUGHPUT_RUNS,
    concurrency: DOCKER_CONCURRENCY,
    // The Docker executor now and then ends a run FAILED "the agent exited with code -1".
    tolerateFailed: true
  })
})

const program = Effect.gen(function*() {
  console.log(
    `Dispatch benchmark: process executor on SQLite, ` +
      `${RUNS} latency runs one at a time, ${number(THROUGHPUT_RUNS)} throughput runs ${CONCURRENCY} at a time; ` +
      (DOCKER.on
        ? `Docker executor on (${DOCKER.why}), ${DOCKER_RUNS} latency runs, ${number(DOCKER_THROUGHPUT_RUNS)} throughput runs ${DOCKER_CONCURRENCY} at a time; `
        : `Docker executor off (${DOCKER.why}); `) +
      `+${WARMUP_RUNS} warm-up runs per case, node ${process.version}, ${cpus().length} CPUs`
  )
  if (process.env.BENCH_SKIP_BUILD !== "1") {
    console.log("building (npx tsc -b tsconfig.json)…")
    const build = buildServer()
    if (!build.ok) return yield* Effect.dieMessage(`the build failed:\n${build.output}`)
  }
  const clockSkew = () => Date.now() - now()
  const skewAtStart = clockSkew()
  yield* Effect.scoped(processPart)
  if (DOCKER.on) yield* Effect.scoped(dockerPart)
  const skew = clockSkew() - skewAtStart
  if (Math.abs(skew) > 1) console.log(`note: the wall clock moved ${skew.toFixed(1)} ms against this process's monotonic clock during the benchmark`)
})

runBench("bench:dispatch", WATCHDOG_MS, Effect.scoped(program), cleanups)
