/**
 * Scheduler benchmark (issues 6 and 20). For SQLite and PostgreSQL: BENCH_SCHEDULES (10,000)
 * active schedules, spread over BENCH_TEAMS (100) teams of one member each, all due at the same
 * instant T (a daily 6-field cron naming T's second, minute and hour in UTC). The scheduler's loop
 * (`Scheduler.layer`, default settings: batches of 250 due schedules, 2 batches at once; or
 * BENCH_BATCH and BENCH_CONCURRENCY) is started before T, does its first pass (nothing due; every
 * expression parsed and cached), and sleeps until T. Measured: from T to the `created_at` of the
 * last run created (every schedule's run, checked by count); also the time to the first run, and
 * when the last run was seen committed (polled every 50 ms). On PostgreSQL a second case runs two
 * schedulers at once (two replicas in one process, each with its own connection pool) on a fresh
 * set of schedules.
 *
 * Baseline, in the same script on the same kind of database: the same number of runs (the same
 * QUEUED run with its three creation events) written straight through `RunStore.create` in
 * batches of 500, the cheapest way to put that many runs into storage; and the same runs created
 * one by one through `Runs.createOnce` with a ScheduleTick key each, sequentially (a tick's own
 * write path, without the scheduler), so that the ratios tell what the scheduler costs over
 * storage and what batching gains. BENCH_BASELINES=0 skips both (to profile the scheduler alone:
 * `node --cpu-prof`, then bench/support/profile-summary.ts).
 *
 * Reports to `npm run bench` (bench/support/results.ts) one row per adapter: tick → last run
 * created against the batched baseline; goals ≤ 2 s on SQLite, ≤ 3 s on PostgreSQL.
 *
 *   npm run bench:scheduler
 *   BENCH_ADAPTERS=sqlite BENCH_SCHEDULES=1000 npm run bench:scheduler
 *
 * Never part of `npm test`; stops by itself, removes its database file and drops its databases.
 */
import { type Access, type EnvironmentStore, Health, Identity, IdentityStore, Ids, Run, Runs, RunStore, Schedule, Scheduler, ScheduleStore } from "@agent-runs/core"
import { PgStorage } from "@agent-runs/storage-pg"
import { freshDatabase } from "@agent-runs/storage-pg/testing"
import { SqliteStorage } from "@agent-runs/storage-sqlite"
import { SqlClient } from "@effect/sql"
import { DateTime, Duration, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { Session } from "node:inspector"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { lowerIsBetter, record } from "../support/results.js"
import { storedRun } from "../support/runs.js"

const SCHEDULES = Number(process.env.BENCH_SCHEDULES ?? 10_000)
const TEAMS = Math.max(1, Math.min(SCHEDULES, Number(process.env.BENCH_TEAMS ?? 100)))
const ADAPTERS = (process.env.BENCH_ADAPTERS ?? "sqlite,postgresql").split(",")
/**
 * T is this long after seeding starts: seeding (about 1 ms a schedule) and the scheduler's first
 * pass (every expression parsed) are over well before it; the slack is printed.
 */
const LEAD_MS = 10_000 + SCHEDULES * 2
const BATCH = 500
/** The scheduler's settings: the defaults, or BENCH_BATCH schedules a batch and BENCH_CONCURRENCY batches at once. */
const SETTINGS: Scheduler.SchedulerSettings = {
  ...Scheduler.defaultSettings,
  batchSize: Number(process.env.BENCH_BATCH ?? Scheduler.defaultSettings.batchSize),
  concurrency: Number(process.env.BENCH_CONCURRENCY ?? Scheduler.defaultSettings.concurrency)
}
const BASELINES = process.env.BENCH_BASELINES !== "0"

const key = Redacted.make(new Uint8Array(randomBytes(32)))

const uid = () => {
  for (;;) {
    const id = Ids.formatUid22(randomBytes(64))
    if (id !== undefined) return id
  }
}

interface World {
  readonly members: ReadonlyArray<Access.Viewer>
}

/** Teams with one member each, able to hold every run admitted (none waits PENDING). */
const seedTeams = Effect.gen(function*() {
  const identities = yield* IdentityStore.IdentityStore
  const members: Array<Access.Viewer> = []
  const at = DateTime.unsafeMake(Date.now())
  for (let i = 0; i < TEAMS; i++) {
    const team = uid() as Ids.TeamUid
    const principal = uid() as Ids.PrincipalUid
    yield* identities.createTeam(
      new Identity.Team({
        uid: team,
        name: `bench ${i}`,
        features: { metadata_filtering: true, scheduled_agents: true },
        max_concurrent_runs: Math.min(10_000, SCHEDULES),
        created_at: at
      })
    )
    yield* identities.createPrincipal(
      new Identity.Principal({
        uid: principal,
        type: "user",
        display_name: `member ${i}`,
        instance_admin: false,
        memberships: [{ team_uid: team, role: "member" }],
        created_at: at
      })
    )
    members.push({ principal_uid: principal, team_uid: team, role: "member", instance_admin: false })
  }
  return { members } satisfies World
})

/** `SCHEDULES` schedules due at `t` (and, being daily, not again for a day), created now. */
const seedSchedules = (world: World, t: number) =>
  Effect.gen(function*() {
    const store = yield* ScheduleStore.ScheduleStore
    const d = new Date(t)
    const cron = `${d.getUTCSeconds()} ${d.getUTCMinutes()} ${d.getUTCHours()} * * *`
    const now = Date.now()
    const at = DateTime.unsafeMake(now)
    const stored: Array<ScheduleStore.StoredSchedule> = []
    for (let i = 0; i < SCHEDULES; i++) {
      const member = world.members[i % world.members.length]!
      const by = { type: "user" as const, uid: member.principal_uid, display_name: "member" }
      stored.push({
        team_uid: member.team_uid,
        creator_uid: member.principal_uid,
        editor_role: "member",
        state: { status: "active", lastTickAt: now },
        item: new Schedule.ScheduledAgentItem({
          id: uid() as Ids.ScheduleId,
          name: `schedule ${i}`,
          cron_schedule: cron,
          timezone: "UTC",
          enabled: true,
          prompt: `Scheduled job ${i}`,
          agent_config: {},
          environment: null,
          created_at: at,
          updated_at: at,
          created_by: by,
          updated_by: by,
          scope: { type: "Team", uid: member.team_uid },
          history: { last_ran: null, next_run: null, recent_runs: [] },
          last_spawn_error: null
        })
      })
    }
    yield* Effect.forEach(stored, store.create, { concurrency: 8, discard: true })
    return stored
  })

/**
 * How many ticks have their run committed: the small `schedule_ticks` table (one key per run
 * created), cheap enough to poll every 50 ms without slowing the scheduler that shares the
 * database (counting `runs` scans every run's row).
 */
const countTicks = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ n: number | string }>`SELECT count(*) AS n FROM schedule_ticks`
  return Number(row!.n)
})

const countRuns = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ n: number | string; first: number | string | null; last: number | string | null }>`
    SELECT count(*) AS n, min(created_at) AS first, max(created_at) AS last FROM runs WHERE source = 'SCHEDULED_AGENT'`
  return { n: Number(row!.n), first: Number(row!.first), last: Number(row!.last) }
})

/**
 * With BENCH_PROFILE=<file.cpuprofile>: a CPU profile of the process from just before T until
 * every run is committed (seeding left out); summarize it with bench/support/profile-summary.ts.
 * Answers the effect that stops it and writes the file.
 */
const startProfile = (t: number) =>
  Effect.gen(function*() {
    const file = process.env.BENCH_PROFILE
    if (file === undefined || file === "") return Effect.void
    const session = new Session()
    session.connect()
    const post = (method: string) =>
      Effect.async<unknown>((resume) => session.post(method, (_error, result) => resume(Effect.succeed(result))))
    yield* Effect.sleep(Duration.millis(Math.max(0, t - Date.now() - 200)))
    yield* post("Profiler.enable")
    yield* post("Profiler.start")
    return Effect.gen(function*() {
      const result = (yield* post("Profiler.stop")) as { readonly profile: unknown }
      writeFileSync(file, JSON.stringify(result.profile))
      session.disconnect()
      console.log(`profile of T → all committed written to ${file}`)
    })
  })

const fmt = (ms: number) => `${(ms / 1000).toFixed(2).padStart(7)} s`

/**
 * Starts one scheduler on the storage of the context, and one more on each of `more` (its own
 * connection pool), before T; waits until every schedule has its run; ms from T.
 */
const fireAll = <E>(more: ReadonlyArray<Layer.Layer<StorageServices, E>>) =>
  Effect.gen(function*() {
    const world = yield* seedTeams
    const t = Math.ceil((Date.now() + LEAD_MS) / 1000) * 1000
    const seeded = performance.now()
    yield* seedSchedules(world, t)
    const seedSeconds = (performance.now() - seeded) / 1000
    const before = yield* countTicks
    const scope = yield* Scope.make()
    const replica = Scheduler.layer.pipe(
      Layer.provide(Runs.Runs.Default),
      Layer.provide(Layer.succeed(Scheduler.SchedulerConfig, SETTINGS)),
      Layer.provide(Health.layer)
    )
    yield* Layer.buildWithScope(replica, scope)
    for (const storage of more) yield* Layer.buildWithScope(replica.pipe(Layer.provide(storage)), scope)
    // The first pass (nothing due; every expression parsed, next fire times cached) is over by now.
    yield* Effect.sleep(Duration.seconds(2))
    const slack = t - Date.now()
    if (slack <= 0) return yield* Effect.dieMessage(`seeding took too long: T had passed (${seedSeconds.toFixed(1)} s)`)
    const profiling = yield* startProfile(t)
    let ticks = yield* countTicks
    while (ticks - before < SCHEDULES) {
      // (The runs' own created_at says when the last was made; polling says when all were committed.)
      yield* Effect.sleep(Duration.millis(50))
      ticks = yield* countTicks
      if (Date.now() > t + 600_000) return yield* Effect.dieMessage(`only ${ticks - before} runs after 10 minutes`)
    }
    const committed = Date.now() - t
    const runs = yield* countRuns
    yield* profiling
    yield* Scope.close(scope, Exit.void)
    return { toLast: runs.last - t, toFirst: runs.first - t, committed, slack }
  })

/** The baselines: the same runs written in batches through RunStore.create, and one by one through Runs.createOnce. */
const baselines = Effect.gen(function*() {
  if (!BASELINES) return { batched: Number.NaN, oneByOne: Number.NaN }
  const store = yield* RunStore.RunStore
  const world = yield* seedTeams
  const runs: Array<RunStore.NewRun> = []
  const now = Date.now()
  for (let i = 0; i < SCHEDULES; i++) {
    const member = world.members[i % world.members.length]!
    const run = storedRun(now, member.team_uid, member.principal_uid, {
      state: "QUEUED",
      source: "SCHEDULED_AGENT",
      prompt: `Scheduled job ${i}`,
      title: `Scheduled job ${i}`,
      updated_at: DateTime.unsafeMake(now)
    })
    const execution_id = yield* (yield* Ids.Ids).executionId
    runs.push({
      run,
      events: (["run_created", "run_pending", "run_queued"] as const).map((event_type) => ({ event_type, occurred_at: now, execution_id }))
    })
  }
  const start = performance.now()
  for (let i = 0; i < runs.length; i += BATCH) yield* store.create(runs.slice(i, i + BATCH))
  const batched = performance.now() - start

  const service = yield* Runs.Runs
  const scheduleId = uid() as Ids.ScheduleId
  const one = performance.now()
  for (let i = 0; i < SCHEDULES; i++) {
    const member = world.members[i % world.members.length]!
    yield* service.createOnce(
      [{
        viewer: member,
        request: new Run.RunAgentRequest({ prompt: `Scheduled job ${i}`, team: true }),
        options: { source: "SCHEDULED_AGENT", schedule: { schedule_id: scheduleId, schedule_name: "bench", cron_schedule: "* * * * *" } }
      }],
      { _tag: "ScheduleTick", schedule_id: scheduleId, scheduled_for: i }
    )
  }
  const oneByOne = performance.now() - one
  return { batched, oneByOne }
})

interface Fired {
  readonly toLast: number
  readonly toFirst: number
  readonly committed: number
  readonly slack: number
}

const report = (
  name: string,
  results: ReadonlyArray<readonly [string, Fired]>,
  base: { batched: number; oneByOne: number },
  goalSeconds: number
) => {
  console.log(`\n== ${name}: ${SCHEDULES.toLocaleString("en")} schedules over ${TEAMS} teams, all due at the same instant`)
  console.log(`baseline: RunStore.create in batches of ${BATCH}: ${fmt(base.batched)}  (${Math.round(SCHEDULES / (base.batched / 1000)).toLocaleString("en")} runs/s)`)
  console.log(`baseline: Runs.createOnce one by one:          ${fmt(base.oneByOne)}  (${Math.round(SCHEDULES / (base.oneByOne / 1000)).toLocaleString("en")} runs/s)`)
  for (const [label, r] of results) {
    console.log(
      `${label.padEnd(26)} tick → first run ${fmt(r.toFirst)}, tick → last run ${fmt(r.toLast)}  ` +
        `(${Math.round(SCHEDULES / (r.toLast / 1000)).toLocaleString("en")} runs/s; ` +
        `×${(r.toLast / base.batched).toFixed(1)} the batched baseline, ×${(r.toLast / base.oneByOne).toFixed(2)} one by one; ` +
        `all committed ${fmt(r.committed)}; idle ${(r.slack / 1000).toFixed(1)} s before T)`
    )
  }
  const [, one] = results[0]!
  const others = results.slice(1).map(([label, r]) => `${label}: ${(r.toLast / 1000).toFixed(2)} s`)
  record(lowerIsBetter(
    `${SCHEDULES.toLocaleString("en")} schedules due at one instant: tick → last run created (${name})`,
    one.toLast / 1000,
    Number.isNaN(base.batched) ? null : base.batched / 1000,
    "s",
    { max: goalSeconds, text: `≤ ${goalSeconds} s` },
    [
      `baseline: the same runs through RunStore.create in batches of ${BATCH}`,
      `all committed (polled) at ${(one.committed / 1000).toFixed(2)} s`,
      `Runs.createOnce one by one: ${(base.oneByOne / 1000).toFixed(2)} s`,
      ...others
    ].join("; ")
  ))
}

const services = Runs.Runs.Default.pipe(Layer.provideMerge(Ids.IdsLive))

/** What a storage adapter's layer provides that the scheduler and the services need. */
type StorageServices = RunStore.RunStore | ScheduleStore.ScheduleStore | IdentityStore.IdentityStore | EnvironmentStore.EnvironmentStore

const sqlite = Effect.scoped(Effect.gen(function*() {
  const dir = yield* Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "agent-runs-bench-"))),
    (path) => Effect.sync(() => rmSync(path, { recursive: true, force: true }))
  )
  const storage = (name: string) => SqliteStorage.layer({ filename: join(dir, name), secretKey: key })
  const base = yield* baselines.pipe(Effect.provide(services.pipe(Layer.provideMerge(storage("baseline.db")))))
  const one = yield* fireAll([]).pipe(Effect.provide(services.pipe(Layer.provideMerge(storage("scheduler.db")))))
  report("SQLite", [["one scheduler", one]], base, 2)
}))

const postgres = Effect.scoped(Effect.gen(function*() {
  const baseDb = yield* freshDatabase
  const oneDb = yield* freshDatabase
  const twoDb = yield* freshDatabase
  const storage = (url: string) => PgStorage.layer({ url: Redacted.make(url), secretKey: key })
  const base = yield* baselines.pipe(Effect.provide(services.pipe(Layer.provideMerge(storage(baseDb.url)))))
  const one = yield* fireAll([]).pipe(Effect.provide(services.pipe(Layer.provideMerge(storage(oneDb.url)))))
  const two = yield* fireAll([Layer.merge(storage(twoDb.url), Ids.IdsLive)]).pipe(Effect.provide(services.pipe(Layer.provideMerge(storage(twoDb.url)))))
  report("PostgreSQL", [["one scheduler", one], ["two schedulers (replicas)", two]], base, 3)
}))

const program = Effect.gen(function*() {
  console.log(`scheduler benchmark: ${SCHEDULES.toLocaleString("en")} schedules, node ${process.version}`)
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
