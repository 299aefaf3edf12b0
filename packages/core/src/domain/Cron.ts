/**
 * Cron schedules (docs/schedules.md): parsing a `cron_schedule` in its IANA `timezone`, and computing
 * when it fires. Built on effect's `Cron` (parsing, field sets, `next` / `prev`), with one
 * difference: effect walks the wall clock of the zone directly and misbehaves around daylight
 * saving changes (after a fall-back it skips the repeated hour, and from inside that hour it can
 * return a time *before* its start), so here effect only enumerates wall-clock times (a copy of
 * the expression in UTC, where there is no DST) and this module maps each wall time to real
 * instants itself.
 *
 * Syntax: standard 5 fields `minute hour day-of-month month day-of-week`, or 6 fields with a
 * LEADING seconds field (`second minute hour day-of-month month day-of-week`, effect's order);
 * 5-field expressions fire at second 0. Lists (`1,3`), ranges (`1-5`), steps (`0/15`, `1-31/2`, or
 * a star with a step), month and weekday names (`jan`, `mon`) and 7 for Sunday are accepted; `L`,
 * `W`, `#`, `?` and `@daily`-style macros are not. As in Vixie cron, when both day fields are
 * restricted the expression matches either of them, unless one of them starts with `*` (then both
 * must match). An expression no calendar date satisfies (`0 0 30 2 *`) is refused.
 *
 * Daylight saving (the wall clock is the truth; no tick is skipped or doubled beyond that):
 * - An expression is *interval-like* when its seconds, minute or hour field starts with `*`
 *   (every 15 minutes with a star step, `0 * * * *`); otherwise it is *fixed-time* (`30 2 * * *`).
 *   This is Vixie cron's rule for "wildcard" jobs.
 * - Interval-like: fires at every real instant whose local time matches. Wall times skipped by a
 *   spring-forward do not fire; wall times repeated by a fall-back fire in both occurrences. So an
 *   hourly expression fires exactly once per real hour: 23 times on a 23-hour day, 25 on a 25-hour day.
 * - Fixed-time: every matching wall time fires exactly once. A repeated wall time fires at its
 *   first occurrence (New York `30 1 * * *` on 2026-11-01 fires at 01:30 EDT = 05:30Z only). A
 *   skipped wall time fires shifted forward by the length of the gap, using the offset before the
 *   change, as RFC 5545 does (New York `30 2 * * *` on 2026-03-08 fires at 03:30 EDT = 07:30Z).
 *   Two wall times that land on the same instant fire once.
 * - Assumption: a zone never changes its offset twice within four days (true of every zone in the
 *   time zone database from 1970 to 2040).
 *
 * Times are epoch milliseconds or `Date`s; results are `Date`s on whole seconds, between the
 * years 1 and 9999.
 */
import { Cron, DateTime, Either, Option } from "effect"
import { InvalidRequest } from "./Errors.js"

/** A validated schedule: the expression, its zone, and the parsed forms this module works with. */
export interface CronSchedule {
  /** The expression as given (trimmed). */
  readonly expression: string
  /** The IANA zone name as given. */
  readonly timezone: string
  /** The expression in its zone: `Cron.match(cron, date)` tells whether a date's local time matches. */
  readonly cron: Cron.Cron
  /** The same expression in UTC: its matches are the local wall-clock times the schedule names. */
  readonly wallClock: Cron.Cron
  /** The resolved zone. */
  readonly zone: DateTime.TimeZone.Named
  /** Whether the seconds, minute or hour field starts with `*` (see the DST rules above). */
  readonly intervalLike: boolean
}

/** A point in time: a `Date` or epoch milliseconds. */
export type TimeInput = Date | number

/** Longest accepted `cron_schedule`. */
export const MAX_EXPRESSION_LENGTH = 256

const DAY = 86_400_000
const SECOND = 1_000
/** 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z: the instants this module works between. */
const MIN_TIME = -62_135_596_800_000
const MAX_TIME = 253_402_300_799_000
/** Where the "does it ever fire" check starts looking. */
const FEASIBILITY_REFERENCE = Date.UTC(2000, 0, 1)

const FIELDS_5 = ["minute", "hour", "day-of-month", "month", "day-of-week"] as const
const FIELDS_6 = ["second", ...FIELDS_5] as const
/** A valid value for every field of a 6-field expression; used to find which field is wrong. */
const NEUTRAL_6 = ["0", "0", "0", "1", "1", "0"] as const
/** The longest each month can be (February in a leap year). */
const MAX_MONTH_LENGTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31] as const

const cronError = (problem: string) => InvalidRequest.forField("cron_schedule", problem)

/** Names the first field of a 5- or 6-field expression that does not parse on its own. */
const describeFieldError = (segments: ReadonlyArray<string>, fallback: string): string => {
  const names: ReadonlyArray<string> = segments.length === 6 ? FIELDS_6 : FIELDS_5
  const offset = 6 - segments.length
  for (let i = 0; i < segments.length; i++) {
    const probe: Array<string> = [...NEUTRAL_6]
    probe[i + offset] = segments[i]!
    const parsed = Cron.parse(probe.join(" "), "UTC")
    if (Either.isLeft(parsed)) return `${names[i]} field "${segments[i]}" is invalid: ${parsed.left.message}`
  }
  return fallback
}

/** Whether some calendar date satisfies the day-of-month, month and day-of-week fields. */
const someDayMatches = (wallClock: Cron.Cron, segments: ReadonlyArray<string>): boolean => {
  const { days, months, weekdays } = wallClock
  if (days.size === 0) return true
  const dayField = segments[segments.length - 3]!
  const weekdayField = segments[segments.length - 1]!
  // Either day field may match (Vixie's OR), and every month has every weekday.
  const bothMustMatch = dayField.startsWith("*") || weekdayField.startsWith("*")
  if (weekdays.size !== 0 && !bothMustMatch) return true
  // Over the 400-year Gregorian cycle each (month, day) pair falls on every weekday, so only the
  // month lengths matter.
  for (let month = 1; month <= 12; month++) {
    if (months.size !== 0 && !months.has(month)) continue
    for (const day of days) if (day <= MAX_MONTH_LENGTH[month - 1]!) return true
  }
  return false
}

const WALL_CLOCK_ZONE = DateTime.zoneMakeOffset(0)

const resolveZone = (timezone: string): Option.Option<DateTime.TimeZone.Named> =>
  // Offsets ("+02:00") are not IANA names; some engines would accept them as zones.
  timezone.trim() === "" || /^[+-]/.test(timezone) ? Option.none() : DateTime.zoneMakeNamed(timezone)

/**
 * Parses and validates a schedule. Errors name `cron_schedule` (syntax, or an expression that never
 * fires such as `0 0 30 2 *`) or `timezone` (not an IANA zone name).
 */
export const parseSchedule = (expression: string, timezone: string): Either.Either<CronSchedule, InvalidRequest> => {
  const trimmed = expression.trim()
  if (trimmed === "") return Either.left(cronError("must not be empty"))
  if (trimmed.length > MAX_EXPRESSION_LENGTH) {
    return Either.left(cronError(`must be at most ${MAX_EXPRESSION_LENGTH} characters`))
  }
  const segments = trimmed.split(/\s+/)
  if (segments.length !== 5 && segments.length !== 6) {
    return Either.left(
      cronError(
        `expected 5 fields (minute hour day-of-month month day-of-week) or 6 with a leading seconds field, got ${segments.length}`
      )
    )
  }
  // Wall-clock times are read as UTC: a fixed offset of zero, which Effect steps without asking
  // `Intl` for the offset at every step, as it does for the zone named "UTC".
  const wallClock = Cron.parse(trimmed, WALL_CLOCK_ZONE)
  if (Either.isLeft(wallClock)) {
    return Either.left(cronError(describeFieldError(segments, wallClock.left.message)))
  }
  const zone = resolveZone(timezone)
  if (Option.isNone(zone)) {
    return Either.left(
      InvalidRequest.forField("timezone", `"${timezone}" is not an IANA time zone name (such as "Europe/Berlin" or "UTC")`)
    )
  }
  // Same text, already known to parse; the zone object avoids re-validating its name.
  const cron = Cron.unsafeParse(trimmed, zone.value)
  const schedule: CronSchedule = {
    expression: trimmed,
    timezone,
    cron,
    wallClock: wallClock.right,
    zone: zone.value,
    intervalLike: segments.slice(0, segments.length - 3).some((field) => field.startsWith("*"))
  }
  // The static check is exact for the Gregorian calendar; the search is a cheap safety net.
  if (!someDayMatches(wallClock.right, segments) || nextFireTimes(schedule, FEASIBILITY_REFERENCE, 1).length === 0) {
    return Either.left(cronError(`"${trimmed}" never fires: no calendar date matches its day and month fields`))
  }
  return Either.right(schedule)
}

const toMillis = (input: TimeInput): number => (typeof input === "number" ? input : input.getTime())

const inRange = (t: number): boolean => Number.isFinite(t) && t >= MIN_TIME && t <= MAX_TIME

const isUtc = (schedule: CronSchedule): boolean => schedule.zone.id === "UTC"

/** The zone's UTC offset at an instant, in milliseconds (local = instant + offset). */
const offsetAt = (schedule: CronSchedule, t: number): number =>
  isUtc(schedule) ? 0 : DateTime.zonedOffset(DateTime.unsafeMakeZoned(t, { timeZone: schedule.zone }))

/**
 * The least and greatest offsets within 36 hours of an instant (which covers every offset a wall
 * time near it can be read with). Three samples see them all, as no zone changes twice in four days.
 */
const offsetBounds = (schedule: CronSchedule, t: number): { readonly min: number; readonly max: number } => {
  if (isUtc(schedule)) return { min: 0, max: 0 }
  const offsets = [-1.5, 0, 1.5].map((k) => offsetAt(schedule, t + k * DAY))
  return { min: Math.min(...offsets), max: Math.max(...offsets) }
}

/** Where one matching wall-clock time fires; `gap` is set when it was skipped and does not fire. */
interface Resolved {
  readonly instants: ReadonlyArray<number>
  /** The skipped wall-clock range [start, end), for jumping over it. */
  readonly gap?: { readonly start: number; readonly end: number }
}

/**
 * Where one matching wall-clock time (epoch ms of the wall time read as UTC) fires, per the DST
 * rules in the module comment. Instants ascending.
 */
const resolveWall = (schedule: CronSchedule, wall: number): Resolved => {
  const before = offsetAt(schedule, wall - DAY)
  const after = offsetAt(schedule, wall + DAY)
  if (before === after) return { instants: [wall - before] }
  const existsBefore = offsetAt(schedule, wall - before) === before
  const existsAfter = offsetAt(schedule, wall - after) === after
  if (existsBefore && existsAfter) {
    // Repeated by a fall-back (before > after): the first occurrence is wall - before.
    return { instants: schedule.intervalLike ? [wall - before, wall - after] : [wall - before] }
  }
  if (existsBefore) return { instants: [wall - before] }
  if (existsAfter) return { instants: [wall - after] }
  // Skipped by a spring-forward: with the old offset it lands after the change, shifted by the gap.
  if (!schedule.intervalLike) return { instants: [wall - before] }
  // The change happens in (wall - after, wall - before]; find it so the caller can jump the gap.
  let lo = wall - after
  let hi = wall - before
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2)
    if (offsetAt(schedule, mid) === before) lo = mid
    else hi = mid
  }
  return { instants: [], gap: { start: hi + before, end: hi + after } }
}

/**
 * The next matching wall-clock time (epoch ms of the wall time read as UTC) at or after the second
 * following `wall`, or undefined. effect's `Cron.next` gives up (throws) after 10,000 internal
 * steps; parseSchedule rejects the expressions that could get there.
 */
const wallAfter = (schedule: CronSchedule, wall: number): number | undefined => {
  try {
    const found = Cron.next(schedule.wallClock, wall).getTime()
    return found <= MAX_TIME + DAY ? found : undefined
  } catch {
    return undefined
  }
}

/**
 * The latest matching wall-clock time before the second containing `wall`, or undefined.
 * effect 3.22's `Cron.prev` is wrong when a month before is shorter than the largest day in the
 * day-of-month field (`0 0 31 * *` from 2026-05-15 gives 2026-05-01, and from 2026-03-31 it can
 * even move forward), so its answer is used only when `Cron.next` confirms it: it matches and the
 * next match after it is not before `wall`. Otherwise the answer is searched forwards, in windows
 * growing fourfold from a minute.
 */
const wallBefore = (schedule: CronSchedule, wall: number): number | undefined => {
  const target = Math.floor(wall / SECOND) * SECOND
  if (target < MIN_TIME - DAY) return undefined
  try {
    const quick = Cron.prev(schedule.wallClock, target).getTime()
    if (quick < target && Cron.match(schedule.wallClock, quick) && (wallAfter(schedule, quick) ?? Infinity) >= target) {
      return quick
    }
  } catch {
    // effect gave up; search forwards below.
  }
  for (let window = 60 * SECOND; ; window *= 4) {
    let latest: number | undefined
    let cursor: number | undefined = target - window - SECOND
    while ((cursor = wallAfter(schedule, cursor)) !== undefined && cursor < target) latest = cursor
    if (latest !== undefined) return latest
    if (target - window < MIN_TIME - DAY) return undefined
  }
}

/** Inserts into an ascending array of distinct numbers, keeping at most `limit` of the smallest. */
const insertAscending = (values: Array<number>, value: number, limit: number): void => {
  let i = values.length
  while (i > 0 && values[i - 1]! > value) i--
  if (i > 0 && values[i - 1] === value) return
  values.splice(i, 0, value)
  if (values.length > limit) values.pop()
}

/** The first `n` fire times strictly after `from`, ascending and distinct. */
export const nextFireTimes = (schedule: CronSchedule, from: TimeInput, n: number): ReadonlyArray<Date> => {
  const start = toMillis(from)
  const count = Math.floor(n)
  if (!inRange(start) || !(count >= 1)) return []
  const found: Array<number> = []
  // A wall time w fires at w - offset, so no wall time before start + (least offset) fires after start.
  let wall: number | undefined = start + offsetBounds(schedule, start).min - SECOND
  let stopAbove = Infinity
  let stopFor: number | undefined
  while ((wall = wallAfter(schedule, wall)) !== undefined) {
    // Once full, a wall time above N + (greatest offset near N) can only fire after N.
    if (found.length === count && wall > stopAbove) break
    const resolved = resolveWall(schedule, wall)
    for (const t of resolved.instants) if (t > start && t <= MAX_TIME) insertAscending(found, t, count)
    if (resolved.gap !== undefined) wall = Math.max(wall, resolved.gap.end - SECOND)
    const last = found[count - 1]
    if (last !== undefined && last !== stopFor) {
      stopFor = last
      stopAbove = last + offsetBounds(schedule, last).max
    }
  }
  return found.map((t) => new Date(t))
}

/** The first fire time strictly after `from`, or undefined past the year 9999. */
export const nextFire = (schedule: CronSchedule, from: TimeInput): Date | undefined =>
  nextFireTimes(schedule, from, 1)[0]

/**
 * The latest `limit` fire times `t` with `after < t <= until`, ascending: what came due in a window,
 * without enumerating a long one from its start.
 */
export const fireTimesBetween = (
  schedule: CronSchedule,
  after: TimeInput,
  until: TimeInput,
  limit: number
): ReadonlyArray<Date> => {
  const low = Math.max(toMillis(after), MIN_TIME - 1)
  const high = Math.min(toMillis(until), MAX_TIME)
  const count = Math.floor(limit)
  if (Number.isNaN(low) || Number.isNaN(high) || low >= high || !(count >= 1)) return []
  const found: Array<number> = [] // descending, stored negated to reuse insertAscending
  // A fire time above `low` comes from a wall time above low + (least offset near low).
  const stopBelowAfter = low + offsetBounds(schedule, low).min
  let stopBelow = stopBelowAfter
  let stopFor: number | undefined
  let wall: number | undefined = high + offsetBounds(schedule, high).max + SECOND
  while ((wall = wallBefore(schedule, wall)) !== undefined && wall > stopBelow) {
    const resolved = resolveWall(schedule, wall)
    for (const t of resolved.instants) if (t > low && t <= high) insertAscending(found, -t, count)
    if (resolved.gap !== undefined) wall = Math.min(wall, resolved.gap.start)
    const oldestKept = found[count - 1]
    if (oldestKept !== undefined && oldestKept !== stopFor) {
      stopFor = oldestKept
      // Once full, only a wall time above M + (least offset near M) can fire after M, the oldest kept.
      stopBelow = Math.max(stopBelowAfter, -oldestKept + offsetBounds(schedule, -oldestKept).min)
    }
  }
  return found.map((t) => new Date(-t)).reverse()
}

/** Whether the schedule fires at exactly this instant. */
export const isFireTime = (schedule: CronSchedule, at: TimeInput): boolean => {
  const t = toMillis(at)
  return nextFire(schedule, t - 1)?.getTime() === t
}
