/**
 * Engine benchmark (issue 34): what one run costs the execution engine on PostgreSQL, from its
 * create to its settle, ours against graphile-worker on the same server: the statements sent per
 * run and the runs settled per second.
 *
 * - Ours: one replica (one PgStorage pool of BENCH_ENGINE_POOL, 20, connections) creates runs
 *   through the core's `Runs.create`, as `POST /agent/runs` does, and runs the real execution
 *   engine (`engineLayer`: the loop, its claims under leases woken by NOTIFY, the lease sweep, the
 *   debug windows) with BENCH_ENGINE_CONCURRENCY (16) slots and the in-process scripted executor,
 *   whose agent exits 0 at once (setup, start, outcome: SUCCEEDED; no follow-ups). A run is settled
 *   when the engine's write of its terminal state returns (`RunStore.update`).
 * - graphile-worker 0.16.6 (the peer baseline): one pool of the same size shared by
 *   `makeWorkerUtils` and `run()` (same concurrency, a task that returns at once); a job is settled
 *   at its `job:complete` event (after `complete_job`).
 *
 * Each side: BENCH_ENGINE_WARMUP (10) jobs first, settled and not measured; then BENCH_ENGINE_IDLE_MS
 * (3,000) of nothing, whose statements are the idle polls (the claim poll, the sweep; graphile's
 * poll); then BENCH_ENGINE_RUNS (1,000; `npm run bench` 200) jobs created as fast as
 * BENCH_ENGINE_CREATORS (16) creators go, one create after the other each, from the first create
 * to the last settle. Statements are counted by wrapping `pg`'s `Client.prototype.query`
 * (bench/support/pg-statements.ts) over that window; "without idle polls" takes off each
 * statement's idle rate over the window's length. The breakdown (every distinct statement,
 * normalized, per run) is printed for both; BENCH_ENGINE_TAIL_MS (1,500) after the last settle is
 * counted too, for what the engine still does after it (printed, not in the figure).
 *
 * Rows: statements per run (without idle polls; everything counted in the notes), goal ≤ 8; runs/s
 * from the first create to the last settle, goal ≥ 300 and ≥ 25% of graphile-worker's jobs/s.
 * BENCH_ENGINE_ONLY=ours skips the baseline.
 *
 *   npm run bench:engine
 *   BENCH_ENGINE_RUNS=200 npm run bench:engine        # a quick run
 *
 * PostgreSQL at 127.0.0.1:5432 (AGENT_RUNS_TEST_PG overrides the server URL), fresh databases
 * dropped after; nothing listens. A watchdog (BENCH_TIMEOUT_SECONDS, 300 + 0.25 per run) stops the
 * script and drops its databases; so do SIGINT and SIGTERM. Never part of `npm test`.
 */
import { FileBlobStore } from "@agent-runs/blob-store-fs"
import { IdsLive } from "@agent-runs/core/domain/Ids"
import { RunAgentRequest } from "@agent-runs/core/domain/Run"
import { isTerminal, type RunState } from "@agent-runs/core/domain/RunState"
import { RunStore } from "@agent-runs/core/ports/RunStore"
import { PgStorage } from "@agent-runs/storage-pg"
import { Context, Effect, Layer, Redacted } from "effect"
import { Logger as GraphileLogger, makeWorkerUtils, run as runGraphile } from "graphile-worker"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { cpus, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import pg from "pg"
// The files themselves, not `@agent-runs/core/testing`, whose index brings in vitest.
import { engineLayer } from "../../packages/core/testing/Engine.js"
import { scriptedExecutor } from "../../packages/core/testing/ScriptedExecutor.js"
import { noRepos, quiet, runsService, seedTeam } from "../support/engine.js"
import {
  breakdown,
  type Counts,
  installStatementCounter,
  minus,
  startCounting,
  stopCounting,
  total,
  withoutIdle
} from "../support/pg-statements.js"
import { directories, dropDatabase, freshDatabase, SERVER, stopNow, watchdog } from "../support/postgres.js"
import { higherIsBetter, lowerIsBetter, record } from "../support/results.js"

const RUNS = Number(process.env.BENCH_ENGINE_RUNS ?? 1_000)
const WARMUP = Number(process.env.BENCH_ENGINE_WARMUP ?? 10)
const CONCURRENCY = Number(process.env.BENCH_ENGINE_CONCURRENCY ?? 16)
const CREATORS = Number(process.env.BENCH_ENGINE_CREATORS ?? 16)
const POOL = Number(process.env.BENCH_ENGINE_POOL ?? 20)
const IDLE_MS = Number(process.env.BENCH_ENGINE_IDLE_MS ?? 3_000)
const TAIL_MS = Number(process.env.BENCH_ENGINE_TAIL_MS ?? 1_500)
const TIMEOUT_MS = 1_000 * Number(process.env.BENCH_TIMEOUT_SECONDS ?? 300 + RUNS / 4)
/** How long the measured jobs may take to settle once the first is created. */
const SETTLE_MS = Math.max(120_000, RUNS * 200)

watchdog("engine", TIMEOUT_MS)
installStatementCounter()

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** `count` calls of `create`, `creators` at a time, each creator one call after the other. */
const createAll = async (count: number, creators: number, create: (i: number) => Promise<void>): Promise<void> => {
  let next = 0
  await Promise.all(Array.from({ length: Math.min(creators, count) }, async () => {
    while (next < count) await create(next++)
  }))
}

/** Settles of the current phase; `expect(n)` resolves when n have settled (with the statements counted until then). */
const settles = () => {
  let settled = 0
  let target = Number.POSITIVE_INFINITY
  let onAll: (() => void) | undefined
  let window: Counts = new Map()
  let lastAt = 0
  let snapshot: () => Counts = () => new Map()
  return {
    settle: () => {
      settled++
      if (settled === target) {
        lastAt = performance.now()
        window = snapshot()
        onAll?.()
      }
    },
    /** Counts settles from zero; resolves at the n-th, with its time and the counts at that moment. */
    expect: (n: number, counts: () => Counts, label: string) => {
      settled = 0
      target = n
      snapshot = counts
      return new Promise<{ readonly at: number; readonly counts: Counts }>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${label}: ${n - settled} of ${n} jobs not settled after ${SETTLE_MS / 1000} s`)), SETTLE_MS)
        onAll = () => {
          clearTimeout(timer)
          resolve({ at: lastAt, counts: window })
        }
      })
    }
  }
}

interface Measured {
  readonly runsPerSecond: number
  readonly windowMs: number
  readonly counts: Counts
  readonly idle: Counts
  readonly tail: Counts
  /** Transactions by shape, over the window and its tail. */
  readonly transactions: Counts
  readonly outcomes: string
}

/**
 * One side: `warmUp` and then `measured` create jobs; `phase` counts their settles. The idle
 * statements are counted between the two.
 */
const measure = async (
  label: string,
  phase: ReturnType<typeof settles>,
  create: (i: number) => Promise<void>,
  outcomes: () => string
): Promise<Measured> => {
  const warm = phase.expect(WARMUP, () => new Map(), `${label} (warm-up)`)
  await createAll(WARMUP, CREATORS, create)
  await warm
  outcomes()
  await sleep(500)
  const idleCounter = startCounting()
  await sleep(IDLE_MS)
  const idle = idleCounter.snapshot()
  const counter = startCounting()
  const done = phase.expect(RUNS, counter.snapshot, label)
  const start = performance.now()
  await createAll(RUNS, CREATORS, create)
  const { at, counts } = await done
  await sleep(TAIL_MS)
  const tail = minus(counter.snapshot(), counts)
  const transactions = counter.transactions()
  stopCounting()
  const windowMs = at - start
  return { runsPerSecond: RUNS / (windowMs / 1000), windowMs, counts, idle, tail, transactions, outcomes: outcomes() }
}

/** Ours: one replica creates runs through `Runs.create` and executes them with the engine. */
const ours = async (): Promise<Measured> => {
  const name = await freshDatabase("agent_runs_bench_engine")
  const url = Redacted.make(`${SERVER}/${name}`)
  const phase = settles()
  const states = new Map<RunState, number>()
  const program = Effect.gen(function*() {
    const storage = yield* Layer.build(
      PgStorage.layer({ url, secretKey: Redacted.make(new Uint8Array(randomBytes(32))), maxConnections: POOL })
    )
    const store = Context.get(storage, RunStore)
    // The engine's write of a terminal state settles the run.
    const watched = Context.add(storage, RunStore, {
      ...store,
      update: (runId, guard, next, events) =>
        store.update(runId, guard, next, events).pipe(
          Effect.tap(() =>
            Effect.sync(() => {
              if (!isTerminal(next.item.state)) return
              states.set(next.item.state, (states.get(next.item.state) ?? 0) + 1)
              phase.settle()
            })
          )
        )
    })
    const scripted = yield* scriptedExecutor
    const blobs = mkdtempSync(join(tmpdir(), "bench-engine-"))
    directories.add(blobs)
    yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(blobs, { recursive: true, force: true })))
    yield* Layer.buildWithScope(
      engineLayer(
        { concurrency: CONCURRENCY },
        Layer.mergeAll(scripted.layer, FileBlobStore.layer({ root: blobs }), noRepos)
      ).pipe(Layer.provide(Layer.succeedContext(watched))),
      yield* Effect.scope
    )
    const runs = yield* runsService.pipe(Effect.provide(storage))
    const viewer = yield* seedTeam.pipe(Effect.provide(storage), Effect.provide(IdsLive))
    const create = (i: number) =>
      Effect.runPromise(runs.create(viewer, new RunAgentRequest({ prompt: "exit 0", title: `run ${i}` })).pipe(Effect.asVoid, quiet))
    return yield* Effect.promise(() =>
      measure("ours", phase, create, () => {
        const line = [...states].map(([s, n]) => `${s} ${n}`).join(", ")
        states.clear()
        return line
      })
    )
  })
  try {
    return await Effect.runPromise(program.pipe(Effect.scoped, quiet))
  } finally {
    await dropDatabase(name)
  }
}

/** graphile-worker: one pool for adding and working, jobs added with `addJob`, run by `run()`. */
const graphile = async (): Promise<Measured> => {
  const name = await freshDatabase("agent_runs_bench_engine_gw")
  const pool = new pg.Pool({ connectionString: `${SERVER}/${name}`, max: POOL })
  // An idle client's error (its connection terminated by the server) would otherwise end the process.
  pool.on("error", (error) => console.error(`bench:engine: graphile-worker's pool: ${error.message}`))
  const logger = new GraphileLogger(() => () => {})
  const phase = settles()
  let succeeded = 0
  let failed = 0
  const runner = await runGraphile({
    pgPool: pool,
    concurrency: CONCURRENCY,
    noHandleSignals: true,
    logger,
    taskList: { bench: async () => {} }
  })
  runner.events.on("job:complete", ({ error }) => {
    if (error === undefined || error === null) succeeded++
    else failed++
    phase.settle()
  })
  const utils = await makeWorkerUtils({ pgPool: pool, logger })
  try {
    return await measure(
      "graphile-worker",
      phase,
      async (i) => void (await utils.addJob("bench", { i })),
      () => {
        const line = `succeeded ${succeeded}, failed ${failed}`
        succeeded = 0
        failed = 0
        return line
      }
    )
  } finally {
    await utils.release()
    await runner.stop()
    await pool.end()
    await dropDatabase(name)
  }
}

const report = (label: string, m: Measured) => {
  const busy = withoutIdle(m.counts, m.windowMs, m.idle, IDLE_MS)
  console.log(
    `\n${label}: ${RUNS} jobs in ${(m.windowMs / 1000).toFixed(2)} s = ${m.runsPerSecond.toFixed(1)} jobs/s (${m.outcomes}); ` +
      `${(total(m.counts) / RUNS).toFixed(2)} statements per job, ${(total(busy) / RUNS).toFixed(2)} without the idle polls ` +
      `(idle: ${(total(m.idle) / (IDLE_MS / 1000)).toFixed(1)} statements/s)`
  )
  for (const line of breakdown(m.counts, busy, RUNS)) console.log(`  ${line}`)
  if (m.transactions.size > 0) {
    console.log(`  transactions (window and tail, idle polls included), per job:`)
    for (const [shape, n] of [...m.transactions].sort((a, b) => b[1] - a[1])) {
      console.log(`  ${(n / RUNS).toFixed(2).padStart(8)} ${String(n).padStart(7)}  ${shape}`)
    }
  }
  console.log(`  idle polls over ${IDLE_MS} ms (per second):`)
  for (const line of breakdown(m.idle, m.idle, IDLE_MS / 1000).slice(1)) console.log(`  ${line}`)
  console.log(`  the ${TAIL_MS} ms after the last settle (idle polls included): ${total(m.tail)} statements`)
  for (const line of breakdown(m.tail, m.tail, 1).slice(1, -1)) console.log(`  ${line}`)
  return total(busy) / RUNS
}

const main = async () => {
  console.log(
    `bench:engine: ${RUNS} runs (${CREATORS} creators, as fast as they go), ${CONCURRENCY} at a time, one replica, pools of ${POOL}, PostgreSQL ${SERVER}`
  )
  console.log(`load average ${loadavg().map((l) => l.toFixed(2)).join(" ")} on ${cpus().length} CPUs`)
  const our = await ours()
  const ourStatements = report("ours (Runs.create → settled by the engine)", our)
  if (process.env.BENCH_ENGINE_ONLY === "ours") return
  const theirs = await graphile()
  const theirStatements = report("graphile-worker (addJob → job:complete)", theirs)
  const load = loadavg()[0]!.toFixed(1)
  const common = `${RUNS} jobs, ${CONCURRENCY} workers, one process, pools of ${POOL}; baseline graphile-worker 0.16.6; load ${load}`
  record(lowerIsBetter(
    "PostgreSQL statements per run, create → settled (no follow-ups), vs graphile-worker",
    ourStatements,
    theirStatements,
    "statements/run",
    { max: 8, text: "≤ 8" },
    `without idle polls; everything counted: ours ${(total(our.counts) / RUNS).toFixed(2)}, graphile-worker ${
      (total(theirs.counts) / RUNS).toFixed(2)
    }; ${common}`
  ))
  record(higherIsBetter(
    "Engine throughput on PostgreSQL, create → settled, concurrency 16, vs graphile-worker",
    our.runsPerSecond,
    theirs.runsPerSecond,
    "runs/s",
    { min: 300, maxRatio: 4, text: "≥ 25% of graphile-worker and ≥ 300 runs/s" },
    `${CREATORS} creators; ours ${our.outcomes}; graphile-worker ${theirs.outcomes}; ${common}`
  ))
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    stopNow("engine", "failed", 1)
  }
)
