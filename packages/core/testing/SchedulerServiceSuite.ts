/**
 * The scheduler (`Scheduler.make`'s passes) over a real storage adapter and the real `Runs` and
 * `Schedules` services, with the TestClock: schedules created through `Schedules`, time set, a
 * pass (or two replicas' passes at once) run, and the runs and history read back as a user would.
 * Each test has a database of its own (the scheduler sees every schedule of the database). Call
 * `schedulerServiceSuite(name, layer)` inside a vitest file; `layer` must make a fresh database
 * each time it is built.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, DateTime, Effect, Exit, Fiber, Layer, Logger, Option, TestClock } from "effect"
import type { Viewer } from "../src/domain/Access.js"
import { IdsLive, ScheduleId } from "../src/domain/Ids.js"
import { EnvironmentStore } from "../src/ports/EnvironmentStore.js"
import { RECORD_TICKS_TRIES, type ScheduleTiming, ScheduleStore, type StoredSchedule } from "../src/ports/ScheduleStore.js"
import { StaleWrite, StorageError } from "../src/ports/Storage.js"
import { RunStore } from "../src/ports/RunStore.js"
import { Runs } from "../src/services/Runs.js"
import { defaultQuotas, Quotas } from "../src/domain/Quotas.js"
import {
  CreateScheduledAgentRequest,
  PreviewScheduleRequest,
  ScheduledAgentItem,
  UpdateScheduledAgentRequest
} from "../src/domain/Schedule.js"
import * as Scheduler from "../src/engine/Scheduler.js"
import { Schedules } from "../src/services/Schedules.js"
import { makeEnvironment } from "./CatalogConformance.js"
import type { Stores } from "./Stores.js"
import { seedWorld } from "./World.js"

const SECOND = 1_000
const MINUTE = 60 * SECOND
/** 2026-05-01T09:00:30Z: schedules are created half a minute before a whole minute. */
const T0 = Date.UTC(2026, 4, 1, 9, 0, 30)
const iso = (ms: number) => new Date(ms).toISOString()

const settings: Scheduler.SchedulerSettings = { ...Scheduler.defaultSettings, catchUpGraceMs: 2 * SECOND }

const schedule = (viewer: Viewer, fields: Partial<ConstructorParameters<typeof CreateScheduledAgentRequest>[0]> = {}) =>
  Effect.flatMap(Schedules, (schedules) =>
    schedules.create(
      viewer,
      new CreateScheduledAgentRequest({
        name: "nightly",
        cron_schedule: "* * * * *",
        prompt: "Tidy up the repository",
        enabled: true,
        team: true,
        ...fields
      })
    ))

/** The runs a schedule started, oldest first, as its creator lists them (`schedule_id` filter). */
const runsOf = (viewer: Viewer, item: ScheduledAgentItem) =>
  Effect.flatMap(Runs, (runs) => runs.list(viewer, { schedule_id: item.id, limit: "100", sort_by: "created_at", sort_order: "asc" })).pipe(
    Effect.map((page) => page.runs)
  )

const read = (viewer: Viewer, item: ScheduledAgentItem) => Effect.flatMap(Schedules, (s) => s.get(viewer, item.id))

const at = (ms: number) => TestClock.setTime(ms)

const scheduledFor = (item: ScheduledAgentItem) => item.history.recent_runs.map((r) => DateTime.formatIso(r.scheduled_for))

/** The schedules service over another schedule store (the rest from the context). */
const schedulesOver = (store: ScheduleStore["Type"]) =>
  Effect.provide(Schedules, Schedules.Default.pipe(Layer.provide(Layer.succeed(ScheduleStore, store))))

/** Runs `effect` with the warnings it logs collected in `lines`. */
const collectingWarnings = <A, E, R>(effect: Effect.Effect<A, E, R>, lines: Array<string>) =>
  Effect.provide(
    effect,
    Logger.add(Logger.make(({ logLevel, message }) => {
      if (logLevel._tag === "Warning") lines.push((Array.isArray(message) ? message : [message]).map(String).join(" "))
    }))
  )

/** Registers the suite against one storage adapter; `storage` is built afresh for every test. */
export const schedulerServiceSuite = <E>(name: string, storage: Layer.Layer<Stores, E>): void => {
  const services = Layer.mergeAll(Runs.Default, Schedules.Default).pipe(
    Layer.provideMerge(Layer.mergeAll(storage, IdsLive, Layer.succeed(Scheduler.SchedulerConfig, settings)))
  )
  const test = (title: string, body: () => Effect.Effect<void, unknown, Layer.Layer.Success<typeof services>>) =>
    it.effect(title, () => Effect.provide(body(), services), 60_000)

  describe(`scheduler (${name})`, () => {
    test("fires each tick once, as the schedule's creator, with the schedule on the run; history follows", () =>
      Effect.gen(function*() {
        yield* at(T0)
        const world = yield* seedWorld()
        const created = yield* schedule(world.alice)
        expect(DateTime.formatIso(created.history.next_run!)).toBe("2026-05-01T09:01:00.000Z")
        const scheduler = yield* Scheduler.make

        yield* at(T0 + 10 * SECOND)
        expect((yield* scheduler.pass).started).toBe(0)
        yield* at(Date.UTC(2026, 4, 1, 9, 1, 0, 400))
        const report = yield* scheduler.pass
        expect(report).toMatchObject({ due: 1, started: 1, nextTickAt: Date.UTC(2026, 4, 1, 9, 1, 1) })
        expect(yield* scheduler.pass).toEqual({ due: 0, started: 0, nextTickAt: Date.UTC(2026, 4, 1, 9, 2) })

        const [run, ...others] = yield* runsOf(world.bob, created)
        expect(others).toEqual([])
        expect(run!.source).toBe("SCHEDULED_AGENT")
        expect(run!.schedule).toEqual({ schedule_id: created.id, schedule_name: "nightly", cron_schedule: "* * * * *" })
        expect(run!.prompt).toBe("Tidy up the repository")
        expect(run!.creator.uid).toBe(world.alice.principal_uid)
        expect(run!.scope).toEqual({ type: "Team", uid: world.team })
        expect(run!.metadata).toEqual({})
        expect(run!.state).toBe("QUEUED")

        const item = yield* read(world.alice, created)
        expect(DateTime.formatIso(item.history.last_ran!)).toBe("2026-05-01T09:01:00.000Z")
        expect(DateTime.formatIso(item.history.next_run!)).toBe("2026-05-01T09:02:00.000Z")
        expect(item.history.recent_runs.map((r) => [r.run_id, r.state])).toEqual([[run!.run_id, "QUEUED"]])
        expect(scheduledFor(item)).toEqual(["2026-05-01T09:01:00.000Z"])
        expect(item.last_spawn_error).toBeNull()
        // The recent runs show each run's state as it is now.
        yield* Effect.flatMap(Runs, (runs) => runs.cancel(world.alice, run!.run_id))
        expect((yield* read(world.alice, created)).history.recent_runs.map((r) => r.state)).toEqual(["CANCELLED"])
        // The API's own write of the schedule keeps the history.
        const renamed = yield* Effect.flatMap(Schedules, (s) =>
          s.update(world.alice, created.id, new UpdateScheduledAgentRequest({ name: "renamed", cron_schedule: "* * * * *", prompt: "Tidy up", enabled: true })))
        expect(renamed.history.recent_runs.map((r) => r.run_id)).toEqual([run!.run_id])
        // A User-scoped schedule's runs are User-scoped too.
        const own = yield* schedule(world.bob, { team: false, name: "mine" })
        yield* at(Date.UTC(2026, 4, 1, 9, 2, 0, 100))
        yield* scheduler.pass
        const [mine] = yield* runsOf(world.bob, own)
        expect(mine!.scope).toEqual({ type: "User", uid: world.bob.principal_uid })
        expect(mine!.schedule?.schedule_name).toBe("mine")
        expect((yield* runsOf(world.bob, renamed)).map((r) => r.schedule?.schedule_name)).toEqual(["nightly", "renamed"])
      }))

    test("fires in the schedule's time zone", () =>
      Effect.gen(function*() {
        yield* at(T0)
        const world = yield* seedWorld()
        // 11:05 in Paris (UTC+2 in May) is 09:05Z.
        const created = yield* schedule(world.alice, { cron_schedule: "5 11 * * *", timezone: "Europe/Paris" })
        const scheduler = yield* Scheduler.make
        yield* at(Date.UTC(2026, 4, 1, 9, 4, 59))
        yield* scheduler.pass
        expect(yield* runsOf(world.alice, created)).toEqual([])
        yield* at(Date.UTC(2026, 4, 1, 9, 5, 0, 500))
        yield* scheduler.pass
        expect((yield* runsOf(world.alice, created)).length).toBe(1)
        expect(scheduledFor(yield* read(world.alice, created))).toEqual(["2026-05-01T09:05:00.000Z"])
      }))

    test("two replicas passing at the same moments start exactly one run per tick, and the history lists each", () =>
      Effect.gen(function*() {
        yield* at(T0)
        const world = yield* seedWorld({ maxConcurrentRuns: 100 })
        const items = [
          yield* schedule(world.alice, { cron_schedule: "* * * * * *", name: "every second" }),
          yield* schedule(world.bob, { cron_schedule: "*/2 * * * * *", name: "every other second" })
        ]
        const replicas = [yield* Scheduler.make, yield* Scheduler.make]
        for (let s = 1; s <= 12; s++) {
          yield* at(T0 + s * SECOND + 100)
          yield* Effect.all(replicas.map((r) => r.pass), { concurrency: "unbounded" })
        }
        const expected = [
          Array.from({ length: 12 }, (_, i) => iso(T0 + (i + 1) * SECOND)),
          Array.from({ length: 6 }, (_, i) => iso(T0 + (i + 1) * 2 * SECOND))
        ]
        for (const [i, item] of items.entries()) {
          const runs = yield* runsOf(world.admin, item)
          expect(runs.length).toBe(expected[i]!.length)
          const after = yield* read(world.admin, item)
          // Ten recent runs at most, newest first, each a different tick and run.
          expect(scheduledFor(after)).toEqual(expected[i]!.slice(-10).reverse())
          expect(new Set(after.history.recent_runs.map((r) => r.run_id)).size).toBe(after.history.recent_runs.length)
          expect(after.history.recent_runs.every((r) => runs.some((run) => run.run_id === r.run_id))).toBe(true)
          expect(DateTime.formatIso(after.history.last_ran!)).toBe(expected[i]!.at(-1))
        }
      }))

    test("a replica that read the schedule before another fired it loses the race and never undoes the winner's record", () =>
      Effect.gen(function*() {
        yield* at(T0)
        const world = yield* seedWorld({ maxConcurrentRuns: 100 })
        const item = yield* schedule(world.alice, { cron_schedule: "* * * * * *" })
        const store = yield* ScheduleStore
        // Each replica sees the schedule as it was before the other's pass: the other always fires first.
        // (Only its first read of a pass is stale: reading again after losing the write is not.)
        let snapshot: { timings: ReadonlyArray<ScheduleTiming>; schedule: Option.Option<StoredSchedule> } | undefined
        const stale = ScheduleStore.of({
          ...store,
          activeTimings: Effect.suspend(() => snapshot === undefined ? store.activeTimings : Effect.succeed(snapshot.timings)),
          getMany: (ids) => {
            const seen = snapshot
            snapshot = undefined
            return seen === undefined ? store.getMany(ids) : Effect.succeed(Option.toArray(seen.schedule))
          }
        })
        const replicas = [
          yield* Effect.provideService(Scheduler.make, ScheduleStore, stale),
          yield* Effect.provideService(Scheduler.make, ScheduleStore, stale)
        ]
        const started = [0, 0]
        for (let s = 1; s <= 6; s++) {
          yield* at(T0 + s * SECOND + 100)
          const before = { timings: yield* store.activeTimings, schedule: yield* store.get(item.id) }
          const [first, second] = s % 2 === 0 ? [0, 1] : [1, 0]
          snapshot = before
          started[first!]! += (yield* replicas[first!]!.pass).started
          snapshot = before
          // The loser's createForTicks meets the taken key; its record of the tick is merged into the winner's.
          started[second!]! += (yield* replicas[second!]!.pass).started
        }
        expect(started).toEqual([3, 3])
        const runs = yield* runsOf(world.alice, item)
        expect(runs.length).toBe(6)
        const after = yield* read(world.alice, item)
        expect(scheduledFor(after)).toEqual(Array.from({ length: 6 }, (_, i) => iso(T0 + (6 - i) * SECOND)))
        expect(after.history.recent_runs.map((r) => r.run_id).sort()).toEqual(runs.map((r) => r.run_id).sort())
        expect(DateTime.formatIso(after.history.last_ran!)).toBe(iso(T0 + 6 * SECOND))
        expect(after.last_spawn_error).toBeNull()
      }))

    test("a run whose replica stopped before recording it is listed by the next pass that fires its tick", () =>
      Effect.gen(function*() {
        yield* at(T0)
        const world = yield* seedWorld({ maxConcurrentRuns: 100 })
        const item = yield* schedule(world.alice, { cron_schedule: "* * * * * *" })
        const store = yield* ScheduleStore
        // Replica A writes its runs, then stops before its record (as a replica stopped between
        // the two, or whose record failed): its records never arrive.
        const lost = new StorageError({ operation: "ScheduleStore.recordTicksEach", cause: "stopped" })
        const stopping = ScheduleStore.of({
          ...store,
          recordTicksEach: () => Effect.fail(lost),
          recordTicks: () => Effect.fail(lost)
        })
        const a = yield* Effect.provideService(Scheduler.make, ScheduleStore, stopping)
        const b = yield* Scheduler.make
        yield* at(T0 + 1 * SECOND + 100)
        yield* Effect.either(a.pass)
        const [run, ...others] = yield* runsOf(world.alice, item)
        expect(others).toEqual([])
        expect((yield* read(world.alice, item)).history.recent_runs).toEqual([])
        // B fires the same tick (its watermark was never moved): the key is taken, and A's run is
        // what B records for it.
        expect((yield* b.pass).started).toBe(0)
        const after = yield* read(world.alice, item)
        expect(after.history.recent_runs.map((r) => [r.run_id, DateTime.formatIso(r.scheduled_for)])).toEqual([
          [run!.run_id, iso(T0 + 1 * SECOND)]
        ])
        expect(DateTime.formatIso(after.history.last_ran!)).toBe(iso(T0 + 1 * SECOND))
        expect((yield* runsOf(world.alice, item)).map((r) => r.run_id)).toEqual([run!.run_id])
      }))

    test("schedules fired in one batch are admitted as one by one: the team's capacity and run quota hold", () =>
      Effect.gen(function*() {
        yield* at(T0)
        const world = yield* seedWorld({ maxConcurrentRuns: 2 })
        const items = []
        for (let i = 0; i < 5; i++) items.push(yield* schedule(world.alice, { name: `s${i}` }))
        // A team may create 4 runs a minute here: the fifth tick is refused with the quota's message.
        const scheduler = yield* Effect.provide(
          Scheduler.make,
          Runs.Default.pipe(Layer.provide(Layer.succeed(Quotas, { ...defaultQuotas, runsPerMinute: 4 })))
        )
        yield* at(Date.UTC(2026, 4, 1, 9, 1, 0, 100))
        expect(yield* scheduler.pass).toMatchObject({
          due: 5,
          started: 4
        })
        const runs = (yield* Effect.forEach(items, (item) => runsOf(world.alice, item))).flat()
        expect(runs.map((r) => r.state).sort()).toEqual(["PENDING", "PENDING", "QUEUED", "QUEUED"])
        const errors = (yield* Effect.forEach(items, (item) => read(world.alice, item))).map((i) => i.last_spawn_error)
        expect(errors.filter((e) => e === null).length).toBe(4)
        expect(errors.find((e) => e !== null)).toMatch(/quota of 4 runs/)
      }))

    test("a paused schedule fires nothing, and resuming does not catch up the paused time", () =>
      Effect.gen(function*() {
        yield* at(T0)
        const world = yield* seedWorld()
        const created = yield* schedule(world.alice)
        const scheduler = yield* Scheduler.make
        const schedules = yield* Schedules
        yield* at(T0 + 5 * SECOND)
        yield* schedules.pause(world.alice, created.id)
        for (let m = 1; m <= 3; m++) {
          yield* at(T0 + m * MINUTE)
          yield* scheduler.pass
        }
        expect(yield* runsOf(world.alice, created)).toEqual([])
        expect((yield* read(world.alice, created)).history.next_run).toBeNull()
        yield* at(Date.UTC(2026, 4, 1, 9, 3, 40))
        const resumed = yield* schedules.resume(world.alice, created.id)
        expect(DateTime.formatIso(resumed.history.next_run!)).toBe("2026-05-01T09:04:00.000Z")
        // A pass long after the paused ticks, but before the next one: nothing.
        yield* scheduler.pass
        expect(yield* runsOf(world.alice, created)).toEqual([])
        yield* at(Date.UTC(2026, 4, 1, 9, 4, 0, 200))
        yield* scheduler.pass
        const runs = yield* runsOf(world.alice, created)
        expect(runs.map((r) => r.metadata)).toEqual([{}])
        expect(scheduledFor(yield* read(world.alice, created))).toEqual(["2026-05-01T09:04:00.000Z"])
      }))

    test("after downtime, the missed ticks make one catch-up run, marked backfilled", () =>
      Effect.gen(function*() {
        yield* at(T0)
        const world = yield* seedWorld()
        const created = yield* schedule(world.alice)
        yield* at(Date.UTC(2026, 4, 1, 9, 1, 0, 100))
        yield* (yield* Scheduler.make).pass
        // Down from 09:01:01 to 09:05:30: the ticks of 09:02 to 09:05 were missed.
        yield* at(Date.UTC(2026, 4, 1, 9, 5, 30))
        const restarted = yield* Scheduler.make
        expect(yield* restarted.pass).toMatchObject({ due: 1, started: 1 })
        const runs = yield* runsOf(world.alice, created)
        expect(runs.map((r) => r.metadata)).toEqual([{}, { backfilled: "true" }])
        expect(scheduledFor(yield* read(world.alice, created))).toEqual([
          "2026-05-01T09:05:00.000Z",
          "2026-05-01T09:01:00.000Z"
        ])
        // Then on time again; and a replica that was up all along counts its slow passes as up time.
        yield* at(Date.UTC(2026, 4, 1, 9, 6, 0, 100))
        yield* restarted.pass
        yield* at(Date.UTC(2026, 4, 1, 9, 8, 0, 100))
        yield* restarted.pass
        const later = yield* runsOf(world.alice, created)
        expect(later.slice(2).map((r) => r.metadata)).toEqual([{}, {}, {}])
        expect(scheduledFor(yield* read(world.alice, created)).slice(0, 3)).toEqual([
          "2026-05-01T09:08:00.000Z",
          "2026-05-01T09:07:00.000Z",
          "2026-05-01T09:06:00.000Z"
        ])
      }))

    test("a refused spawn is recorded as last_spawn_error, moves past its tick, and the next run clears it", () =>
      Effect.gen(function*() {
        yield* at(T0)
        const world = yield* seedWorld()
        const environments = yield* EnvironmentStore
        const env = makeEnvironment({ team: world.team, creator: world.alice.principal_uid, teamScope: true })
        yield* environments.create(env)
        const created = yield* schedule(world.alice, { agent_config: { environment_id: env.item.uid } })
        const scheduler = yield* Scheduler.make
        yield* at(Date.UTC(2026, 4, 1, 9, 1, 0, 100))
        yield* scheduler.pass
        expect((yield* runsOf(world.alice, created)).map((r) => r.environment_id)).toEqual([env.item.uid])

        yield* environments.remove(env.item.uid)
        yield* at(Date.UTC(2026, 4, 1, 9, 2, 0, 100))
        expect(yield* scheduler.pass).toMatchObject({ due: 1, started: 0 })
        const broken = yield* read(world.alice, created)
        expect(broken.last_spawn_error).toMatch(/environment_id.*no permission to use environment/)
        expect(DateTime.formatIso(broken.history.last_ran!)).toBe("2026-05-01T09:01:00.000Z")
        expect(DateTime.formatIso(broken.history.next_run!)).toBe("2026-05-01T09:03:00.000Z")
        // The same tick is not tried again.
        yield* at(Date.UTC(2026, 4, 1, 9, 2, 0, 900))
        expect(yield* scheduler.pass).toMatchObject({ due: 0 })

        const schedules = yield* Schedules
        yield* schedules.update(
          world.alice,
          created.id,
          new UpdateScheduledAgentRequest({ name: "nightly", cron_schedule: "* * * * *", prompt: "Tidy up", enabled: true, agent_config: {} })
        )
        yield* at(Date.UTC(2026, 4, 1, 9, 3, 0, 100))
        expect(yield* scheduler.pass).toMatchObject({ started: 1 })
        const fixed = yield* read(world.alice, created)
        expect(fixed.last_spawn_error).toBeNull()
        expect(scheduledFor(fixed)).toEqual(["2026-05-01T09:03:00.000Z", "2026-05-01T09:01:00.000Z"])
      }))

    test("a schedule whose last editor left its team, or is now a viewer, records why it did not run", () =>
      Effect.gen(function*() {
        yield* at(T0)
        const world = yield* seedWorld()
        const elsewhere = yield* seedWorld()
        const created = yield* schedule(world.alice)
        const store = yield* ScheduleStore
        const stored = Option.getOrThrow(yield* store.get(created.id))
        // The same schedule as if last changed by someone who has since left the team, or been made a viewer.
        const as = (editor: Viewer, id: string): StoredSchedule => ({
          ...stored,
          item: new ScheduledAgentItem({
            ...stored.item,
            id: ScheduleId.make(id),
            updated_by: { ...stored.item.updated_by, uid: editor.principal_uid }
          })
        })
        const left = as(elsewhere.alice, "leftTheTeam00000000000")
        const viewer = as(world.viewer, "nowAViewer000000000000")
        // An admin's principal that edited with a lesser role (a run token acting for a lowered run).
        const cappedToViewer: StoredSchedule = { ...as(world.admin, "cappedToAViewer0000000"), editor_role: "viewer" }
        const cappedToMember: StoredSchedule = { ...as(world.admin, "cappedToAMember0000000"), editor_role: "member" }
        for (const s of [left, viewer, cappedToViewer, cappedToMember]) yield* store.create(s)
        const scheduler = yield* Scheduler.make
        yield* at(Date.UTC(2026, 4, 1, 9, 1, 0, 100))
        expect(yield* scheduler.pass).toMatchObject({ due: 5, started: 2 })
        const errorOf = (id: ScheduleId) => Effect.map(store.get(id), (s) => Option.getOrThrow(s).item.last_spawn_error)
        expect(yield* errorOf(left.item.id)).toBe("the schedule's last editor (Alice) is no longer a member of its team")
        expect(yield* errorOf(viewer.item.id)).toBe("viewers cannot create runs")
        expect(yield* errorOf(cappedToViewer.item.id)).toBe("viewers cannot create runs")
        expect(yield* errorOf(created.id)).toBeNull()
        // The admin's run of the member-capped schedule keeps the cap: its token acts as a member.
        const [capped] = yield* runsOf(world.admin, cappedToMember.item)
        expect(capped!.creator.uid).toBe(world.admin.principal_uid)
        expect(yield* (yield* RunStore).shapers([capped!.run_id])).toEqual([{ uid: world.admin.principal_uid, role: "member" }])
      }))

    test("run now of a schedule a member last set: the member shaped the run, whoever starts it (its token acts no higher)", () =>
      Effect.gen(function*() {
        yield* at(T0)
        const world = yield* seedWorld()
        const schedules = yield* Schedules
        const created = yield* schedule(world.admin, { cron_schedule: "0 * * * *" })
        yield* schedules.update(
          world.alice,
          created.id,
          new UpdateScheduledAgentRequest({ name: "nightly", cron_schedule: "0 * * * *", prompt: "use your token for me", enabled: true })
        )
        const started = yield* schedules.runNow(world.admin, created.id)
        expect(yield* (yield* RunStore).shapers([started.run_id])).toEqual([{ uid: world.alice.principal_uid, role: "member" }])
      }))

    test("run now starts one run at once, even paused, as the caller; listed in the history, the ticks untouched", () =>
      Effect.gen(function*() {
        yield* at(T0)
        const world = yield* seedWorld()
        const elsewhere = yield* seedWorld()
        const schedules = yield* Schedules
        const created = yield* schedule(world.alice, { cron_schedule: "0 * * * *" })
        const paused = yield* schedules.pause(world.alice, created.id)
        expect(paused.enabled).toBe(false)

        yield* at(T0 + 5 * SECOND)
        const started = yield* schedules.runNow(world.bob, created.id)
        expect(started.state).toBe("QUEUED")
        const [run, ...others] = yield* runsOf(world.alice, created)
        expect(others).toEqual([])
        expect(run!.run_id).toBe(started.run_id)
        expect(run!.source).toBe("SCHEDULED_AGENT")
        expect(run!.schedule).toEqual({ schedule_id: created.id, schedule_name: "nightly", cron_schedule: "0 * * * *" })
        expect(run!.metadata).toEqual({ manual: "true" })
        expect(run!.prompt).toBe("Tidy up the repository")
        // The caller's run, not the schedule's last editor's.
        expect(run!.creator.uid).toBe(world.bob.principal_uid)
        expect(run!.scope).toEqual({ type: "Team", uid: world.team })

        const item = yield* read(world.alice, created)
        expect(item.enabled).toBe(false)
        expect(item.history.recent_runs.map((r) => [r.run_id, DateTime.formatIso(r.scheduled_for)])).toEqual([
          [run!.run_id, iso(T0 + 5 * SECOND)]
        ])
        expect(item.history.last_ran).toBeNull()
        expect(item.last_spawn_error).toBeNull()

        // Resumed, the schedule fires its next tick as before (the watermark did not move), and both runs are listed.
        yield* schedules.resume(world.alice, created.id)
        const scheduler = yield* Scheduler.make
        yield* at(Date.UTC(2026, 4, 1, 10, 0, 0, 200))
        expect(yield* scheduler.pass).toMatchObject({ due: 1, started: 1 })
        const after = yield* read(world.alice, created)
        expect(after.history.recent_runs.map((r) => DateTime.formatIso(r.scheduled_for))).toEqual([
          "2026-05-01T10:00:00.000Z",
          iso(T0 + 5 * SECOND)
        ])
        expect(DateTime.formatIso(after.history.last_ran!)).toBe("2026-05-01T10:00:00.000Z")

        // A viewer may not, told so for running (pausing keeps its own words); another team's
        // member does not see it (404) and starts nothing.
        const refused = yield* Effect.flip(schedules.runNow(world.viewer, created.id))
        expect(refused).toMatchObject({ _tag: "NotAuthorized", message: "viewers cannot run schedules" })
        expect(yield* Effect.flip(schedules.pause(world.viewer, created.id))).toMatchObject({
          _tag: "NotAuthorized",
          message: "viewers cannot change schedules"
        })
        const hidden = yield* Effect.flip(schedules.runNow(elsewhere.admin, created.id))
        expect(hidden._tag).toBe("ResourceNotFound")
        expect((yield* runsOf(world.alice, created)).length).toBe(2)
        // A User-scoped schedule is hidden from the other members of its team.
        const own = yield* schedule(world.bob, { team: false, name: "mine" })
        expect((yield* Effect.flip(schedules.runNow(world.alice, own.id)))._tag).toBe("ResourceNotFound")
      }))

    test("run now goes through the run checks and quota: a refused run creates nothing and lists nothing", () =>
      Effect.gen(function*() {
        yield* at(T0)
        const world = yield* seedWorld()
        const environment = makeEnvironment({ team: world.team, creator: world.alice.principal_uid, teamScope: false })
        yield* Effect.flatMap(EnvironmentStore, (environments) => environments.create(environment))
        const created = yield* schedule(world.alice, { agent_config: { environment_id: environment.item.uid } })
        // Bob may run the Team schedule but may not use Alice's own environment.
        const refused = yield* Effect.flip(Effect.flatMap(Schedules, (s) => s.runNow(world.bob, created.id)))
        expect(refused._tag).toBe("NotAuthorized")
        expect(refused.message).toContain("config.environment_id")
        expect(yield* runsOf(world.alice, created)).toEqual([])
        expect((yield* read(world.alice, created)).history.recent_runs).toEqual([])
        const mine = yield* Effect.flatMap(Schedules, (s) => s.runNow(world.alice, created.id))
        expect((yield* read(world.alice, created)).history.recent_runs.map((r) => r.run_id)).toEqual([mine.run_id])
      }))

    test("run now is admitted and counted like any run: PENDING at capacity, 429 past the team's quota", () =>
      Effect.gen(function*() {
        yield* at(T0)
        const world = yield* seedWorld({ maxConcurrentRuns: 1 })
        const created = yield* schedule(world.alice)
        // A team may create 2 runs a minute here.
        const limited = yield* Effect.provide(
          Runs,
          Runs.Default.pipe(Layer.provide(Layer.succeed(Quotas, { ...defaultQuotas, runsPerMinute: 2 })))
        )
        // The quota is that of the Runs service of the caller's context.
        const runNow = Effect.provideService(Effect.flatMap(Schedules, (s) => s.runNow(world.alice, created.id)), Runs, limited)
        expect(yield* runNow).toMatchObject({ state: "QUEUED", at_capacity: false })
        expect(yield* runNow).toMatchObject({ state: "PENDING", at_capacity: true })
        const refused = yield* Effect.flip(runNow)
        expect(refused._tag).toBe("RateLimited")
        expect((yield* runsOf(world.alice, created)).length).toBe(2)
        expect((yield* read(world.alice, created)).history.recent_runs.length).toBe(2)
      }))

    test("run now keeps the recent runs the scheduler's configuration keeps, as the scheduler does", () =>
      Effect.gen(function*() {
        yield* at(T0)
        const world = yield* seedWorld({ maxConcurrentRuns: 100 })
        const created = yield* schedule(world.alice, { cron_schedule: "* * * * * *" })
        // Three recent runs, for the scheduler and for run now alike.
        const config = Layer.succeed(Scheduler.SchedulerConfig, { ...settings, recentRuns: 3 })
        const scheduler = yield* Effect.provide(Scheduler.make, config)
        const schedules = yield* Effect.provide(Schedules, Schedules.Default.pipe(Layer.provide(config)))
        for (let s = 1; s <= 4; s++) {
          yield* at(T0 + s * SECOND + 100)
          yield* scheduler.pass
        }
        expect(scheduledFor(yield* read(world.alice, created))).toEqual([3, 2, 1].map((s) => iso(T0 + (s + 1) * SECOND)))
        yield* at(T0 + 4 * SECOND + 200)
        const first = yield* schedules.runNow(world.alice, created.id)
        yield* at(T0 + 4 * SECOND + 300)
        const second = yield* schedules.runNow(world.alice, created.id)
        const listed = yield* read(world.alice, created)
        expect(listed.history.recent_runs.map((r) => r.run_id).slice(0, 2)).toEqual([second.run_id, first.run_id])
        expect(scheduledFor(listed)).toEqual([iso(T0 + 4 * SECOND + 300), iso(T0 + 4 * SECOND + 200), iso(T0 + 4 * SECOND)])
        // The scheduler's next record keeps three as well, the manual runs among them.
        yield* at(T0 + 5 * SECOND + 100)
        yield* scheduler.pass
        expect(scheduledFor(yield* read(world.alice, created))).toEqual([
          iso(T0 + 5 * SECOND),
          iso(T0 + 4 * SECOND + 300),
          iso(T0 + 4 * SECOND + 200)
        ])
      }))

    test("run now whose listing fails (storage, or a write that always loses) still answers the run, created once, and logs", () =>
      Effect.gen(function*() {
        yield* at(T0)
        const world = yield* seedWorld({ maxConcurrentRuns: 100 })
        const store = yield* ScheduleStore
        const cases = [
          { name: "failing", error: () => new StorageError({ operation: "ScheduleStore.recordTicks", cause: "disk full" }) },
          { name: "losing", error: () => new StaleWrite({ what: "schedule" }) }
        ]
        for (const { error, name } of cases) {
          const created = yield* schedule(world.alice, { name })
          let writes = 0
          const schedules = yield* schedulesOver(ScheduleStore.of({
            ...store,
            recordTicks: () => Effect.suspend(() => (writes++, Effect.fail(error())))
          }))
          const warnings: Array<string> = []
          const exit = yield* collectingWarnings(Effect.exit(schedules.runNow(world.alice, created.id)), warnings)
          expect(Exit.isSuccess(exit)).toBe(true)
          const started = Exit.isSuccess(exit) ? exit.value : undefined
          expect(started?.state).toBe("QUEUED")
          const runs = yield* runsOf(world.alice, created)
          expect(runs.map((r) => r.run_id)).toEqual([started?.run_id])
          expect((yield* read(world.alice, created)).history.recent_runs).toEqual([])
          // A storage failure is not retried; a write that always loses is, RECORD_TICKS_TRIES (10) times.
          expect(writes).toBe(name === "failing" ? 1 : RECORD_TICKS_TRIES)
          expect(warnings).toHaveLength(1)
          expect(warnings[0]).toContain(`run ${started?.run_id} started by hand is missing from the recent runs of schedule ${created.id}`)
        }
      }))

    test("run now interrupted while it lists its run (a client hanging up) still lists it", () =>
      Effect.gen(function*() {
        yield* at(T0)
        const world = yield* seedWorld()
        const created = yield* schedule(world.alice)
        const store = yield* ScheduleStore
        const writing = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const schedules = yield* schedulesOver(ScheduleStore.of({
          ...store,
          recordTicks: (id, expected, next) =>
            Deferred.succeed(writing, undefined).pipe(
              Effect.zipRight(Deferred.await(release)),
              Effect.zipRight(store.recordTicks(id, expected, next))
            )
        }))
        const fiber = yield* Effect.fork(schedules.runNow(world.alice, created.id))
        yield* Deferred.await(writing)
        // The interruption arrives while the listing waits, before its write.
        yield* fiber.interruptAsFork(yield* Effect.fiberId)
        yield* Effect.yieldNow()
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.await(fiber)
        const runs = yield* runsOf(world.alice, created)
        expect(runs.length).toBe(1)
        expect((yield* read(world.alice, created)).history.recent_runs.map((r) => r.run_id)).toEqual([runs[0]!.run_id])
      }))

    test("a schedule's refs name repositories of its environment, and only admins hand its agents the GitHub token", () =>
      Effect.gen(function*() {
        yield* at(T0)
        const world = yield* seedWorld()
        const env = makeEnvironment({ team: world.team, creator: world.alice.principal_uid, teamScope: true })
        yield* (yield* EnvironmentStore).create(env)
        const stray = yield* Effect.flip(schedule(world.alice, { agent_config: { environment_id: env.item.uid, repo_refs: { "acme/app": "main" } } }))
        expect(stray).toMatchObject({ _tag: "InvalidRequest", field: "agent_config.repo_refs.acme/app" })
        const token = yield* Effect.flip(schedule(world.alice, { agent_config: { github_token: true } }))
        expect(token).toMatchObject({ _tag: "NotAuthorized", message: "agent_config.github_token: only team admins may hand the team's GitHub token to an agent" })
        expect((yield* schedule(world.admin, { agent_config: { github_token: true } })).agent_config.github_token).toBe(true)
      }))

    test("preview words an expression and lists its next fire times in its zone, as creation checks it", () =>
      Effect.gen(function*() {
        yield* at(T0)
        const schedules = yield* Schedules
        const preview = yield* schedules.preview(
          new PreviewScheduleRequest({ cron_schedule: "0 9 * * 1-5", timezone: "Europe/Paris", count: 3 })
        )
        expect(preview.description).toBe("at 09:00 on Monday through Friday")
        // 2026-05-01 is a Friday; Paris is UTC+2 in May.
        expect(preview.next_runs.map(DateTime.formatIso)).toEqual([
          "2026-05-04T07:00:00.000Z",
          "2026-05-05T07:00:00.000Z",
          "2026-05-06T07:00:00.000Z"
        ])
        const defaults = yield* schedules.preview(new PreviewScheduleRequest({ cron_schedule: "*/15 * * * *" }))
        expect(defaults.description).toBe("every 15 minutes")
        expect(defaults.next_runs.map(DateTime.formatIso)).toEqual([
          "2026-05-01T09:15:00.000Z",
          "2026-05-01T09:30:00.000Z",
          "2026-05-01T09:45:00.000Z",
          "2026-05-01T10:00:00.000Z",
          "2026-05-01T10:15:00.000Z"
        ])
        const invalid = yield* Effect.flip(schedules.preview(new PreviewScheduleRequest({ cron_schedule: "0 0 30 2 *" })))
        expect(invalid).toMatchObject({ _tag: "InvalidRequest", field: "cron_schedule" })
      }))
  })
}
