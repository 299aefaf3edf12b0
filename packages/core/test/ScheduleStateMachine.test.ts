import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as fc from "fast-check"
import type { CronSchedule } from "../src/domain/Cron.js"
import { fireTimesBetween, parseSchedule } from "../src/domain/Cron.js"
import type { ScheduleState, ScheduleStatus } from "../src/domain/ScheduleStateMachine.js"
import {
  dueTicks,
  dueTicksFor,
  eventKind,
  initialState,
  isEnabled,
  nextRun,
  ScheduleEvent,
  ScheduleTransitions,
  transition
} from "../src/domain/ScheduleStateMachine.js"

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const at = (s: string) => Date.parse(s)

const schedule = (expression: string, timezone = "UTC"): CronSchedule => Either.getOrThrow(parseSchedule(expression, timezone))

const apply = (state: ScheduleState, event: ScheduleEvent): ScheduleState => {
  const result = transition(state, event)
  if (Either.isLeft(result)) throw new Error(`expected ${event._tag} from ${state.status} to be accepted: ${result.left.message}`)
  return result.right.state
}

const rejectionOf = (state: ScheduleState, event: ScheduleEvent) => {
  const result = transition(state, event)
  if (Either.isRight(result)) throw new Error(`expected ${event._tag} from ${state.status} to be rejected`)
  return result.left
}

const iso = (ticks: ReadonlyArray<{ scheduledFor: Date; backfilled: boolean }>) =>
  ticks.map((t) => `${t.scheduledFor.toISOString()}${t.backfilled ? " backfilled" : ""}`)

const grace = { catchUpGraceMs: MINUTE }

describe("ScheduleStateMachine", () => {
  const created = at("2026-05-01T09:00:00Z")
  const active = initialState({ enabled: true, createdAt: created })
  const paused = initialState({ enabled: false, createdAt: created })
  const deleted = apply(active, ScheduleEvent.Delete({ at: created }))

  describe("transition", () => {
    it("follows docs/schedules.md: pause, resume, delete from any state", () => {
      expect(active).toEqual({ status: "active", lastTickAt: created })
      expect(isEnabled(active)).toBe(true)
      expect(paused.status).toBe("paused")
      expect(isEnabled(paused)).toBe(false)
      expect(apply(active, ScheduleEvent.Pause({ at: created + 1 })).status).toBe("paused")
      expect(apply(paused, ScheduleEvent.Resume({ at: created + 1 })).status).toBe("active")
      expect(apply(paused, ScheduleEvent.Delete({ at: created + 1 })).status).toBe("deleted")
      expect(deleted.status).toBe("deleted")
      expect(isEnabled(deleted)).toBe(false)
    })

    it("treats PUT with enabled:false as pause and enabled:true as resume", () => {
      const update = (enabled: boolean) => ScheduleEvent.Update({ enabled, scheduleChanged: false, at: created + HOUR })
      expect(apply(active, update(false)).status).toBe("paused")
      expect(apply(paused, update(true))).toEqual({ status: "active", lastTickAt: created + HOUR })
      expect(apply(active, update(true))).toEqual(active)
      expect(apply(paused, update(false))).toEqual(paused)
    })

    it("pausing and resuming are idempotent; resuming an active schedule keeps its watermark", () => {
      expect(apply(paused, ScheduleEvent.Pause({ at: created + HOUR }))).toEqual(paused)
      expect(apply(active, ScheduleEvent.Resume({ at: created + HOUR }))).toEqual(active)
    })

    it("resuming moves the watermark to the resume time; a new expression moves it to the update time", () => {
      expect(apply(paused, ScheduleEvent.Resume({ at: created + HOUR })).lastTickAt).toBe(created + HOUR)
      const changed = ScheduleEvent.Update({ enabled: true, scheduleChanged: true, at: created + 2 * HOUR })
      expect(apply(active, changed).lastTickAt).toBe(created + 2 * HOUR)
      // Never backwards (a replica with a slower clock).
      expect(apply({ status: "paused", lastTickAt: created + 5 * HOUR }, ScheduleEvent.Resume({ at: created })).lastTickAt).toBe(
        created + 5 * HOUR
      )
    })

    it("records ticks once, and refuses them while paused", () => {
      const ticked = apply(active, ScheduleEvent.Tick({ scheduledFor: created + HOUR }))
      expect(ticked).toEqual({ status: "active", lastTickAt: created + HOUR })
      const again = rejectionOf(ticked, ScheduleEvent.Tick({ scheduledFor: created + HOUR }))
      expect(again.reason).toBe("already_handled")
      expect(rejectionOf(ticked, ScheduleEvent.Tick({ scheduledFor: created })).reason).toBe("already_handled")
      const whilePaused = rejectionOf(paused, ScheduleEvent.Tick({ scheduledFor: created + HOUR }))
      expect(whilePaused.reason).toBe("paused")
      expect(whilePaused.from).toBe("paused")
      expect(whilePaused.event).toBe("Tick")
    })

    it("refuses everything once deleted", () => {
      const events = [
        ScheduleEvent.Pause({ at: created }),
        ScheduleEvent.Resume({ at: created }),
        ScheduleEvent.Update({ enabled: true, scheduleChanged: false, at: created }),
        ScheduleEvent.Delete({ at: created }),
        ScheduleEvent.Tick({ scheduledFor: created + HOUR })
      ]
      for (const event of events) {
        const rejection = rejectionOf(deleted, event)
        expect(rejection.reason).toBe("deleted")
        expect(rejection.message).toContain("deleted")
      }
    })
  })

  describe("nextRun", () => {
    const hourly = schedule("0 * * * *", "Europe/Berlin")

    it("is the next fire time after now while active, null otherwise", () => {
      expect(nextRun(active, hourly, at("2026-05-01T10:20:00Z"))?.toISOString()).toBe("2026-05-01T11:00:00.000Z")
      expect(nextRun(active, hourly, new Date("2026-05-01T11:00:00Z"))?.toISOString()).toBe("2026-05-01T12:00:00.000Z")
      expect(nextRun(paused, hourly, at("2026-05-01T10:20:00Z"))).toBeNull()
      expect(nextRun(deleted, hourly, at("2026-05-01T10:20:00Z"))).toBeNull()
    })

    it("never names a time at or before the watermark", () => {
      const ahead = { status: "active" as const, lastTickAt: at("2026-05-01T12:00:00Z") }
      expect(nextRun(ahead, hourly, at("2026-05-01T10:20:00Z"))?.toISOString()).toBe("2026-05-01T13:00:00.000Z")
    })
  })

  describe("dueTicks", () => {
    const hourly = schedule("0 * * * *")

    it("fires the tick that just came due, once", () => {
      const last = at("2026-05-01T09:00:00Z")
      expect(dueTicks(hourly, last, at("2026-05-01T09:59:59Z"), grace)).toEqual([])
      expect(iso(dueTicks(hourly, last, at("2026-05-01T10:00:00.500Z"), grace))).toEqual(["2026-05-01T10:00:00.000Z"])
      // Once handled, the same tick is not due again.
      expect(dueTicks(hourly, at("2026-05-01T10:00:00Z"), at("2026-05-01T10:00:05Z"), grace)).toEqual([])
    })

    it("after downtime fires one catch-up run for the most recent missed tick", () => {
      const last = at("2026-05-01T09:00:00Z")
      expect(iso(dueTicks(hourly, last, at("2026-05-01T13:20:00Z"), grace))).toEqual([
        "2026-05-01T13:00:00.000Z backfilled"
      ])
      // One missed tick, found late, is a catch-up run too.
      expect(iso(dueTicks(hourly, last, at("2026-05-01T10:05:00Z"), grace))).toEqual(["2026-05-01T10:00:00.000Z backfilled"])
    })

    it("when a tick is on time after downtime, it stands in for the missed ones", () => {
      expect(iso(dueTicks(hourly, at("2026-05-01T09:00:00Z"), at("2026-05-01T13:00:10Z"), grace))).toEqual([
        "2026-05-01T13:00:00.000Z"
      ])
    })

    it("fires every on-time tick of a dense expression, up to maxTicks (the latest)", () => {
      const every10s = schedule("*/10 * * * * *")
      const last = at("2026-05-01T09:00:00Z")
      expect(iso(dueTicks(every10s, last, at("2026-05-01T09:00:35Z"), grace))).toEqual([
        "2026-05-01T09:00:10.000Z",
        "2026-05-01T09:00:20.000Z",
        "2026-05-01T09:00:30.000Z"
      ])
      expect(iso(dueTicks(every10s, last, at("2026-05-01T09:00:35Z"), { ...grace, maxTicks: 2 }))).toEqual([
        "2026-05-01T09:00:20.000Z",
        "2026-05-01T09:00:30.000Z"
      ])
    })

    it("a brand new schedule fires nothing from before its creation", () => {
      const everyMinute = schedule("* * * * *")
      const createdAt = at("2026-05-01T12:00:30Z")
      const fresh = initialState({ enabled: true, createdAt })
      expect(dueTicksFor(fresh, everyMinute, at("2026-05-01T12:00:45Z"), grace)).toEqual([])
      expect(iso(dueTicksFor(fresh, everyMinute, at("2026-05-01T12:01:00.200Z"), grace))).toEqual([
        "2026-05-01T12:01:00.000Z"
      ])
      // Without any watermark there is no evidence of anything to fire.
      expect(dueTicks(everyMinute, undefined, at("2026-05-01T12:01:00.200Z"), grace)).toEqual([])
    })

    it("a paused schedule fires nothing and does not catch up on resume", () => {
      const pausedAt = apply(active, ScheduleEvent.Pause({ at: at("2026-05-01T10:30:00Z") }))
      expect(dueTicksFor(pausedAt, hourly, at("2026-05-01T13:00:01Z"), grace)).toEqual([])
      const resumed = apply(pausedAt, ScheduleEvent.Resume({ at: at("2026-05-01T13:30:00Z") }))
      expect(dueTicksFor(resumed, hourly, at("2026-05-01T13:45:00Z"), grace)).toEqual([])
      expect(iso(dueTicksFor(resumed, hourly, at("2026-05-01T14:00:01Z"), grace))).toEqual(["2026-05-01T14:00:00.000Z"])
      expect(dueTicksFor(deleted, hourly, at("2026-05-01T14:00:01Z"), grace)).toEqual([])
    })

    it("fires nothing when the watermark is ahead of now (clock skew)", () => {
      expect(dueTicks(hourly, at("2026-05-01T14:00:00Z"), at("2026-05-01T13:00:01Z"), grace)).toEqual([])
    })
  })

  const statuses: ReadonlyArray<ScheduleStatus> = ["active", "paused", "deleted"]
  const base = at("2026-03-07T00:00:00Z")
  const event = fc.oneof(
    fc.record({ _tag: fc.constant("Pause" as const), at: fc.integer({ min: 0, max: 100 * HOUR }) }),
    fc.record({ _tag: fc.constant("Resume" as const), at: fc.integer({ min: 0, max: 100 * HOUR }) }),
    fc.record({
      _tag: fc.constant("Update" as const),
      enabled: fc.boolean(),
      scheduleChanged: fc.boolean(),
      at: fc.integer({ min: 0, max: 100 * HOUR })
    }),
    fc.record({ _tag: fc.constant("Delete" as const), at: fc.integer({ min: 0, max: 100 * HOUR }) }),
    fc.record({ _tag: fc.constant("Tick" as const), scheduledFor: fc.integer({ min: 0, max: 100 * HOUR }) })
  ).map((e): ScheduleEvent => {
    switch (e._tag) {
      case "Pause":
        return ScheduleEvent.Pause({ at: base + e.at })
      case "Resume":
        return ScheduleEvent.Resume({ at: base + e.at })
      case "Update":
        return ScheduleEvent.Update({ enabled: e.enabled, scheduleChanged: e.scheduleChanged, at: base + e.at })
      case "Delete":
        return ScheduleEvent.Delete({ at: base + e.at })
      case "Tick":
        return ScheduleEvent.Tick({ scheduledFor: base + e.scheduledFor })
    }
  })
  const startState = fc.record({
    status: fc.constantFrom(...statuses),
    lastTickAt: fc.integer({ min: 0, max: 100 * HOUR }).map((d) => base + d)
  })

  it.prop(
    "random event sequences only take transitions from the table, and nothing leaves deleted",
    [startState, fc.array(event, { maxLength: 30 })],
    ([start, events]) => {
      let state: ScheduleState = start
      for (const e of events) {
        const result = transition(state, e)
        const allowed = ScheduleTransitions[state.status][eventKind(e)]
        if (Either.isRight(result)) {
          expect(result.right.from).toBe(state.status)
          expect(result.right.to).toBe(allowed)
          expect(result.right.state.status).toBe(allowed)
          // The watermark never moves back.
          expect(result.right.state.lastTickAt).toBeGreaterThanOrEqual(state.lastTickAt)
          state = result.right.state
        } else {
          // Refused only off the table, or for a tick already handled; the state stays as it was.
          if (allowed !== undefined) {
            expect(e._tag).toBe("Tick")
            expect(result.left.reason).toBe("already_handled")
          } else {
            expect(result.left.reason).toBe(state.status === "deleted" ? "deleted" : "paused")
          }
          expect(result.left.from).toBe(state.status)
        }
        if (start.status === "deleted") expect(state.status).toBe("deleted")
      }
    },
    { fastCheck: { numRuns: 300 } }
  )

  const expressions = ["* * * * *", "*/15 * * * *", "0 * * * *", "*/20 * * * * *", "30 2 * * *", "0 9 * * 1-5"]
  const cron = fc
    .tuple(fc.constantFrom(...expressions), fc.constantFrom("UTC", "America/New_York", "Europe/Berlin"))
    .map(([e, z]) => schedule(e, z))

  it.prop(
    "dueTicks: at most one backfilled tick and then alone, never after now, never at or before lastTickAt",
    [
      cron,
      fc.integer({ min: 0, max: 30 * 24 * HOUR }),
      fc.integer({ min: 0, max: 3 * 24 * HOUR }),
      fc.integer({ min: 0, max: 10 * MINUTE })
    ],
    ([s, last, elapsed, catchUpGraceMs]) => {
      const lastTickAt = base + last
      const now = lastTickAt + elapsed
      const ticks = dueTicks(s, lastTickAt, now, { catchUpGraceMs })
      const times = ticks.map((t) => t.scheduledFor.getTime())
      for (const t of times) {
        expect(t).toBeGreaterThan(lastTickAt)
        expect(t).toBeLessThanOrEqual(now)
      }
      times.slice(1).forEach((t, i) => expect(t).toBeGreaterThan(times[i]!))
      const backfilled = ticks.filter((t) => t.backfilled)
      expect(backfilled.length).toBeLessThanOrEqual(1)
      if (backfilled.length === 1) {
        expect(ticks).toHaveLength(1)
        // The most recent missed tick, and nothing on time.
        const latest = fireTimesBetween(s, lastTickAt, now, 1)
        expect(ticks[0]!.scheduledFor).toEqual(latest[0])
        expect(now - times[0]!).toBeGreaterThan(catchUpGraceMs)
      } else {
        for (const t of times) expect(now - t).toBeLessThanOrEqual(catchUpGraceMs)
      }
      // Something is due exactly when some fire time lies in (lastTickAt, now].
      expect(ticks.length > 0).toBe(fireTimesBetween(s, lastTickAt, now, 1).length > 0)
    },
    { fastCheck: { numRuns: 200 } }
  )

  /** A scheduler loop: polls at the given gaps, pausing and resuming as told, firing what is due. */
  const simulate = (
    s: CronSchedule,
    steps: ReadonlyArray<{ readonly gap: number; readonly toggle: boolean }>,
    catchUpGraceMs: number
  ) => {
    let now = base
    let state = initialState({ enabled: true, createdAt: now })
    const fired: Array<{ scheduledFor: number; backfilled: boolean; firedAt: number; pausedSince?: number }> = []
    const pausedWindows: Array<readonly [number, number]> = []
    let pausedSince: number | undefined
    for (const step of steps) {
      now += step.gap
      if (step.toggle) {
        if (state.status === "active") {
          state = apply(state, ScheduleEvent.Pause({ at: now }))
          pausedSince = now
        } else {
          state = apply(state, ScheduleEvent.Resume({ at: now }))
          pausedWindows.push([pausedSince!, now])
          pausedSince = undefined
        }
      }
      const due = dueTicksFor(state, s, now, { catchUpGraceMs })
      if (state.status !== "active") expect(due).toEqual([])
      for (const tick of due) {
        state = apply(state, ScheduleEvent.Tick({ scheduledFor: tick.scheduledFor.getTime() }))
        fired.push({ scheduledFor: tick.scheduledFor.getTime(), backfilled: tick.backfilled, firedAt: now })
      }
    }
    if (pausedSince !== undefined) pausedWindows.push([pausedSince, now])
    return { fired, pausedWindows, end: now }
  }

  it.prop(
    "a scheduler that polls within the grace period fires every tick exactly once, none backfilled",
    [cron, fc.array(fc.integer({ min: 1, max: 30_000 }), { minLength: 1, maxLength: 200 })],
    ([s, gaps]) => {
      const { fired, end } = simulate(
        s,
        gaps.map((gap) => ({ gap, toggle: false })),
        30_000
      )
      expect(fired.map((f) => f.scheduledFor)).toEqual(fireTimesBetween(s, base, end, 10_000).map((d) => d.getTime()))
      expect(fired.every((f) => !f.backfilled)).toBe(true)
    },
    { fastCheck: { numRuns: 200 } }
  )

  it.prop(
    "with downtime and pauses: paused windows fire nothing and are never caught up; one catch-up per outage",
    [
      cron,
      fc.array(
        fc.record({
          gap: fc.oneof(fc.integer({ min: 1, max: 30_000 }), fc.integer({ min: HOUR, max: 2 * 24 * HOUR })),
          toggle: fc.integer({ min: 0, max: 4 }).map((n) => n === 0)
        }),
        { minLength: 1, maxLength: 60 }
      )
    ],
    ([s, steps]) => {
      const { fired, pausedWindows } = simulate(s, steps, 30_000)
      // Each scheduled time fires at most once, in order.
      fired.slice(1).forEach((f, i) => expect(f.scheduledFor).toBeGreaterThan(fired[i]!.scheduledFor))
      for (const f of fired) {
        // Nothing scheduled inside a paused window (from the pause up to the resume) ever fires.
        for (const [from, to] of pausedWindows) {
          expect(f.scheduledFor > from && f.scheduledFor <= to).toBe(false)
        }
      }
      // At most one backfilled run per poll, and then it is the only run of that poll.
      const byPoll = new Map<number, Array<(typeof fired)[number]>>()
      for (const f of fired) byPoll.set(f.firedAt, [...(byPoll.get(f.firedAt) ?? []), f])
      for (const runs of byPoll.values()) {
        if (runs.some((r) => r.backfilled)) expect(runs).toHaveLength(1)
      }
    },
    { fastCheck: { numRuns: 200 } }
  )
})
