/**
 * Cost benchmark (issue 20): what the bundled server spends to keep N runs going, for N = 10, 100,
 * 200 and 1,000 concurrent runs (BENCH_CONCURRENCIES). For each N a fresh server (built unless
 * BENCH_SKIP_BUILD=1, started as a process on SQLite with the process executor,
 * `AGENT_RUNS_CONCURRENCY=N`, a temporary data directory, 127.0.0.1 only):
 *
 * 1. idle: the server's CPU time over the window (BENCH_WINDOW_SECONDS, 20) with no run;
 * 2. N runs are POSTed (16 at a time) and the script waits until all N are INPROGRESS (at most
 *    BENCH_START_SECONDS, by default 60 s + 0.25 s per run), then 3 s;
 * 3. busy: the server's CPU time over the same window while the agents run, without a single
 *    request from this script during it; then it checks that no run ended;
 * 4. every run is cancelled, the agents get 15 s to exit, what is left is killed, the server stops.
 *
 * CPU time is utime + stime of `/proc/<pid>/stat` (every thread of the server process; the agents
 * are other processes). The figure: server CPU ms per run-minute = busy CPU ms / (N × window in
 * minutes). The idle server's CPU over the same window is a note (the busy figure includes it), as
 * are the agents' own CPU (summed over their processes) and the server's RSS (now and peak,
 * `VmRSS`/`VmHWM` of `/proc/<pid>/status`; the peak is the server's whole life, start-up included).
 * When not all N runs are INPROGRESS within the start-up limit (the server saturated), the window
 * is measured anyway over those that are (the mean of the counts before and after it), and the row
 * says so and is not met: 200 is there as the largest N that fits on a 2-CPU machine.
 *
 * The agent is as cheap as a real process can be: the harness is `bash -c '<script>'`, one process
 * per run (`/bin/sh -c "exec bash …"` execs into it) with no child of its own: it reads the start
 * line, prints a session line, then an assistant message every BENCH_TICK_SECONDS (10) while it
 * waits on stdin with `read -t` (a bash builtin: no `sleep` process per tick), and exits 0 when
 * it reads the cancel message, when stdin closes, or after BENCH_AGENT_SECONDS (twice the start-up
 * limit + window + 120 s) in any case. Its command line carries a marker (`agent-runs-bench-cost-<pid>`),
 * by which leftovers are found and killed. A Node agent (bench/dispatch/agent.mjs) would cost
 * ~40 MB and ~50 ms of CPU to start per run, too much for 1,000 on this 2-CPU machine.
 *
 * Baseline: the same agents spawned directly would cost this script nothing to supervise (blocked
 * pipes), so there is none; each row has baseline null and the goal "recorded" (no goal in the
 * issue). Settings: BENCH_CONCURRENCIES (10,100,200,1000), BENCH_WINDOW_SECONDS (20),
 * BENCH_START_SECONDS, BENCH_TICK_SECONDS (10), BENCH_AGENT_SECONDS, BENCH_SKIP_BUILD=1,
 * BENCH_TIMEOUT_SECONDS (the watchdog: by default 5 min + per N 2 min, its start-up limit, 0.1 s
 * per run and two windows; it kills the server and the agents and removes the data directories),
 * BENCH_SERVER_NODE_OPTIONS (e.g. `--require $PWD/bench/support/cpu-profile.cjs`: the busy
 * window's CPU profile is a file of its own).
 *
 *   npm run bench:cost
 *   BENCH_CONCURRENCIES=10,100 BENCH_WINDOW_SECONDS=5 npm run bench:cost      # a quick run
 *
 * Never part of `npm test`.
 */
import { Effect } from "effect"
import { readdirSync, readFileSync, rmSync } from "node:fs"
import { cpus } from "node:os"
import { call, type ServerProcess, tempDataDir } from "../../examples/server/test/process.js"
import { lowerIsBetter, record } from "../support/results.js"
import { runBench } from "../support/load.js"
import { buildUnlessSkipped, expectStatus, send1, spawnBenchServer, teamPrincipal } from "../support/server.js"

const CONCURRENCIES = (process.env.BENCH_CONCURRENCIES ?? "10,100,200,1000").split(",").map(Number)
const WINDOW_S = Number(process.env.BENCH_WINDOW_SECONDS ?? 20)
const TICK_S = Number(process.env.BENCH_TICK_SECONDS ?? 10)
/** How long the runs of a case may take to be all INPROGRESS, s (BENCH_START_SECONDS: 60 + 0.25 s per run). */
const startSeconds = (n: number) => Math.ceil(Number(process.env.BENCH_START_SECONDS ?? 60 + n / 4))
/** How long an agent lives at most, s: past its case's start-up, settling, window and checks. */
// The start-up limit counted twice: the POSTs themselves took up to one more (113 s for 1,000 on a
// loaded machine), and an agent started by an early POST must outlive the window all the same.
const agentSeconds = (n: number) => Math.ceil(Number(process.env.BENCH_AGENT_SECONDS ?? 2 * startSeconds(n) + WINDOW_S + 120))
const TIMEOUT_MS = 1_000 * Number(
  process.env.BENCH_TIMEOUT_SECONDS ?? 300 + CONCURRENCIES.reduce((sum, n) => sum + 120 + startSeconds(n) + n / 10 + 2 * WINDOW_S, 0)
)
/** How long to let the runs settle once all are INPROGRESS (their first lines, the last claims). */
const SETTLE_MS = 3_000
/** Clock ticks per second of /proc's CPU times (`getconf CLK_TCK`; 100 on Linux). */
const CLK_TCK = 100

const MARKER = `agent-runs-bench-cost-${process.pid}`

/**
 * BENCH_SERVER_NODE_OPTIONS becomes the servers' NODE_OPTIONS; with bench/support/cpu-profile.cjs
 * preloaded there, the server gets SIGUSR2 just before and just after the busy window, so that
 * window's profile is a file of its own.
 */
const PROFILE = {
  env: process.env.BENCH_SERVER_NODE_OPTIONS === undefined ? {} : { NODE_OPTIONS: process.env.BENCH_SERVER_NODE_OPTIONS },
  mark: (pid: number) => {
    if (process.env.BENCH_SERVER_NODE_OPTIONS?.includes("cpu-profile") === true) process.kill(pid, "SIGUSR2")
  }
}

/**
 * The agent (bash, see above). No single quote in it: it is put in one in the harness command.
 * `read -t` fails with a status above 128 on its timeout, 1 at the end of stdin.
 */
const agentScript = (lifeSeconds: number) => [
  `IFS= read -r start || exit 0`,
  `end=$((SECONDS + ${lifeSeconds}))`,
  `echo "{\\"type\\":\\"session\\",\\"session_id\\":\\"bench-$$\\"}"`,
  `n=0`,
  `while [ "$SECONDS" -lt "$end" ]; do`,
  `  n=$((n + 1))`,
  `  echo "{\\"type\\":\\"message\\",\\"role\\":\\"assistant\\",\\"text\\":\\"still working ($n)\\"}"`,
  `  IFS= read -r -t ${TICK_S} line`,
  `  status=$?`,
  `  if [ "$status" -le 128 ]; then`,
  `    [ "$status" -ne 0 ] && exit 0`,
  `    case "$line" in *\\"cancel\\"*) exit 0 ;; esac`,
  `  fi`,
  `done`,
  `echo "{\\"type\\":\\"message\\",\\"role\\":\\"assistant\\",\\"text\\":\\"done\\"}"`
].join("\n")

const harness = (lifeSeconds: number) => `bash -c '${agentScript(lifeSeconds)}' ${MARKER}`

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const number = (n: number, digits = 0) => n.toLocaleString("en", { minimumFractionDigits: digits, maximumFractionDigits: digits })

// ---------------------------------------------------------------------------------------------
// /proc

/** utime + stime of a process, ms; undefined when it is gone. */
const cpuMs = (pid: number): number | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    // After the command name (in parentheses, may hold spaces): state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return ((Number(fields[11]) + Number(fields[12])) * 1_000) / CLK_TCK
  } catch {
    return undefined
  }
}

/** VmRSS and VmHWM (peak) of a process, MB. */
const rssMb = (pid: number): { readonly now: number; readonly peak: number } => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN)
  return { now: kb("VmRSS") / 1_024, peak: kb("VmHWM") / 1_024 }
}

/** The processes whose command line holds this script's agent marker. */
const agentPids = (): Array<number> =>
  readdirSync("/proc").flatMap((entry) => {
    if (!/^\d+$/.test(entry)) return []
    try {
      return readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(MARKER) ? [Number(entry)] : []
    } catch {
      return []
    }
  })

/** The agents' CPU time together, ms (those alive now). */
const agentsCpuMs = (pids: ReadonlyArray<number>) => pids.reduce((sum, pid) => sum + (cpuMs(pid) ?? 0), 0)

/** Kills every agent of this script still alive; how many there were. */
const killAgents = (): number => {
  const pids = agentPids()
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL")
    } catch {
      // gone already
    }
  }
  return pids.length
}

/** Undone by the scope, or by the watchdog before it exits. */
const cleanups: Array<() => void> = [() => void killAgents()]

// ---------------------------------------------------------------------------------------------
// The server

interface Api {
  readonly server: ServerProcess
  readonly token: string
}

/** A server for the scope with concurrency `n`: its own data directory, a team whose limits are out of the way, an admin's token. */
const startServer = (n: number) =>
  Effect.gen(function*() {
    const dataDir = yield* tempDataDir
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }))
    const { adminToken, server } = yield* spawnBenchServer(dataDir, {
      AGENT_RUNS_CONCURRENCY: String(n),
      AGENT_RUNS_HARNESS: harness(agentSeconds(n)),
      ...PROFILE.env
    })
    cleanups.unshift(() => {
      try {
        process.kill(server.pid, "SIGKILL")
      } catch {
        // gone already
      }
    })
    const { team, token } = yield* teamPrincipal(server, adminToken, "admin")
    yield* expectStatus(
      "raise max_concurrent_runs",
      yield* send1(server, "PATCH", `/api/v1/admin/teams/${team}`, adminToken, { max_concurrent_runs: 10_000 }),
      200
    )
    console.log(`server ${server.url} (pid ${server.pid}, SQLite in ${dataDir}, concurrency ${n})`)
    return { server, token } satisfies Api
  })

/** `total` tasks, `concurrency` at a time. */
const pool = async (total: number, concurrency: number, task: (i: number) => Promise<void>) => {
  let next = 0
  const loop = async () => {
    while (next < total) await task(next++)
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, loop))
}

/**
 * A GET of the API, tried again (up to 3 times, 1 s apart) when the connection fails: a server
 * saturated by 1,000 runs may close a keep-alive connection just as the next request goes out.
 */
const get = async (server: ServerProcess, path: string, token: string) => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call(server, "GET", path, { token })
    } catch (error) {
      if (attempt >= 3) throw error
      await sleep(1_000)
    }
  }
}

const ok = async <A>(what: string, reply: Promise<{ status: number; body: unknown }>, status = 200): Promise<A> => {
  const { body, status: got } = await reply
  if (got !== status) throw new Error(`${what}: expected ${status}, got ${got}: ${JSON.stringify(body)}`)
  return body as A
}

/** The team's runs by state, read through pages of 500. */
const statesOf = async ({ server, token }: Api): Promise<Map<string, number>> => {
  const counts = new Map<string, number>()
  let cursor: string | undefined
  for (;;) {
    const page: { runs: Array<{ state: string }>; page_info: { next_cursor?: string | null } } = await ok(
      "list runs",
      get(server, `/api/v1/agent/runs?limit=500${cursor === undefined ? "" : `&cursor=${encodeURIComponent(cursor)}`}`, token)
    )
    for (const run of page.runs) counts.set(run.state, (counts.get(run.state) ?? 0) + 1)
    if (page.page_info.next_cursor == null) return counts
    cursor = page.page_info.next_cursor
  }
}

const describe = (counts: Map<string, number>) => [...counts].map(([state, n]) => `${n} ${state}`).join(", ") || "none"

/** What a few runs that ended went through: their status message and timeline. */
const endedRuns = async ({ server, token }: Api): Promise<string> => {
  const page: { runs: Array<{ run_id: string; state: string; status_message?: unknown }> } = await ok(
    "list ended runs",
    get(server, `/api/v1/agent/runs?limit=3&state=SUCCEEDED&state=FAILED&state=ERROR&state=CANCELLED&state=BLOCKED`, token)
  )
  const lines = await Promise.all(page.runs.map(async (run) => {
    const timeline: { events: Array<{ event_type: string; occurred_at: string; message?: string | null }> } = await ok(
      "get timeline",
      get(server, `/api/v1/agent/runs/${run.run_id}/timeline`, token)
    )
    const events = timeline.events.map((e) => `${e.occurred_at.slice(11, 23)} ${e.event_type}${e.message ? ` (${e.message})` : ""}`)
    return `  ${run.run_id} ${run.state} ${JSON.stringify(run.status_message ?? null)}: ${events.join(", ")}`
  }))
  return lines.join("\n")
}

/** Whether the team has a run in one of `states` (one cheap page of one run). */
const anyIn = async ({ server, token }: Api, states: ReadonlyArray<string>): Promise<boolean> => {
  const page: { runs: Array<unknown> } = await ok(
    "list runs",
    get(server, `/api/v1/agent/runs?limit=1&${states.map((state) => `state=${state}`).join("&")}`, token)
  )
  return page.runs.length > 0
}

const ENDED = ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED", "BLOCKED"]

/**
 * Polls every second until none of the `n` runs is waiting any more (all INPROGRESS), or until
 * `timeoutMs`; how many are INPROGRESS then. Fails when a run ended. Each poll is two pages of
 * one run, so that the polling costs the server little; every 30 s the counts by state are printed.
 */
const allInProgress = async (api: Api, n: number, timeoutMs: number): Promise<number> => {
  const start = Date.now()
  let reported = start
  for (;;) {
    const waiting = await anyIn(api, ["PENDING", "QUEUED", "CLAIMED"])
    const ended = await anyIn(api, ENDED)
    if (ended) throw new Error(`waiting for ${n} runs INPROGRESS: ${describe(await statesOf(api))}; ended:\n${await endedRuns(api)}`)
    if (!waiting || Date.now() > start + timeoutMs) {
      const counts = await statesOf(api)
      if (!waiting && counts.get("INPROGRESS") !== n) throw new Error(`expected ${n} runs INPROGRESS: ${describe(counts)}`)
      if (waiting) console.log(`  not all INPROGRESS after ${timeoutMs / 1000} s: ${describe(counts)}`)
      return counts.get("INPROGRESS") ?? 0
    }
    if (Date.now() - reported >= 30_000) {
      reported = Date.now()
      console.log(`  after ${Math.round((reported - start) / 1000)} s: ${describe(await statesOf(api))}`)
    }
    await sleep(1_000)
  }
}

/** The server's CPU time over the window, ms, and the agents' (alive at its start). */
const measureWindow = async (server: ServerProcess) => {
  const agents = agentPids()
  const agentsBefore = agentsCpuMs(agents)
  const before = cpuMs(server.pid)!
  await sleep(WINDOW_S * 1_000)
  const after = cpuMs(server.pid)
  if (after === undefined) throw new Error("the server exited during the window")
  return { server: after - before, agents: agentsCpuMs(agents) - agentsBefore, agentCount: agents.length }
}

// ---------------------------------------------------------------------------------------------
// One case

const oneCase = (n: number) =>
  Effect.gen(function*() {
    console.log(`\n== ${number(n)} concurrent runs`)
    const api = yield* startServer(n)
    const { server } = api
    // After the runs were cancelled (below): their agents have a moment to exit, then what is left is killed.
    yield* Effect.addFinalizer(() =>
      Effect.promise(async () => {
        const deadline = Date.now() + 15_000
        while (agentPids().length > 0 && Date.now() < deadline) await sleep(250)
        const left = killAgents()
        if (left > 0) console.log(`killed ${left} agent(s) left behind`)
      })
    )
    yield* Effect.promise(() => sleep(2_000))
    const idle = yield* Effect.promise(() => measureWindow(server))
    console.log(`idle: server CPU ${number(idle.server)} ms over ${WINDOW_S} s`)

    const runIds: Array<string> = []
    const started = performance.now()
    yield* Effect.promise(() =>
      pool(n, 16, async (i) => {
        const run = await ok<{ run_id: string }>(
          "create run",
          call(server, "POST", "/api/v1/agent/runs", { token: api.token, body: { prompt: `Keep working (${i})` } })
        )
        runIds.push(run.run_id)
      })
    )
    // Cancelled at the end whatever happens (the agents exit on the cancel message).
    yield* Effect.addFinalizer(() =>
      Effect.promise(async () => {
        let failed = 0
        await pool(runIds.length, 16, async (i) => {
          const reply = await call(server, "POST", `/api/v1/agent/runs/${runIds[i]}/cancel`, { token: api.token }).catch(() => undefined)
          if (reply === undefined || reply.status >= 300) failed++
        })
        console.log(`cancelled ${runIds.length - failed} of ${runIds.length} runs`)
      }).pipe(Effect.timeout("60 seconds"), Effect.ignore)
    )
    const posted = performance.now()
    const inProgress = yield* Effect.promise(() => allInProgress(api, n, startSeconds(n) * 1_000))
    const running = performance.now()
    const all = inProgress === n
    const startedIn = `${((running - started) / 1000).toFixed(1)} s`
    console.log(
      `${number(n)} runs POSTed in ${((posted - started) / 1000).toFixed(1)} s, ` +
        (all ? `all INPROGRESS after ${startedIn}` : `${number(inProgress)} INPROGRESS after ${startedIn}: measuring those`)
    )
    yield* Effect.promise(() => sleep(SETTLE_MS))
    PROFILE.mark(server.pid)
    const busy = yield* Effect.promise(() => measureWindow(server))
    PROFILE.mark(server.pid)
    const rss = rssMb(server.pid)
    const after = yield* Effect.promise(() => statesOf(api))
    const inProgressAfter = after.get("INPROGRESS") ?? 0
    if (all ? inProgressAfter !== n : ENDED.some((state) => after.has(state))) {
      return yield* Effect.dieMessage(`after the window: ${describe(after)}`)
    }
    // Runs that were still starting: the mean of the counts before and after the window.
    const measured = all ? n : (inProgress + inProgressAfter) / 2
    if (all && busy.agentCount !== n) console.log(`note: ${busy.agentCount} agent processes seen for ${n} runs`)

    const runMinutes = (measured * WINDOW_S) / 60
    const perRunMinute = busy.server / runMinutes
    const idlePerMinute = idle.server / (WINDOW_S / 60)
    const cpuShare = busy.server / (WINDOW_S * 1_000)
    console.log(
      `busy: server CPU ${number(busy.server)} ms over ${WINDOW_S} s (${(cpuShare * 100).toFixed(1)}% of one CPU) = ` +
        `${number(perRunMinute, 1)} ms per run-minute; idle ${number(idle.server)} ms; agents ${number(busy.agents)} ms together; ` +
        `server RSS ${number(rss.now)} MB, peak ${number(rss.peak)} MB`
    )
    const partial = all
      ? ""
      : `NOT ALL RUNNING: only ${number(inProgress)} of ${number(n)} runs were INPROGRESS after ${startedIn} ` +
        `(${number(inProgressAfter)} after the window; the others still QUEUED or CLAIMED), the figure is per INPROGRESS run ` +
        `and includes the claims and starts of the others; `
    record({
      ...lowerIsBetter(
        `Server CPU per run-minute at ${number(n)} concurrent runs`,
        perRunMinute,
        null,
        "ms CPU per run-minute",
        all
          ? { text: "recorded (no goal in the issue)" }
          : { text: `all ${number(n)} runs INPROGRESS within ${startSeconds(n)} s (then recorded; no CPU goal in the issue)` },
        `${partial}bundled server on SQLite, process executor, a bash agent printing a message every ${TICK_S} s; ` +
          `server CPU ${number(busy.server)} ms over a ${WINDOW_S} s window (${(cpuShare * 100).toFixed(1)}% of one CPU), ` +
          `the idle server's ${number(idle.server)} ms over the same window (${number(idlePerMinute)} ms per minute; ` +
          `busy/idle ${idle.server === 0 ? "∞" : (busy.server / idle.server).toFixed(1)}×); ` +
          `the ${n} agents' own CPU ${number(busy.agents)} ms together; server RSS ${number(rss.now)} MB, peak ${number(rss.peak)} MB; ` +
          (all ? `${number(n)} runs INPROGRESS ${startedIn} after the first POST` : "")
      ),
      // Not met when the runs did not all start: the figure is not the one asked for.
      met: all
    })
  })

const program = Effect.gen(function*() {
  console.log(
    `Cost benchmark: ${CONCURRENCIES.map((n) => number(n)).join(", ")} concurrent runs, a ${WINDOW_S} s window, ` +
      `agents printing every ${TICK_S} s, node ${process.version}, ${cpus().length} CPUs`
  )
  yield* buildUnlessSkipped
  for (const n of CONCURRENCIES) yield* Effect.scoped(oneCase(n))
})

runBench("bench:cost", TIMEOUT_MS, program, cleanups)
