/**
 * Cron expressions in words (docs/schedules.md): `describe` says in plain English when a schedule
 * fires: "every 15 minutes", "at 09:00 on Monday through Friday", "at minute 0 past every 2nd
 * hour", "at 09:00 on the 1st and 15th of the month, and also on Monday".
 *
 * It reads the field sets the expression parses to (Cron.ts, on effect's `Cron`), not its text, so
 * two spellings of one schedule (`*` and `0-59`, `5-7` and `fri-sun` for weekdays, `*` + `/1` and
 * `*`) read alike, and anything without a common phrase is worded field by field, never rounded
 * to something close: a step that does not divide its field's range (`*` + `/7` minutes fires at
 * 56 and then at 0) is "every 7th minute from 0 through 56", not "every 7 minutes". When both day
 * fields are restricted the wording follows the matching rule of Cron.ts: either day matches
 * ("..., and also on Monday"), or both must when one of them starts with `*` ("... if that day is
 * a Monday"). Times are wall-clock times in the schedule's time zone, which the words do not name.
 */
import type { Cron } from "effect"
import type { CronSchedule } from "./Cron.js"

interface Bounds {
  readonly min: number
  readonly max: number
}

const SECONDS: Bounds = { min: 0, max: 59 }
const MINUTES: Bounds = { min: 0, max: 59 }
const HOURS: Bounds = { min: 0, max: 23 }
const DAYS: Bounds = { min: 1, max: 31 }
const MONTHS: Bounds = { min: 1, max: 12 }
const WEEKDAYS: Bounds = { min: 0, max: 6 }

const MONTH_NAMES = [
  "January", "February", "March", "April", "May", "June",
  "July", "August", "September", "October", "November", "December"
] as const
/** Monday first, as people read a week. */
const WEEKDAY_NAMES = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"] as const

/** The most clock times listed one by one ("at 09:00, 12:00 and 17:00") before the field-by-field wording. */
const MAX_CLOCK_TIMES = 6

/** The field's values, ascending; undefined when it allows every value (no restriction). */
const valuesOf = (set: ReadonlySet<number>, bounds: Bounds): ReadonlyArray<number> | undefined => {
  if (set.size === 0 || set.size === bounds.max - bounds.min + 1) return undefined
  return [...set].sort((a, b) => a - b)
}

/** `1st`, `2nd`, `3rd`, `11th`, `22nd`... */
export const ordinal = (n: number): string => {
  const tens = n % 100
  if (tens >= 11 && tens <= 13) return `${n}th`
  switch (n % 10) {
    case 1:
      return `${n}st`
    case 2:
      return `${n}nd`
    case 3:
      return `${n}rd`
    default:
      return `${n}th`
  }
}

/** "a", "a and b", "a, b and c" (`or` instead of `and` when asked). */
const joinWords = (items: ReadonlyArray<string>, conjunction = "and"): string =>
  items.length <= 1 ? (items[0] ?? "") : `${items.slice(0, -1).join(", ")} ${conjunction} ${items[items.length - 1]}`

/** The step of values in arithmetic progression (at least 3 of them, step at least 2), else undefined. */
const progression = (values: ReadonlyArray<number>): number | undefined => {
  if (values.length < 3) return undefined
  const step = values[1]! - values[0]!
  if (step < 2) return undefined
  for (let i = 2; i < values.length; i++) if (values[i]! - values[i - 1]! !== step) return undefined
  return step
}

/**
 * The step of values that repeat evenly around the field's range (from its least value, the step
 * dividing the range: `0,15,30,45` minutes), so that "every N units" is exactly true; else undefined.
 */
const evenStep = (values: ReadonlyArray<number>, bounds: Bounds): number | undefined => {
  if (values.length < 2 || values[0] !== bounds.min) return undefined
  const step = values[1]! - values[0]!
  const size = bounds.max - bounds.min + 1
  if (step < 2 || size % step !== 0 || values.length !== size / step) return undefined
  return values.every((v, i) => v === bounds.min + i * step) ? step : undefined
}

/** Runs of consecutive values: `[0, 1, 2, 5]` gives `[[0, 2], [5, 5]]`. */
const runsOf = (values: ReadonlyArray<number>): ReadonlyArray<readonly [number, number]> => {
  const runs: Array<[number, number]> = []
  for (const v of values) {
    const last = runs[runs.length - 1]
    if (last !== undefined && v === last[1] + 1) last[1] = v
    else runs.push([v, v])
  }
  return runs
}

/** Values as words: runs of three or more as "a through b", the others one by one. */
const listWords = (values: ReadonlyArray<number>, word: (v: number) => string, conjunction = "and"): string =>
  joinWords(
    runsOf(values).flatMap(([from, to]) =>
      to - from >= 2 ? [`${word(from)} through ${word(to)}`] : from === to ? [word(from)] : [word(from), word(to)]
    ),
    conjunction
  )

/** A seconds, minutes or hours field on its own: "every hour", "minute 5", "every 2nd hour", "minutes 0 and 30". */
const unitWords = (values: ReadonlyArray<number> | undefined, bounds: Bounds, unit: string): string => {
  if (values === undefined) return `every ${unit}`
  if (values.length === 1) return `${unit} ${values[0]}`
  const even = evenStep(values, bounds)
  if (even !== undefined) return `every ${ordinal(even)} ${unit}`
  const step = progression(values)
  if (step !== undefined) return `every ${ordinal(step)} ${unit} from ${values[0]} through ${values[values.length - 1]}`
  const runs = runsOf(values)
  if (runs.length === 1) return `every ${unit} from ${values[0]} through ${values[values.length - 1]}`
  return `${unit}s ${listWords(values, String)}`
}

const twoDigits = (n: number) => String(n).padStart(2, "0")

/** The time of day part, and whether it names clock times (then "every day" is said when no day is restricted). */
const timeWords = (cron: Cron.Cron): { readonly text: string; readonly clock: boolean } => {
  const seconds = valuesOf(cron.seconds, SECONDS)
  const minutes = valuesOf(cron.minutes, MINUTES)
  const hours = valuesOf(cron.hours, HOURS)
  // A 5-field expression fires at second 0; so does a 6-field one starting with 0. Neither says so.
  const onTheMinute = seconds !== undefined && seconds.length === 1 && seconds[0] === 0
  if (hours === undefined) {
    if (onTheMinute && minutes === undefined) return { text: "every minute", clock: false }
    const everyMinutes = onTheMinute && minutes !== undefined ? evenStep(minutes, MINUTES) : undefined
    if (everyMinutes !== undefined) return { text: `every ${everyMinutes} minutes`, clock: false }
    if (minutes === undefined && seconds === undefined) return { text: "every second", clock: false }
    const everySeconds = minutes === undefined && seconds !== undefined ? evenStep(seconds, SECONDS) : undefined
    if (everySeconds !== undefined) return { text: `every ${everySeconds} seconds`, clock: false }
  }
  if (
    seconds !== undefined && seconds.length === 1 && minutes !== undefined && hours !== undefined &&
    minutes.length * hours.length <= MAX_CLOCK_TIMES
  ) {
    const second = seconds[0]!
    const times = hours.flatMap((h) =>
      minutes.map((m) => `${twoDigits(h)}:${twoDigits(m)}${second === 0 ? "" : `:${twoDigits(second)}`}`)
    )
    return { text: `at ${joinWords(times)}`, clock: true }
  }
  const parts: Array<string> = []
  if (!onTheMinute) parts.push(unitWords(seconds, SECONDS, "second"))
  parts.push(unitWords(minutes, MINUTES, "minute"))
  // "past every minute past every hour" says nothing more than "past every minute".
  if (!(hours === undefined && minutes === undefined)) parts.push(unitWords(hours, HOURS, "hour"))
  const text = parts.join(" past ")
  return { text: text.startsWith("every ") ? text : `at ${text}`, clock: false }
}

/** Days of the month: "on the 1st and 15th of the month", "on every 2nd day of the month from the 1st through the 31st". */
const monthDayWords = (days: ReadonlyArray<number>): string => {
  const step = progression(days)
  if (step !== undefined) {
    return `on every ${ordinal(step)} day of the month from the ${ordinal(days[0]!)} through the ${ordinal(days[days.length - 1]!)}`
  }
  return `on the ${listWords(days, ordinal)} of the month`
}

/** Weekdays (0 is Sunday), Monday first: "Monday through Friday", "Saturday and Sunday". */
const weekdayWords = (weekdays: ReadonlyArray<number>, conjunction = "and"): string =>
  listWords(
    weekdays.map((d) => (d + 6) % 7).sort((a, b) => a - b),
    (i) => WEEKDAY_NAMES[i]!,
    conjunction
  )

/** The day part, or undefined when every day matches; `both`: both restricted day fields must match. */
const dayWords = (cron: Cron.Cron, both: boolean): string | undefined => {
  if (cron.days.size === 0 && cron.weekdays.size === 0) return undefined
  const days = valuesOf(cron.days, DAYS)
  const weekdays = valuesOf(cron.weekdays, WEEKDAYS)
  if (cron.days.size !== 0 && cron.weekdays.size !== 0 && !both) {
    // Either field matches (Vixie cron): a field allowing every value makes every day match.
    if (days === undefined || weekdays === undefined) return undefined
    return `${monthDayWords(days)}, and also on ${weekdayWords(weekdays)}`
  }
  if (days !== undefined && weekdays !== undefined) {
    return `${monthDayWords(days)} if that day is a ${weekdayWords(weekdays, "or")}`
  }
  if (days !== undefined) return monthDayWords(days)
  if (weekdays !== undefined) return `on ${weekdayWords(weekdays)}`
  return undefined
}

/** The month part, or undefined when every month matches. */
const monthWords = (cron: Cron.Cron): string | undefined => {
  const months = valuesOf(cron.months, MONTHS)
  return months === undefined ? undefined : `in ${listWords(months, (m) => MONTH_NAMES[m - 1]!)}`
}

/**
 * When a parsed schedule (Cron.ts `parseSchedule`) fires, in plain English (lower case, no final
 * period), on the wall clock of its zone.
 */
export const describe = (schedule: Pick<CronSchedule, "expression" | "wallClock">): string => {
  const cron = schedule.wallClock
  const segments = schedule.expression.trim().split(/\s+/)
  // As Cron.ts matches: both restricted day fields must match when one of them starts with `*`.
  const both = segments[segments.length - 3]!.startsWith("*") || segments[segments.length - 1]!.startsWith("*")
  const time = timeWords(cron)
  const day = dayWords(cron, both)
  const month = monthWords(cron)
  const parts = [time.text]
  if (day !== undefined) parts.push(day)
  else if (time.clock) parts.push("every day")
  if (month !== undefined) parts.push(month)
  return parts.join(" ")
}
