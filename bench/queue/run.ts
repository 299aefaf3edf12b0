/**
 * Queue latency benchmark (issue 20): on PostgreSQL, how long a job waits between being added and
 * being picked up, ours against graphile-worker, each on a fresh database of the same server.
 *
 * - Ours: two replicas, as in a fleet: the API's (a PgStorage pool) creates runs through the core's
 *   `Runs.create`, as `POST /agent/runs` does; the other runs the real execution engine
 *   (`Dispatcher.layer`: the execution loop, its claims under leases, woken by NOTIFY, polling every
 *   second) with BENCH_QUEUE_CONCURRENCY (16) slots and the in-process scripted executor, whose
 *   agent exits at once. Latency: from just before `Runs.create` to the moment the engine hands the
 *   claimed run to the executor (`Executor.prepare`), i.e. after the claim and its plan.
 * - graphile-worker (its peer baseline; a devDependency for this only): `WorkerUtils.addJob` on a
 *   pool of its own, `run()` with the same concurrency and its default poll (2 s; it is woken by
 *   LISTEN/NOTIFY too), a task that returns at once. Latency: from just before `addJob` to the
 *   start of the task function.
 *
 * Both: pools of BENCH_QUEUE_POOL (10) connections on each side, BENCH_QUEUE_WARMUP (20) jobs first
 * (not measured), then BENCH_QUEUE_JOBS (300) jobs added at the same rate, paced: one every
 * BENCH_QUEUE_INTERVAL_MS (50 ms: 20 a second, a rate both sustain, as issue 34 asks; 2 ms, 500 a
 * second, measures ours mostly as a backlog) by the clock, each add started without waiting for
 * the one before (0: all at once). Neither side logs (graphile-worker's logger is silenced, ours is at None). Prints
 * p50/p90/p99/max and records two rows (p50, p99) for `npm run bench`.
 *
 * BENCH_QUEUE_TEAMS (1): the jobs are created by this many teams in turn, each of the same weight,
 * so that claims go by fair share across teams (docs/fair-share.md: with two or more teams waiting a
 * claim takes the clock's lock; with one, none). graphile-worker's jobs are the same either way.
 *
 * BENCH_QUEUE_AGENT: `none` (default; what is measured ends at the hand-over, so the executor then
 * fails the run at once, ERROR, as graphile-worker's task returns at once) or `scripted` (the
 * scripted agent runs `exit 0`: setup, start, transcript, outcome). BENCH_QUEUE_ONLY=ours skips the
 * baseline; BENCH_QUEUE_DEBUG=1 also prints the engine's claim durations and the last run's timeline.
 *
 *   npm run bench:queue
 *   BENCH_QUEUE_JOBS=200 npm run bench:queue        # a quick run
 *
 * PostgreSQL at 127.0.0.1:5432 (AGENT_RUNS_TEST_PG overrides the server URL); nothing listens.
 * A watchdog (BENCH_TIMEOUT_SECONDS, 300) stops the script and drops its databases; so do SIGINT
 * and SIGTERM. Never part of `npm test`.
 */
import { FileBlobStore } from "@agent-runs/blob-store-fs"
import { IdsLive, type RunId } from "@agent-runs/core/domain/Ids"
import { RunAgentRequest } from "@agent-runs/core/domain/Run"
import { Executor, ExecutorError } from "@agent-runs/core/ports/Executor"
import { RunStore } from "@agent-runs/core/ports/RunStore"
import { PgStorage } from "@agent-runs/storage-pg"
import { Context, DateTime, Effect, Layer, Redacted } from "effect"
import { Logger as GraphileLogger, makeWorkerUtils, run as runGraphile } from "graphile-worker"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { cpus, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
// The files themselves, not `@agent-runs/core/testing`, whose index brings in vitest.
import { engineLayer } from "../../packages/core/testing/Engine.js"
import { scriptedExecutor } from "../../packages/core/testing/ScriptedExecutor.js"
import { noRepos, quiet, runsService, seedTeam } from "../support/engine.js"
import { directories, dropDatabase, freshDatabase, SERVER, stopNow, watchdog } from "../support/postgres.js"
import { lowerIsBetter, record } from "../support/results.js"

const JOBS = Number(process.env.BENCH_QUEUE_JOBS ?? 300)
const WARMUP = Number(process.env.BENCH_QUEUE_WARMUP ?? 20)
const INTERVAL_MS = Number(process.env.BENCH_QUEUE_INTERVAL_MS ?? 50)
const CONCURRENCY = Number(process.env.BENCH_QUEUE_CONCURRENCY ?? 16)
const TEAMS = Math.max(1, Number(process.env.BENCH_QUEUE_TEAMS ?? 1))
const POOL = Number(process.env.BENCH_QUEUE_POOL ?? 10)
/** `none`: the executor takes the run and ends it at once (no agent); `scripted`: an in-process agent that exits at once. */
const AGENT = process.env.BENCH_QUEUE_AGENT ?? "none"
const TIMEOUT_MS = 1_000 * Number(process.env.BENCH_TIMEOUT_SECONDS ?? 300)
/** How long the jobs of one case may take to be picked up once all are added. */
const DRAIN_MS = 60_000

watchdog("queue", TIMEOUT_MS)

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Adds `count` jobs at the paced rate (each add started at its time, not after the one before) and
 * waits until every one was picked up; the latencies in ms, in the order added.
 */
const measure = async (
  label: string,
  count: number,
  add: (i: number) => Promise<string>,
  picked: Map<string, number>
): Promise<Array<number>> => {
  const added = new Map<string, number>()
  const adds: Array<Promise<void>> = []
  const start = performance.now()
  for (let i = 0; i < count; i++) {
    const due = start + i * INTERVAL_MS
    const wait = due - performance.now()
    if (wait >= 1) await sleep(wait)
    const at = performance.now()
    adds.push(add(i).then((id) => void added.set(id, at)))
  }
  await Promise.all(adds)
  const until = performance.now() + DRAIN_MS
  while ([...added.keys()].some((id) => !picked.has(id))) {
    if (performance.now() > until) throw new Error(`${label}: ${[...added.keys()].filter((id) => !picked.has(id)).length} jobs never picked up`)
    await sleep(5)
  }
  return [...added].map(([id, at]) => picked.get(id)! - at)
}

interface Figures { readonly p50: number; readonly p90: number; readonly p99: number; readonly max: number }
const figures = (latencies: ReadonlyArray<number>): Figures => {
  const sorted = [...latencies].sort((a, b) => a - b)
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
  return { p50: at(0.5), p90: at(0.9), p99: at(0.99), max: sorted[sorted.length - 1]! }
}
const show = (f: Figures) => `p50 ${f.p50.toFixed(2)} ms, p90 ${f.p90.toFixed(2)} ms, p99 ${f.p99.toFixed(2)} ms, max ${f.max.toFixed(2)} ms`

/** BENCH_QUEUE_DEBUG=1: how long each `RunStore.claim` of the engine took. */
const claimTimes: Array<number> = []
const timedClaims = <C extends Context.Context<RunStore>>(ctx: C): C => {
  const inner = Context.get(ctx, RunStore)
  return Context.add(ctx, RunStore, {
    ...inner,
    claim: (p) => Effect.suspend(() => {
      const t = performance.now()
      return inner.claim(p).pipe(Effect.ensuring(Effect.sync(() => claimTimes.push(performance.now() - t))))
    })
  }) as C
}

/** Ours: runs created through the API replica's Runs service, claimed by the other replica's engine. */
const ours = async (): Promise<Figures> => {
  const name = await freshDatabase("agent_runs_bench_queue")
  const url = Redacted.make(`${SERVER}/${name}`)
  const key = () => Redacted.make(new Uint8Array(randomBytes(32)))
  const picked = new Map<string, number>()
  const program = Effect.gen(function*() {
    const api = yield* Layer.build(PgStorage.layer({ url, secretKey: key(), maxConnections: POOL }))
    const claimer = yield* Layer.build(PgStorage.layer({ url, secretKey: key(), maxConnections: POOL }))
    const scripted = yield* scriptedExecutor
    // The engine hands the claimed run to the executor: that moment is when the job is picked up.
    const executor = Layer.effect(
      Executor,
      Effect.map(Executor, (inner) => ({
        ...inner,
        prepare: (spec: Parameters<typeof inner.prepare>[0]) =>
          Effect.suspend(() => {
            picked.set(spec.run_id, performance.now())
            return AGENT === "scripted" ? inner.prepare(spec) : Effect.fail(new ExecutorError({ message: "bench: no agent" }))
          })
      }))
    ).pipe(Layer.provide(scripted.layer))
    // Transcripts go to files, as the server's do.
    const blobs = mkdtempSync(join(tmpdir(), "bench-queue-"))
    directories.add(blobs)
    yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(blobs, { recursive: true, force: true })))
    yield* Layer.buildWithScope(
      engineLayer(
        { concurrency: CONCURRENCY },
        Layer.mergeAll(executor, FileBlobStore.layer({ root: blobs }), noRepos)
      ).pipe(Layer.provide(Layer.succeedContext(process.env.BENCH_QUEUE_DEBUG === "1" ? timedClaims(claimer) : claimer))),
      yield* Effect.scope
    )
    // TEAMS teams create them in turn, each under no admission limit; the run-creation quota is per team.
    const runs = yield* runsService.pipe(Effect.provide(api))
    const viewers = yield* Effect.all(Array.from({ length: TEAMS }, () => seedTeam.pipe(Effect.provide(api), Effect.provide(IdsLive))))
    const add = (i: number) =>
      Effect.runPromise(
        runs.create(viewers[i % TEAMS]!, new RunAgentRequest({ prompt: "exit 0", title: `job ${i}` })).pipe(
          Effect.map((r) => r.run_id),
          quiet
        )
      )
    yield* Effect.promise(() => measure("ours (warm-up)", WARMUP, add, picked))
    const latencies = yield* Effect.promise(() => measure("ours", JOBS, add, picked))
    if (process.env.BENCH_QUEUE_DEBUG === "1") {
      const store = Context.get(api, RunStore)
      yield* Effect.sleep("3 seconds")
      console.log(`claims: ${claimTimes.length} (found or empty), ${show(figures(claimTimes))}`)
      const last = [...picked.keys()].at(-1)!
      for (const e of yield* store.timeline(last as RunId, 0)) console.log(`${e.event_type} ${DateTime.formatIso(e.occurred_at)}`)
    }
    return latencies
  })
  try {
    return figures(await Effect.runPromise(program.pipe(Effect.scoped, quiet)))
  } finally {
    await dropDatabase(name)
  }
}

/** graphile-worker: jobs added through WorkerUtils on a pool of their own, run by `run()`. */
const graphile = async (): Promise<Figures> => {
  const name = await freshDatabase("agent_runs_bench_queue")
  const connectionString = `${SERVER}/${name}`
  const logger = new GraphileLogger(() => () => {})
  const picked = new Map<string, number>()
  const runner = await runGraphile({
    connectionString,
    maxPoolSize: POOL,
    concurrency: CONCURRENCY,
    noHandleSignals: true,
    logger,
    taskList: {
      bench: async (payload) => {
        picked.set((payload as { id: string }).id, performance.now())
      }
    }
  })
  const utils = await makeWorkerUtils({ connectionString, maxPoolSize: POOL, logger })
  try {
    let next = 0
    const add = async () => {
      const id = `job-${next++}`
      await utils.addJob("bench", { id })
      return id
    }
    await measure("graphile-worker (warm-up)", WARMUP, add, picked)
    return figures(await measure("graphile-worker", JOBS, add, picked))
  } finally {
    await utils.release()
    await runner.stop()
    await dropDatabase(name)
  }
}

const main = async () => {
  const pace = INTERVAL_MS > 0 ? `one every ${INTERVAL_MS} ms` : "all at once"
  console.log(`bench:queue: ${JOBS} jobs added ${pace}, ${CONCURRENCY} at a time, pools of ${POOL}, PostgreSQL ${SERVER}, agent ${AGENT}, ${TEAMS} team(s)`)
  console.log(`load average ${loadavg().map((l) => l.toFixed(2)).join(" ")} on ${cpus().length} CPUs`)
  const our = await ours()
  console.log(`ours (created → handed to the executor): ${show(our)}`)
  if (process.env.BENCH_QUEUE_ONLY === "ours") return
  const theirs = await graphile()
  console.log(`graphile-worker (add_job → task started): ${show(theirs)}`)
  const goal = { maxRatio: 2, text: "≤ 2× graphile-worker at a rate both sustain" }
  const notes = `${JOBS} jobs ${pace}, ${CONCURRENCY} workers, agent ${AGENT}; baseline graphile-worker 0.16.6; load ${loadavg()[0]!.toFixed(1)}`
  record(lowerIsBetter("Created → claimed on PostgreSQL, p50, vs graphile-worker", our.p50, theirs.p50, "ms", goal, notes))
  record(lowerIsBetter("Created → claimed on PostgreSQL, p99, vs graphile-worker", our.p99, theirs.p99, "ms", goal, notes))
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    stopNow("queue", "failed", 1)
  }
)
