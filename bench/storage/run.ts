/**
 * Storage benchmark (issues 3 and 20). For SQLite and PostgreSQL: insert N runs (default 1,000,000;
 * set BENCH_RUNS to change, e.g. BENCH_RUNS=100000 for a quick run), then time the first page and a
 * page 10,000 rows deep of the run list (`RunStore.list` with a team admin's viewer, as
 * `GET /agent/runs` calls it, pages of 20) for every sort the API offers (`sort_by` updated_at,
 * created_at, title, agent; `sort_order` desc and asc), with and without two filters; run the same
 * page query as raw SQL through the driver in the same script (adapter overhead); and measure claim
 * throughput with 4 concurrent claimers.
 *
 *   npm run bench:storage                 # both adapters
 *   BENCH_ADAPTERS=sqlite npm run bench:storage
 *
 * Prints p50/p99 per case, the deep/first ratio (goal ≤ 1.5) and adapter/raw ratio (goal ≤ 1.2),
 * and records one result row per sort and adapter (bench/support/results.ts): ours = the deep
 * page's p50, baseline = the first page's p50. The first and the deep page are sampled in turns
 * (first, deep, first, …) after a warm-up, so that the machine's other work falls on both alike.
 * A watchdog (BENCH_TIMEOUT_SECONDS; by default 10 minutes plus 3 s per 1,000 runs) stops the
 * script, removes the SQLite file and drops the PostgreSQL database; so do SIGINT and SIGTERM.
 * Never part of `npm test`.
 */
import type { Access, Agent, Run} from "@agent-runs/core";
import { Ids, RunQuery, RunStore } from "@agent-runs/core"
import { PgStorage } from "@agent-runs/storage-pg"
import { SqliteStorage } from "@agent-runs/storage-sqlite"
import { SqlClient } from "@effect/sql"
import * as Statement from "@effect/sql/Statement"
import Database from "better-sqlite3"
import { DateTime, Effect, Either, Layer, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import { lowerIsBetter, record } from "../support/results.js"
import { storedRun } from "../support/runs.js"

const N = Number(process.env.BENCH_RUNS ?? 1_000_000)
const DEEP = 10_000
const REPEAT = Number(process.env.BENCH_REPEAT ?? 30)
const ADAPTERS = (process.env.BENCH_ADAPTERS ?? "sqlite,postgresql").split(",")
const PG_SERVER = process.env.AGENT_RUNS_TEST_PG ?? "postgres://postgres@127.0.0.1:5432"
const TIMEOUT_MS = 1_000 * Number(process.env.BENCH_TIMEOUT_SECONDS ?? 600 + Math.ceil((3 * N) / 1_000))

/** What the watchdog (and SIGINT, SIGTERM) must undo before the script exits: removes files, drops databases. */
const cleanups = new Set<() => Promise<void> | void>()

const stopNow = (why: string, code: number) => {
  console.error(`bench:storage: ${why}; cleaning up`)
  const pending = [...cleanups].map((cleanup) => Promise.resolve().then(cleanup).catch(() => undefined))
  // At most 20 s for the clean-up (a database that does not answer), then exit anyway.
  setTimeout(() => process.exit(code), 20_000).unref()
  void Promise.all(pending).then(() => process.exit(code))
}
const watchdog = setTimeout(() => stopNow(`did not finish within ${TIMEOUT_MS / 1000} s`, 2), TIMEOUT_MS)
watchdog.unref()
process.once("SIGINT", () => stopNow("interrupted", 130))
process.once("SIGTERM", () => stopNow("terminated", 143))

const uid = () => {
  const bytes = randomBytes(64)
  for (;;) {
    const id = Ids.formatUid22(bytes)
    if (id !== undefined) return id
  }
}
const team = uid() as Ids.TeamUid
const principal = uid() as Ids.PrincipalUid
const viewer: Access.Viewer = { principal_uid: principal, team_uid: team, role: "admin", instance_admin: false }

const STATES = ["SUCCEEDED", "FAILED", "CANCELLED", "ERROR", "BLOCKED"] as const
const SKILLS = [null, "acme/tools:review", "acme/tools:triage", "acme/web:deploy"] as const
const MODELS = ["model-a", "model-b", "model-c"]
const base = Date.UTC(2026, 0, 1)

/** A finished run, the i-th of the data set: varied states, skills, models and titles. */
const makeRun = (i: number, state: Run.RunItem["state"] = STATES[i % STATES.length]!): RunStore.StoredRun => {
  const created = base + i * 1_000
  const skill = SKILLS[i % SKILLS.length]!
  return storedRun(created, team, principal, {
    title: `Run ${(i * 7919) % 100_000} of the benchmark`,
    prompt: `Fix issue number ${i} in the repository`,
    state,
    updated_at: DateTime.unsafeMake(created + ((i * 37) % 5_000_000)),
    agent_config: {
      model_id: MODELS[i % MODELS.length]!,
      ...(skill === null ? {} : { skill_spec: skill as Agent.SkillSpec, name: skill.split(":")[1]! })
    },
    agent_skill: skill === null ? null : { name: skill.split(":")[1]!, description: "a skill", full_path: "SKILL.md" },
    source: i % 3 === 0 ? "WEBHOOK" : "API",
    metadata: i % 10 === 0 ? { batch: String(i % 100) } : {}
  })
}

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

/** p50 and p99 of samples, ms. */
interface Timing {
  readonly p50: number
  readonly p99: number
}

const summary = (samples: Array<number>): Timing => {
  samples.sort((a, b) => a - b)
  return { p50: percentile(samples, 50), p99: percentile(samples, 99) }
}

const elapsed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const start = performance.now()
    yield* effect
    return performance.now() - start
  })

const timeIt = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const samples: Array<number> = []
    for (let i = 0; i < REPEAT; i++) samples.push(yield* elapsed(effect))
    return summary(samples)
  })

/**
 * `a` and `b` timed in turns, REPEAT samples each after 3 unmeasured warm-up rounds: a burst of
 * the machine's other work then slows both alike instead of one of them.
 */
const timeInTurns = <A, B, E, R>(a: Effect.Effect<A, E, R>, b: Effect.Effect<B, E, R>) =>
  Effect.gen(function* () {
    const as: Array<number> = []
    const bs: Array<number> = []
    for (let i = 0; i < 3; i++) {
      yield* a
      yield* b
    }
    for (let i = 0; i < REPEAT; i++) {
      as.push(yield* elapsed(a))
      bs.push(yield* elapsed(b))
    }
    return [summary(as), summary(bs)] as const
  })

const parse = (params: Record<string, string | ReadonlyArray<string>>) =>
  Either.getOrThrow(RunQuery.parseRunListQuery(params))

const fmt = (ms: number) => `${ms.toFixed(2).padStart(8)} ms`

/** Runs the page query once more through the raw driver, with the SQL the adapter generated. */
type RawRunner = (sql: string, params: ReadonlyArray<unknown>) => Promise<unknown>

/** The database's plan for a statement (BENCH_EXPLAIN=1 prints it for every deep page). */
type Explainer = (sql: string, params: ReadonlyArray<unknown>) => Promise<string>

const bench = (name: string, raw: RawRunner, explain: Explainer) =>
  Effect.gen(function* () {
    const store = yield* RunStore.RunStore
    console.log(`\n== ${name}: inserting ${N.toLocaleString("en")} runs`)
    const insertStart = performance.now()
    const BATCH = 2_000
    for (let from = 0; from < N; from += BATCH) {
      const runs = []
      for (let i = from; i < Math.min(N, from + BATCH); i++) runs.push({ run: makeRun(i), events: [] })
      yield* store.create(runs)
    }
    const insertSeconds = (performance.now() - insertStart) / 1000
    // Fresh planner statistics, as autovacuum would gather on a live PostgreSQL server.
    const sql = yield* SqlClient.SqlClient
    yield* sql.onDialectOrElse({ pg: () => sql`ANALYZE`, orElse: () => Effect.void })
    console.log(`inserted in ${insertSeconds.toFixed(1)} s (${Math.round(N / insertSeconds).toLocaleString("en")} runs/s)`)

    console.log(`\n${"query".padEnd(44)} ${"first p50".padStart(11)} ${"first p99".padStart(11)} ${"deep p50".padStart(11)} ${"deep p99".padStart(11)}  deep/first  adapter/raw`)
    const ratios: Array<number> = []
    const overheads: Array<number> = []
    for (const sortBy of ["updated_at", "created_at", "title", "agent"]) {
      for (const order of ["desc", "asc"]) {
        for (const filtered of [false, true]) {
          const params: Record<string, string | ReadonlyArray<string>> = { sort_by: sortBy, sort_order: order }
          if (filtered) Object.assign(params, { state: ["SUCCEEDED", "FAILED"], model_id: "model-b" })
          // Walk to 10,000 rows deep with pages of 500, then time a page of 20 there.
          let cursor: string | undefined
          for (let seen = 0; seen < DEEP; seen += 500) {
            const page = yield* store.list(parse({ ...params, limit: "500", ...(cursor ? { cursor } : {}) }), viewer)
            cursor = page.page_info.next_cursor
          }
          const first = parse({ ...params, limit: "20" })
          const deep = parse({ ...params, limit: "20", ...(cursor ? { cursor } : {}) })
          const [firstT, deepT] = yield* timeInTurns(store.list(first, viewer), store.list(deep, viewer))
          // The same deep query, captured as SQL and run through the driver.
          const captured: Array<readonly [string, ReadonlyArray<unknown>]> = []
          yield* store.list(deep, viewer).pipe(
            Statement.withTransformer((statement) => {
              captured.push(statement.compile())
              return Effect.succeed(statement)
            })
          )
          const [sqlText, sqlParams] = captured[captured.length - 1]!
          const rawT = yield* timeIt(Effect.promise(() => raw(sqlText, sqlParams)))
          if (process.env.BENCH_EXPLAIN) console.log(yield* Effect.promise(() => explain(sqlText, sqlParams)))
          const label = `${sortBy} ${order}${filtered ? " + state,model_id" : ""}`
          const ratio = deepT.p50 / firstT.p50
          const overhead = deepT.p50 / rawT.p50
          ratios.push(ratio)
          overheads.push(overhead)
          console.log(
            `${label.padEnd(44)} ${fmt(firstT.p50)} ${fmt(firstT.p99)} ${fmt(deepT.p50)} ${fmt(deepT.p99)}  ${ratio.toFixed(2).padStart(10)}  ${overhead.toFixed(2).padStart(11)}`
          )
          const filters = filtered ? ", state=SUCCEEDED,FAILED&model_id=model-b" : ""
          record(lowerIsBetter(
            `List runs at ${N.toLocaleString("en")} runs, sort_by=${sortBy} ${order}${filters}, ${DEEP.toLocaleString("en")} deep vs first page (${name})`,
            deepT.p50,
            firstT.p50,
            "ms p50",
            { maxRatio: 1.5, text: "≤ 1.5× the first page" },
            `RunStore.list as GET /agent/runs calls it (team admin, limit 20); p99: deep ${deepT.p99.toFixed(2)} ms, ` +
              `first ${firstT.p99.toFixed(2)} ms; ${REPEAT} samples each, in turns; the same deep query as raw SQL ` +
              `p50 ${rawT.p50.toFixed(2)} ms`
          ))
        }
      }
    }
    console.log(`worst deep/first ${Math.max(...ratios).toFixed(2)} (goal ≤ 1.5); worst adapter/raw ${Math.max(...overheads).toFixed(2)} (goal ≤ 1.2)`)

    // Claim throughput: 5,000 queued runs in another team, 4 claimers at once.
    const QUEUED = 5_000
    const queued = []
    for (let i = 0; i < QUEUED; i++) {
      const run = makeRun(N + i, "QUEUED")
      queued.push({ run: { ...run, team_uid: uid() as Ids.TeamUid }, events: [] })
    }
    for (let from = 0; from < QUEUED; from += BATCH) yield* store.create(queued.slice(from, from + BATCH))
    const ids = yield* Ids.Ids
    let claimed = 0
    const claimStart = performance.now()
    const claimer = Effect.gen(function* () {
      for (;;) {
        const executionId = yield* ids.executionId
        const got = yield* store.claim({ worker_host: null, execution_id: executionId, now: Date.now(), lease_ms: 60_000 })
        if (got._tag === "None") return
        claimed++
      }
    })
    yield* Effect.all([claimer, claimer, claimer, claimer], { concurrency: "unbounded" })
    const claimSeconds = (performance.now() - claimStart) / 1000
    console.log(`claims: ${claimed} by 4 concurrent claimers in ${claimSeconds.toFixed(2)} s = ${Math.round(claimed / claimSeconds)} claims/s`)
  })

const key = Redacted.make(new Uint8Array(randomBytes(32)))

const sqlite = Effect.gen(function* () {
  const dir = mkdtempSync(join(tmpdir(), "agent-runs-bench-"))
  const filename = join(dir, "bench.db")
  let db: Database.Database | undefined
  const removeDir = () => rmSync(dir, { recursive: true, force: true })
  cleanups.add(removeDir)
  const raw: RawRunner = async (sql, params) => {
    db ??= new Database(filename, { readonly: true })
    return db.prepare(sql).all(...(params as Array<unknown>))
  }
  const explain: Explainer = async (sql, params) => {
    db ??= new Database(filename, { readonly: true })
    const rows = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...(params as Array<unknown>)) as Array<{ detail: string }>
    return rows.map((r) => `    ${r.detail}`).join("\n")
  }
  yield* bench("SQLite", raw, explain).pipe(
    Effect.provide(Layer.mergeAll(SqliteStorage.layer({ filename, secretKey: key }), Ids.IdsLive)),
    Effect.ensuring(Effect.sync(() => {
      db?.close()
      removeDir()
      cleanups.delete(removeDir)
    }))
  )
})

const postgres = Effect.gen(function* () {
  const name = `agent_runs_bench_${Date.now()}`
  const admin = new pg.Client({ connectionString: `${PG_SERVER}/test` })
  yield* Effect.promise(() => admin.connect())
  yield* Effect.promise(() => admin.query(`CREATE DATABASE ${name}`))
  /** For the watchdog: a connection of its own (the script's may be busy or broken). */
  const dropDatabase = async () => {
    const client = new pg.Client({ connectionString: `${PG_SERVER}/test` })
    await client.connect()
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).finally(() => client.end())
  }
  cleanups.add(dropDatabase)
  const pool = new pg.Pool({ connectionString: `${PG_SERVER}/${name}`, max: 2 })
  const raw: RawRunner = (sql, params) => pool.query(sql, params as Array<unknown>)
  const explain: Explainer = async (sql, params) => {
    const result = await pool.query(`EXPLAIN (ANALYZE, COSTS OFF) ${sql}`, params as Array<unknown>)
    return result.rows.map((r: Record<string, string>) => `    ${r["QUERY PLAN"]}`).join("\n")
  }
  yield* bench("PostgreSQL", raw, explain).pipe(
    Effect.provide(Layer.mergeAll(PgStorage.layer({ url: Redacted.make(`${PG_SERVER}/${name}`), secretKey: key }), Ids.IdsLive)),
    Effect.ensuring(Effect.promise(async () => {
      await pool.end()
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await admin.end()
      cleanups.delete(dropDatabase)
    }))
  )
})

const program = Effect.gen(function* () {
  console.log(`storage benchmark: ${N.toLocaleString("en")} runs, ${REPEAT} samples per case, node ${process.version}`)
  if (ADAPTERS.includes("sqlite")) yield* sqlite
  if (ADAPTERS.includes("postgresql")) yield* postgres
})

Effect.runPromise(program).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
