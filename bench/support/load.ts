/**
 * The HTTP benchmarks' load generator and baseline (bench/http, bench/ingress): C keep-alive
 * loopback connections (one node:http Agent) sending requests back to back for S seconds, the
 * latencies of what was sent in time, the responses by status; a bare `node:http` server on a
 * worker thread of the script (as the server under test has its own process); the report's
 * columns. Settings from the environment: BENCH_SECONDS (10), BENCH_WARMUP_SECONDS (1),
 * BENCH_CONNECTIONS (50).
 */
import { Effect } from "effect"
import { Agent, request } from "node:http"
import { Worker } from "node:worker_threads"

/** How long each case runs, after how long a warm-up, over how many connections. */
export const settings = {
  seconds: Number(process.env.BENCH_SECONDS ?? 10),
  warmupSeconds: Number(process.env.BENCH_WARMUP_SECONDS ?? 1),
  connections: Number(process.env.BENCH_CONNECTIONS ?? 50)
} as const

/** One request to send. */
export interface Target {
  readonly port: number
  readonly method: "GET" | "POST"
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly body?: string
}

/** The next request to send; `undefined` when there are none left (that connection stops). */
export type Requests = () => Target | undefined

/** The same request over and over. */
export const repeat = (target: Target): Requests => () => target

/** Each of `targets` once, in order. */
export const each = (targets: ReadonlyArray<Target>): Requests => {
  let next = 0
  return () => targets[next++]
}

/** `targets` in order, round and round. */
export const cycle = (targets: ReadonlyArray<Target>): Requests => {
  let next = 0
  return () => targets[next++ % targets.length]
}

export interface Measurement {
  /** Responses received. */
  readonly requests: number
  readonly seconds: number
  /** Latency percentiles in ms (NaN when latencies were not recorded). */
  readonly p50: number
  readonly p99: number
  /** Responses by status code. */
  readonly statuses: ReadonlyMap<number, number>
  /** Whether the requests ran out before the time was up. */
  readonly exhausted: boolean
}

const send = (agent: Agent, target: Target): Promise<number> =>
  new Promise((resolve, reject) => {
    const req = request(
      { agent, host: "127.0.0.1", port: target.port, method: target.method, path: target.path, headers: target.headers },
      (res) => {
        res.on("data", () => {})
        res.on("end", () => resolve(res.statusCode ?? 0))
        res.on("error", reject)
      }
    )
    req.on("error", reject)
    req.end(target.body)
  })

/** `connections` loops sending the next request back to back for `seconds`; latencies only with `record`. */
export const drive = async (next: Requests, seconds: number, connections: number, record: boolean): Promise<Measurement> => {
  const agent = new Agent({ keepAlive: true, maxSockets: connections })
  const latencies: Array<number> = []
  const statuses = new Map<number, number>()
  let requests = 0
  let exhausted = false
  const start = performance.now()
  const deadline = start + seconds * 1000
  const loop = async () => {
    while (performance.now() < deadline) {
      const target = next()
      if (target === undefined) {
        exhausted = true
        return
      }
      const sent = performance.now()
      const status = await send(agent, target)
      if (record) latencies.push(performance.now() - sent)
      requests++
      statuses.set(status, (statuses.get(status) ?? 0) + 1)
    }
  }
  await Promise.all(Array.from({ length: connections }, loop))
  const elapsed = (performance.now() - start) / 1000
  agent.destroy()
  latencies.sort((a, b) => a - b)
  const at = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? NaN
  return { requests, seconds: elapsed, p50: at(0.5), p99: at(0.99), statuses, exhausted }
}

/** A warm-up (connections opened, code paths compiled), then the measured run. */
export const measure = async (next: Requests): Promise<Measurement> => {
  if (settings.warmupSeconds > 0) await drive(next, settings.warmupSeconds, settings.connections, false)
  return drive(next, settings.seconds, settings.connections, true)
}

/**
 * A bare node:http server on a worker thread for the scope: `source` (CommonJS, evaluated in the
 * worker; or a script file's URL, run from its own directory) is given `workerData`, listens on
 * 127.0.0.1 and posts its port to the parent. A worker that fails or exits before that is a defect.
 */
export const startBare = (source: string | URL, workerData: unknown) =>
  Effect.acquireRelease(
    Effect.async<{ readonly worker: Worker; readonly port: number }>((resume) => {
      const worker = new Worker(source, { eval: typeof source === "string", workerData })
      let settled = false
      const settle = (effect: Effect.Effect<{ readonly worker: Worker; readonly port: number }>) => {
        if (settled) return
        settled = true
        resume(effect)
      }
      worker.once("message", (port: number) => settle(Effect.succeed({ worker, port })))
      worker.once("error", (error) => settle(Effect.die(error)))
      worker.once("exit", (code) => settle(Effect.dieMessage(`the worker exited (code ${code}) before it listened`)))
    }),
    ({ worker }) => Effect.promise(() => worker.terminate())
  )

// ---------------------------------------------------------------------------------------------
// Report

export const number = (n: number, digits = 0) => n.toLocaleString("en", { minimumFractionDigits: digits, maximumFractionDigits: digits })
export const rate = (m: Measurement) => m.requests / m.seconds
export const statusText = (m: Measurement) => [...m.statuses].map(([status, count]) => `${status}×${count}`).join(" ")

/** A table row: the case, which server, req/s, p50 and p99 ms, the statuses. */
export const row = (label: string, server: string, m: Measurement, width = 34) =>
  `${label.padEnd(width)} ${server.padEnd(5)} ${number(rate(m)).padStart(9)} ${number(m.p50, 2).padStart(9)} ${
    number(m.p99, 2).padStart(9)
  }   ${statusText(m)}`

/** The table's header row. */
export const header = (width = 34) =>
  `${"case".padEnd(width)} ${"".padEnd(5)} ${"req/s".padStart(9)} ${"p50 ms".padStart(9)} ${"p99 ms".padStart(9)}   statuses`

/**
 * Runs a benchmark's program: exits 0 when it succeeds, 1 when it fails, 2 when it takes longer
 * than `watchdogMs`; on a failure or the watchdog, `cleanups` run first (best effort, in order).
 */
export const runBench = <E>(
  name: string,
  watchdogMs: number,
  program: Effect.Effect<void, E>,
  cleanups: ReadonlyArray<() => void> = []
) => {
  const cleanUp = () => {
    for (const cleanup of cleanups) {
      try {
        cleanup()
      } catch {
        // best effort
      }
    }
  }
  const watchdog = setTimeout(() => {
    console.error(`${name} did not finish within ${watchdogMs / 1000} s; stopping`)
    cleanUp()
    process.exit(2)
  }, watchdogMs)
  watchdog.unref()
  Effect.runPromise(program).then(
    () => process.exit(0),
    (error) => {
      console.error(error)
      cleanUp()
      process.exit(1)
    }
  )
}
