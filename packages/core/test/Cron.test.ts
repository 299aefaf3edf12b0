import { describe, expect, it } from "@effect/vitest"
import { Cron, DateTime, Either } from "effect"
import * as fc from "fast-check"
import type { CronSchedule } from "../src/domain/Cron.js"
import { fireTimesBetween, isFireTime, nextFire, nextFireTimes, parseSchedule } from "../src/domain/Cron.js"

const HOUR = 3_600_000
const DAY = 24 * HOUR

const schedule = (expression: string, timezone = "UTC"): CronSchedule => {
  const parsed = parseSchedule(expression, timezone)
  if (Either.isLeft(parsed)) throw new Error(`expected ${expression} in ${timezone} to parse: ${parsed.left.message}`)
  return parsed.right
}

const rejection = (expression: string, timezone = "UTC") => {
  const parsed = parseSchedule(expression, timezone)
  if (Either.isRight(parsed)) throw new Error(`expected ${expression} in ${timezone} to be rejected`)
  return parsed.left
}

const iso = (dates: ReadonlyArray<Date>) => dates.map((d) => d.toISOString())
const at = (s: string) => Date.parse(s)

/** Fire times in [start, end) (at most 200), from nextFireTimes. */
const fireTimesIn = (s: CronSchedule, start: string, end: string): ReadonlyArray<Date> =>
  nextFireTimes(s, at(start) - 1, 200).filter((d) => d.getTime() < at(end))

const offsetAt = (zone: DateTime.TimeZone, t: number) => DateTime.zonedOffset(DateTime.unsafeMakeZoned(t, { timeZone: zone }))

/** The instants in a year where a zone changes offset, with the offsets on either side. */
const transitions = (timezone: string, year: number) => {
  const zone = DateTime.zoneUnsafeMakeNamed(timezone)
  const found: Array<{ at: number; before: number; after: number }> = []
  const end = Date.UTC(year + 1, 0, 1)
  for (let t = Date.UTC(year, 0, 1); t < end; t += 6 * HOUR) {
    const before = offsetAt(zone, t)
    const after = offsetAt(zone, t + 6 * HOUR)
    if (before === after) continue
    let lo = t
    let hi = t + 6 * HOUR
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2)
      if (offsetAt(zone, mid) === before) lo = mid
      else hi = mid
    }
    found.push({ at: hi, before, after })
  }
  return found
}

describe("Cron", () => {
  describe("parseSchedule", () => {
    it("reads 5 fields, firing at second 0", () => {
      const s = schedule("30 2 * * *")
      expect(iso(nextFireTimes(s, at("2026-05-01T00:00:00Z"), 2))).toEqual([
        "2026-05-01T02:30:00.000Z",
        "2026-05-02T02:30:00.000Z"
      ])
    })

    it("reads a 6th field as LEADING seconds", () => {
      expect(iso(nextFireTimes(schedule("15 30 2 * * *"), at("2026-05-01T00:00:00Z"), 1))).toEqual([
        "2026-05-01T02:30:15.000Z"
      ])
      expect(iso(nextFireTimes(schedule("*/20 * * * * *"), at("2026-05-01T00:00:00Z"), 3))).toEqual([
        "2026-05-01T00:00:20.000Z",
        "2026-05-01T00:00:40.000Z",
        "2026-05-01T00:01:00.000Z"
      ])
    })

    it("accepts names, ranges, lists, steps and 7 for Sunday", () => {
      // 2026-05-03 is a Sunday.
      const s = schedule("0 9-17/4 * may sun,7", "Europe/Berlin")
      expect(iso(nextFireTimes(s, at("2026-05-01T00:00:00Z"), 3))).toEqual([
        "2026-05-03T07:00:00.000Z",
        "2026-05-03T11:00:00.000Z",
        "2026-05-03T15:00:00.000Z"
      ])
    })

    it("matches either day field when both are restricted, both when one starts with *", () => {
      // The 13th or any Friday; 2026-02-06 is a Friday.
      expect(iso(nextFireTimes(schedule("0 0 13 * 5"), at("2026-02-01T00:00:00Z"), 2))).toEqual([
        "2026-02-06T00:00:00.000Z",
        "2026-02-13T00:00:00.000Z"
      ])
      // An odd day that is also a Friday (the day field starts with *: both must match).
      expect(iso(nextFireTimes(schedule("0 0 */2 * 5"), at("2026-02-01T00:00:00Z"), 2))).toEqual([
        "2026-02-13T00:00:00.000Z",
        "2026-02-27T00:00:00.000Z"
      ])
    })

    it("keeps the expression trimmed and the zone as given", () => {
      const s = schedule("  0 12 * * 1-5 ", "US/Eastern")
      expect(s.expression).toBe("0 12 * * 1-5")
      expect(s.timezone).toBe("US/Eastern")
      expect(s.intervalLike).toBe(false)
      expect(schedule("0 * * * *").intervalLike).toBe(true)
      expect(schedule("*/10 30 2 * * *").intervalLike).toBe(true)
      expect(schedule("0 30 2 * * *").intervalLike).toBe(false)
      expect(Either.isRight(parseSchedule("* * * * *", "GMT"))).toBe(true)
    })

    it("rejects malformed expressions as invalid_request on cron_schedule, naming the field", () => {
      const cases: ReadonlyArray<readonly [string, string]> = [
        ["", "must not be empty"],
        ["   ", "must not be empty"],
        ["* * * *", "got 4"],
        ["* * * * * * *", "got 7"],
        ["61 * * * *", 'minute field "61"'],
        ["30 30 * * *", 'hour field "30"'],
        ["0 0 0 * *", 'day-of-month field "0"'],
        ["0 0 * 13 *", 'month field "13"'],
        ["0 0 * * 8", 'day-of-week field "8"'],
        ["60 * * * * *", 'second field "60"'],
        ["*/0 * * * *", 'minute field "*/0"'],
        ["5-1 * * * *", 'minute field "5-1"'],
        ["L * * * *", 'minute field "L"'],
        ["@daily", "got 1"],
        ["0 ".repeat(200), "at most 256 characters"]
      ]
      for (const [expression, problem] of cases) {
        const error = rejection(expression)
        expect(error.errorCode).toBe("invalid_request")
        expect(error.field).toBe("cron_schedule")
        expect(error.message).toContain("cron_schedule")
        expect(error.message).toContain(problem)
      }
    })

    it("rejects a time zone that is not an IANA name, on the timezone field", () => {
      for (const timezone of ["Mars/Olympus_Mons", "", "+02:00", "-05:00", "local"]) {
        const error = rejection("0 * * * *", timezone)
        expect(error.field).toBe("timezone")
        expect(error.message).toContain("IANA")
      }
    })

    it("rejects expressions that never fire", () => {
      for (const expression of ["0 0 31 2 *", "0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 30,31 feb *", "0 0 30 2 */7"]) {
        const error = rejection(expression, "America/New_York")
        expect(error.field).toBe("cron_schedule")
        expect(error.message).toContain("never fires")
      }
    })

    it("accepts rare but possible dates", () => {
      // February 29th: 2100 is not a leap year.
      expect(iso(nextFireTimes(schedule("0 0 29 2 *"), at("2097-01-01T00:00:00Z"), 1))).toEqual([
        "2104-02-29T00:00:00.000Z"
      ])
      // February 29th on a Sunday (both day fields must match).
      expect(iso(nextFireTimes(schedule("0 0 29 2 */7"), at("2026-01-01T00:00:00Z"), 2))).toEqual([
        "2032-02-29T00:00:00.000Z",
        "2060-02-29T00:00:00.000Z"
      ])
      // The 30th of February OR any Monday of February.
      expect(iso(nextFireTimes(schedule("0 0 30 2 1"), at("2026-01-01T00:00:00Z"), 1))).toEqual([
        "2026-02-02T00:00:00.000Z"
      ])
      // The 31st fires only in months that have one.
      expect(iso(nextFireTimes(schedule("0 0 31 * *"), at("2026-04-01T00:00:00Z"), 2))).toEqual([
        "2026-05-31T00:00:00.000Z",
        "2026-07-31T00:00:00.000Z"
      ])
    })
  })

  describe("daylight saving in America/New_York", () => {
    it("a fixed time skipped by the spring-forward fires once, shifted by the gap (02:30 EST -> 03:30 EDT)", () => {
      const s = schedule("30 2 * * *", "America/New_York")
      expect(iso(nextFireTimes(s, at("2026-03-06T12:00:00Z"), 4))).toEqual([
        "2026-03-07T07:30:00.000Z", // 02:30 EST
        "2026-03-08T07:30:00.000Z", // 02:30 does not exist: 03:30 EDT
        "2026-03-09T06:30:00.000Z", // 02:30 EDT
        "2026-03-10T06:30:00.000Z"
      ])
    })

    it("a fixed time and its shifted twin fire once", () => {
      const s = schedule("30 2,3 * * *", "America/New_York")
      expect(iso(fireTimesIn(s, "2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z"))).toEqual(["2026-03-08T07:30:00.000Z"])
    })

    it("a fixed time repeated by the fall-back fires once, at its first occurrence (EDT)", () => {
      const s = schedule("30 1 * * *", "America/New_York")
      expect(iso(nextFireTimes(s, at("2026-10-30T12:00:00Z"), 3))).toEqual([
        "2026-10-31T05:30:00.000Z", // 01:30 EDT
        "2026-11-01T05:30:00.000Z", // first 01:30 (EDT); the second (06:30Z, EST) does not fire
        "2026-11-02T06:30:00.000Z" // 01:30 EST
      ])
      // From inside the repeated hour, the next run is tomorrow's, never an earlier instant.
      expect(iso(nextFireTimes(s, at("2026-11-01T06:00:00Z"), 1))).toEqual(["2026-11-02T06:30:00.000Z"])
      expect(isFireTime(s, at("2026-11-01T05:30:00Z"))).toBe(true)
      expect(isFireTime(s, at("2026-11-01T06:30:00Z"))).toBe(false)
    })

    it("hourly: one tick per real hour, 23 on the spring-forward day and 25 on the fall-back day", () => {
      const s = schedule("0 * * * *", "America/New_York")
      const spring = fireTimesIn(s, "2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z") // local midnight to midnight
      expect(spring).toHaveLength(23)
      expect(spring[0]?.toISOString()).toBe("2026-03-08T05:00:00.000Z")
      expect(iso(spring.slice(1, 3))).toEqual(["2026-03-08T06:00:00.000Z", "2026-03-08T07:00:00.000Z"]) // 01:00 EST, 03:00 EDT
      const fall = fireTimesIn(s, "2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z")
      expect(fall).toHaveLength(25)
      expect(iso(fall.slice(1, 4))).toEqual([
        "2026-11-01T05:00:00.000Z", // 01:00 EDT
        "2026-11-01T06:00:00.000Z", // 01:00 EST
        "2026-11-01T07:00:00.000Z" // 02:00 EST
      ])
      for (const ticks of [spring, fall]) {
        ticks.slice(1).forEach((d, i) => expect(d.getTime() - ticks[i]!.getTime()).toBe(HOUR))
      }
    })

    it("every 15 minutes: evenly spaced in real time across both changes", () => {
      const s = schedule("*/15 * * * *", "America/New_York")
      const spring = fireTimesIn(s, "2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z")
      const fall = fireTimesIn(s, "2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z")
      expect(spring).toHaveLength(23 * 4)
      expect(fall).toHaveLength(25 * 4)
      for (const ticks of [spring, fall]) {
        ticks.slice(1).forEach((d, i) => expect(d.getTime() - ticks[i]!.getTime()).toBe(15 * 60_000))
      }
    })

    it("an interval-like expression inside the skipped hour does not fire that day", () => {
      const s = schedule("*/15 2 * * *", "America/New_York")
      expect(iso(nextFireTimes(s, at("2026-03-08T06:50:00Z"), 2))).toEqual([
        "2026-03-09T06:00:00.000Z",
        "2026-03-09T06:15:00.000Z"
      ])
    })
  })

  describe("daylight saving in Europe/Berlin", () => {
    it("02:30 on the spring-forward day fires at 03:30 CEST; on the fall-back day at the first 02:30 (CEST)", () => {
      const s = schedule("30 2 * * *", "Europe/Berlin")
      expect(iso(nextFireTimes(s, at("2026-03-28T00:00:00Z"), 3))).toEqual([
        "2026-03-28T01:30:00.000Z",
        "2026-03-29T01:30:00.000Z", // 03:30 CEST
        "2026-03-30T00:30:00.000Z"
      ])
      expect(iso(nextFireTimes(s, at("2026-10-24T00:00:00Z"), 3))).toEqual([
        "2026-10-24T00:30:00.000Z",
        "2026-10-25T00:30:00.000Z", // 02:30 CEST; 02:30 CET (01:30Z) does not fire
        "2026-10-26T01:30:00.000Z"
      ])
    })

    it("hourly: 23 ticks on 2026-03-29 and 25 on 2026-10-25, one per real hour", () => {
      const s = schedule("0 * * * *", "Europe/Berlin")
      const spring = fireTimesIn(s, "2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z")
      const fall = fireTimesIn(s, "2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z")
      expect(spring).toHaveLength(23)
      expect(fall).toHaveLength(25)
      for (const ticks of [spring, fall]) {
        ticks.slice(1).forEach((d, i) => expect(d.getTime() - ticks[i]!.getTime()).toBe(HOUR))
      }
    })

    it("every second runs straight through the gap", () => {
      const s = schedule("* * * * * *", "Europe/Berlin")
      expect(iso(nextFireTimes(s, at("2026-03-29T00:59:58Z"), 3))).toEqual([
        "2026-03-29T00:59:59.000Z", // 01:59:59 CET
        "2026-03-29T01:00:00.000Z", // 03:00:00 CEST
        "2026-03-29T01:00:01.000Z"
      ])
      const last = fireTimesBetween(s, at("2026-03-29T00:00:00Z"), at("2026-03-29T01:00:01Z"), 3)
      expect(iso(last)).toEqual(["2026-03-29T00:59:59.000Z", "2026-03-29T01:00:00.000Z", "2026-03-29T01:00:01.000Z"])
    })
  })

  describe("nextFireTimes, nextFire, fireTimesBetween, isFireTime", () => {
    it("is strictly after from, and empty for nothing asked or an invalid instant", () => {
      const s = schedule("0 * * * *")
      expect(iso(nextFireTimes(s, at("2026-05-01T10:00:00Z"), 1))).toEqual(["2026-05-01T11:00:00.000Z"])
      expect(nextFire(s, new Date("2026-05-01T09:59:59.999Z"))?.toISOString()).toBe("2026-05-01T10:00:00.000Z")
      expect(nextFireTimes(s, 0, 0)).toEqual([])
      expect(nextFireTimes(s, Number.NaN, 3)).toEqual([])
      expect(nextFire(s, new Date("9999-12-31T23:30:00Z"))).toBeUndefined()
    })

    it("a hand-built schedule that never fires yields nothing instead of throwing", () => {
      const never: CronSchedule = { ...schedule("0 0 * * *"), wallClock: Cron.unsafeParse("0 0 31 2 *", "UTC") }
      expect(nextFireTimes(never, at("2026-01-01T00:00:00Z"), 3)).toEqual([])
      expect(fireTimesBetween(never, at("2020-01-01T00:00:00Z"), at("2026-01-01T00:00:00Z"), 3)).toEqual([])
    })

    it("fireTimesBetween keeps the latest ones in (after, until]", () => {
      const s = schedule("*/10 * * * *", "Europe/Berlin")
      expect(iso(fireTimesBetween(s, at("2026-05-01T10:00:00Z"), at("2026-05-01T10:30:00Z"), 10))).toEqual([
        "2026-05-01T10:10:00.000Z",
        "2026-05-01T10:20:00.000Z",
        "2026-05-01T10:30:00.000Z"
      ])
      expect(iso(fireTimesBetween(s, at("2026-05-01T10:00:00Z"), at("2026-05-01T10:30:00Z"), 1))).toEqual([
        "2026-05-01T10:30:00.000Z"
      ])
      expect(fireTimesBetween(s, at("2026-05-01T10:30:00Z"), at("2026-05-01T10:30:00Z"), 5)).toEqual([])
      expect(fireTimesBetween(s, at("2026-05-01T10:00:00Z"), at("2026-05-01T11:00:00Z"), 0)).toEqual([])
      // effect 3.22's Cron.prev alone would answer 2026-05-01 here (April has no 31st).
      expect(iso(fireTimesBetween(schedule("0 0 31 * *"), at("2026-01-01T00:00:00Z"), at("2026-05-15T00:00:00Z"), 2))).toEqual([
        "2026-01-31T00:00:00.000Z",
        "2026-03-31T00:00:00.000Z"
      ])
      // A yearly schedule over a long window stops at the window instead of scanning further back.
      expect(iso(fireTimesBetween(schedule("0 0 1 1 *"), at("2020-06-01T00:00:00Z"), at("2026-06-01T00:00:00Z"), 100))).toEqual(
        ["2021", "2022", "2023", "2024", "2025", "2026"].map((y) => `${y}-01-01T00:00:00.000Z`)
      )
    })
  })

  const zones = [
    "UTC",
    "America/New_York",
    "Europe/Berlin",
    "Europe/London",
    "Australia/Sydney",
    "Australia/Lord_Howe", // 30-minute shift
    "Pacific/Chatham", // +12:45 / +13:45
    "America/St_Johns", // -03:30 / -02:30
    "Asia/Kolkata" // no DST
  ] as const
  const transitionsByZone = new Map(zones.map((zone) => [zone, transitions(zone, 2026)] as const))

  const minuteField = fc.constantFrom("*", "*/15", "0", "30", "0,30", "5-10", "*/7", "59", "10-50/20", "45")
  const hourField = fc.constantFrom("*", "*/2", "0", "1", "2", "3", "1-3", "2,14", "*/5", "23")
  const dayField = fc.constantFrom("*", "*", "*", "1", "15", "*/2", "31", "29", "1-7")
  const monthField = fc.constantFrom("*", "*", "3", "3,10,11", "1-6", "*/3", "2", "4,10")
  const weekdayField = fc.constantFrom("*", "*", "0", "1-5", "6,0", "*/2", "sun")
  const secondField = fc.constantFrom("0", "*/20", "15", "*", "0,30")
  const expression5 = fc
    .tuple(minuteField, hourField, dayField, monthField, weekdayField)
    .map((fields) => fields.join(" "))
  const expression = fc.oneof(
    expression5,
    fc.tuple(secondField, expression5).map(([s, rest]) => `${s} ${rest}`)
  )
  const zone = fc.constantFrom(...zones)
  const parsed = fc
    .tuple(expression, zone)
    .map(([e, z]) => parseSchedule(e, z))
    .filter(Either.isRight)
    .map((e) => e.right)
  /** Anywhere between 1971 and 2100, or within 3 hours of a DST change in 2026. */
  const instant = (z: CronSchedule) =>
    fc.oneof(
      fc.integer({ min: Date.UTC(1971, 0, 1), max: Date.UTC(2100, 0, 1) }),
      fc
        .tuple(
          fc.constantFrom(0, ...(transitionsByZone.get(z.timezone as (typeof zones)[number]) ?? []).map((t) => t.at)),
          fc.integer({ min: -3 * HOUR, max: 3 * HOUR })
        )
        .map(([t, d]) => (t === 0 ? Date.UTC(2026, 6, 1) : t) + d)
    )
  const scheduleAndInstant = parsed.chain((s) => fc.tuple(fc.constant(s), instant(s)))

  /** Whether t is a fixed-time wall time skipped by a spring-forward and shifted by the gap. */
  const shiftedOverGap = (s: CronSchedule, t: number) => {
    const before = offsetAt(s.zone, t - DAY)
    return before < offsetAt(s.zone, t) && Cron.match(s.wallClock, new Date(t + before))
  }

  it.prop(
    "fire times are strictly increasing, after from, and match the expression in its zone",
    [scheduleAndInstant, fc.integer({ min: 1, max: 8 })],
    ([[s, from], n]) => {
      const times = nextFireTimes(s, from, n).map((d) => d.getTime())
      expect(times).toHaveLength(n)
      expect(times[0]!).toBeGreaterThan(from)
      times.slice(1).forEach((t, i) => expect(t).toBeGreaterThan(times[i]!))
      for (const t of times) {
        if (s.intervalLike) expect(Cron.match(s.cron, new Date(t))).toBe(true)
        else expect(Cron.match(s.cron, new Date(t)) || shiftedOverGap(s, t)).toBe(true)
      }
    },
    { fastCheck: { numRuns: 300 } }
  )

  it.prop(
    "nextFire is the first of nextFireTimes, and each next time follows the previous one",
    [scheduleAndInstant, fc.integer({ min: 1, max: 6 })],
    ([[s, from], n]) => {
      const times = nextFireTimes(s, from, n)
      expect(nextFire(s, from)).toEqual(times[0])
      times.slice(1).forEach((t, i) => expect(nextFire(s, times[i]!)).toEqual(t))
      for (const t of times) expect(isFireTime(s, t)).toBe(true)
    },
    { fastCheck: { numRuns: 200 } }
  )

  it.prop(
    "fireTimesBetween is the latest `limit` fire times in (after, until]",
    [scheduleAndInstant, fc.integer({ min: 1, max: 6 * HOUR }), fc.integer({ min: 1, max: 5 })],
    ([[s, after], width, limit]) => {
      const until = after + width
      const found = fireTimesBetween(s, after, until, limit)
      const firstInWindow = nextFire(s, after)
      if (found.length === 0) {
        expect(firstInWindow!.getTime()).toBeGreaterThan(until)
        return
      }
      const first = found[0]!.getTime()
      const last = found[found.length - 1]!.getTime()
      expect(found.length).toBeLessThanOrEqual(limit)
      expect(first).toBeGreaterThan(after)
      expect(last).toBeLessThanOrEqual(until)
      // Consecutive fire times, none missing between them, and none after them in the window.
      expect(nextFireTimes(s, first - 1, found.length)).toEqual(found)
      expect(nextFire(s, last)!.getTime()).toBeGreaterThan(until)
      // Fewer than asked only when the window holds no more.
      if (found.length < limit) expect(firstInWindow).toEqual(found[0])
    },
    { fastCheck: { numRuns: 200 } }
  )

  const dayOfMonthField = fc.constantFrom("*", "1", "15", "28", "29", "30", "31", "29-31", "*/10", "1,31", "30,31")
  const sparseMonthField = fc.constantFrom("*", "2", "2,4", "4,6,9,11", "1-3", "*/5", "feb", "2,3")
  const sparseWeekdayField = fc.constantFrom("*", "*", "0", "1-5", "*/3", "6")
  const sparseExpression = fc
    .tuple(
      fc.constantFrom("", "0 ", "*/30 "),
      fc.constantFrom("0", "*/20", "59"),
      fc.constantFrom("0", "23", "*/8"),
      dayOfMonthField,
      sparseMonthField,
      sparseWeekdayField
    )
    .map(([seconds, ...rest]) => `${seconds}${rest.join(" ")}`)

  /** Fire times in UTC, found day by day with effect's Cron.match; up to `n` within 40 years. */
  const dayByDay = (s: CronSchedule, from: number, n: number): Array<number> => {
    const values = (set: ReadonlySet<number>, size: number) => (set.size > 0 ? [...set] : [...Array(size).keys()])
    const [seconds, minutes, hours] = [values(s.wallClock.seconds, 60), values(s.wallClock.minutes, 60), values(s.wallClock.hours, 24)]
    const found: Array<number> = []
    for (let day = Math.floor(from / DAY) * DAY, i = 0; i < 40 * 366 && found.length < n; i++, day += DAY) {
      if (!Cron.match(s.wallClock, day + hours[0]! * HOUR + minutes[0]! * 60_000 + seconds[0]! * 1000)) continue
      for (const h of hours) {
        for (const m of minutes) {
          for (const sec of seconds) {
            const t = day + h * HOUR + m * 60_000 + sec * 1000
            if (t > from && found.length < n) found.push(t)
          }
        }
      }
    }
    return found
  }

  it.prop(
    "in UTC, fire times equal a day-by-day search, also backwards; only expressions that never fire are refused",
    [sparseExpression, fc.integer({ min: Date.UTC(1990, 0, 1), max: Date.UTC(2090, 0, 1) }), fc.integer({ min: 1, max: 4 })],
    ([e, from, n]) => {
      const parsedSchedule = parseSchedule(e, "UTC")
      if (Either.isLeft(parsedSchedule)) {
        expect(parsedSchedule.left.message).toContain("never fires")
        expect(dayByDay(schedule("0 0 * * *"), from, 1)).toHaveLength(1) // the oracle itself works
        const refused = Either.getOrThrow(Cron.parse(e, "UTC"))
        expect(dayByDay({ wallClock: refused } as CronSchedule, from, 1)).toEqual([])
        return
      }
      const s = parsedSchedule.right
      const expected = dayByDay(s, from, n)
      expect(nextFireTimes(s, from, n).map((d) => d.getTime())).toEqual(expected)
      const until = expected[expected.length - 1]!
      expect(fireTimesBetween(s, from, until, n).map((d) => d.getTime())).toEqual(expected)
    },
    { fastCheck: { numRuns: 300 } }
  )

  it.prop(
    "around every 2026 DST change, fire times equal a minute-by-minute oracle",
    [
      fc.constantFrom(...zones.filter((z) => (transitionsByZone.get(z) ?? []).length > 0)),
      fc.nat(),
      expression5
    ],
    ([timezone, pick, e]) => {
      const changes = transitionsByZone.get(timezone)!
      const change = changes[pick % changes.length]!
      const parsedSchedule = parseSchedule(e, timezone)
      fc.pre(Either.isRight(parsedSchedule))
      const s = (parsedSchedule as Either.Right<never, CronSchedule>).right
      const start = change.at - 3 * HOUR
      const end = change.at + 3 * HOUR
      const expected = new Set<number>()
      // Every real minute whose local time matches, except (fixed-time) second occurrences.
      for (let t = Math.ceil(start / 60_000) * 60_000 + 60_000; t <= end; t += 60_000) {
        if (!Cron.match(s.cron, new Date(t))) continue
        const repeatedBy = change.before - change.after
        const secondOccurrence = repeatedBy > 0 && t >= change.at && t < change.at + repeatedBy
        if (s.intervalLike || !secondOccurrence) expected.add(t)
      }
      // Fixed-time wall times inside a gap fire shifted by it.
      if (!s.intervalLike && change.after > change.before) {
        for (let wall = change.at + change.before; wall < change.at + change.after; wall += 60_000) {
          if (Cron.match(s.wallClock, new Date(wall))) expected.add(wall - change.before)
        }
      }
      const actual = fireTimesBetween(s, start, end, 10_000).map((d) => d.getTime())
      expect(actual).toEqual([...expected].sort((a, b) => a - b))
      expect(nextFireTimes(s, start, actual.length).map((d) => d.getTime())).toEqual(actual)
    },
    { fastCheck: { numRuns: 200 } }
  )
})
