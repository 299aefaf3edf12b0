import { describe, expect, it } from "@effect/vitest"
import { Cron, Either } from "effect"
import * as fc from "fast-check"
import { parseSchedule } from "../src/domain/Cron.js"
import type { CronSchedule } from "../src/domain/Cron.js"
import { describe as describeCron, ordinal } from "../src/domain/CronDescription.js"

const words = (expression: string): string => {
  const parsed = parseSchedule(expression, "UTC")
  if (Either.isLeft(parsed)) throw new Error(`expected ${expression} to parse: ${parsed.left.message}`)
  return describeCron(parsed.right)
}

/** A date for each (day of month, weekday) pair that exists. */
const calendar: ReadonlyArray<{ readonly key: string; readonly date: Date }> = (() => {
  const found = new Map<string, Date>()
  for (let t = Date.UTC(2023, 0, 1); found.size < 31 * 7 && t < Date.UTC(2051, 0, 1); t += 86_400_000) {
    const date = new Date(t)
    const key = `${date.getUTCDate()}/${date.getUTCDay()}`
    if (!found.has(key)) found.set(key, date)
  }
  return [...found].map(([key, date]) => ({ key, date }))
})()

/**
 * What an expression matches, whatever its spelling: each time field's values (every value alike
 * however written), and the (day of month, weekday) pairs it accepts, per Cron.match.
 */
const meaning = ({ expression, wallClock: cron }: CronSchedule): string => {
  const segments = expression.split(" ")
  const and = segments[segments.length - 3]!.startsWith("*") || segments[segments.length - 1]!.startsWith("*")
  const field = (set: ReadonlySet<number>, size: number) =>
    set.size === 0 || set.size === size ? "*" : [...set].sort((a, b) => a - b).join(",")
  const probe = Cron.make({ seconds: [], minutes: [], hours: [], days: cron.days, months: [], weekdays: cron.weekdays, and })
  return [
    field(cron.seconds, 60),
    field(cron.minutes, 60),
    field(cron.hours, 24),
    field(cron.months, 12),
    calendar.filter(({ date }) => Cron.match(probe, date)).map(({ key }) => key).join(" ")
  ].join(" | ")
}

describe("CronDescription", () => {
  it("words common schedules as people say them", () => {
    expect(words("* * * * *")).toBe("every minute")
    expect(words("*/15 * * * *")).toBe("every 15 minutes")
    expect(words("0 9 * * 1-5")).toBe("at 09:00 on Monday through Friday")
    expect(words("0 */2 * * *")).toBe("at minute 0 past every 2nd hour")
    expect(words("0 * * * *")).toBe("at minute 0 past every hour")
    expect(words("30 2 * * *")).toBe("at 02:30 every day")
    expect(words("0 9,17 * * *")).toBe("at 09:00 and 17:00 every day")
    expect(words("5 4 * * sun")).toBe("at 04:05 on Sunday")
    expect(words("0 0 * * 6,0")).toBe("at 00:00 on Saturday and Sunday")
    expect(words("0 0 * * 5-7")).toBe("at 00:00 on Friday through Sunday")
    expect(words("15 14 1 * *")).toBe("at 14:15 on the 1st of the month")
    expect(words("0 0 1 jan,jul *")).toBe("at 00:00 on the 1st of the month in January and July")
    expect(words("0 12 * 1-3 *")).toBe("at 12:00 every day in January through March")
  })

  it("words the optional leading seconds field", () => {
    expect(words("* * * * * *")).toBe("every second")
    expect(words("*/10 * * * * *")).toBe("every 10 seconds")
    expect(words("30 * * * * *")).toBe("at second 30 past every minute")
    expect(words("30 0 9 * * *")).toBe("at 09:00:30 every day")
    // A 6-field expression starting with 0 is its 5-field form.
    expect(words("0 */15 * * * *")).toBe(words("*/15 * * * *"))
  })

  it("words unusual fields one by one, never rounded to a nearby phrase", () => {
    // 0, 7, ..., 56, then 0 again four minutes later: not "every 7 minutes".
    expect(words("*/7 * * * *")).toBe("every 7th minute from 0 through 56 past every hour")
    expect(words("*/5 9-17 * * *")).toBe("every 5th minute past every hour from 9 through 17")
    expect(words("23 0-20/2 * * *")).toBe("at minute 23 past every 2nd hour from 0 through 20")
    expect(words("1,2,3,10 * * * *")).toBe("at minutes 1 through 3 and 10 past every hour")
    expect(words("0-4 * * * *")).toBe("every minute from 0 through 4 past every hour")
    expect(words("0 0 */2 * *")).toBe("at 00:00 on every 2nd day of the month from the 1st through the 31st")
    expect(words("0 */5 * * *")).toBe("at 00:00, 05:00, 10:00, 15:00 and 20:00 every day")
    expect(words("0 */3 * * *")).toBe("at minute 0 past every 3rd hour")
  })

  it("words both day fields as they match: either one, or both when one starts with *", () => {
    expect(words("0 0 1,15 * 1")).toBe("at 00:00 on the 1st and 15th of the month, and also on Monday")
    expect(words("0 0 */2 * mon")).toBe(
      "at 00:00 on every 2nd day of the month from the 1st through the 31st if that day is a Monday"
    )
    // A day field allowing every day makes every day match when either may.
    expect(words("0 0 1-31 * 1")).toBe("at 00:00 every day")
    expect(words("0 0 * 1-12 0-7")).toBe("at 00:00 every day")
  })

  it("writes ordinals", () => {
    expect([1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 31].map(ordinal)).toEqual(
      ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd", "31st"]
    )
  })

  // Any field syntax Cron.ts accepts: *, values, ranges, steps and lists of them.
  const field = (min: number, max: number) => {
    const value = fc.integer({ min, max })
    const step = fc.integer({ min: 1, max: Math.max(1, max - min) })
    const part = fc.oneof(
      value.map(String),
      fc.tuple(value, value).map(([a, b]) => `${Math.min(a, b)}-${Math.max(a, b)}`),
      fc.tuple(fc.tuple(value, value), step).map(([[a, b], s]) => `${Math.min(a, b)}-${Math.max(a, b)}/${s}`),
      fc.tuple(value, step).map(([a, s]) => `${a}/${s}`)
    )
    return fc.oneof(
      { arbitrary: fc.constant("*"), weight: 3 },
      { arbitrary: step.map((s) => `*/${s}`), weight: 1 },
      { arbitrary: part, weight: 3 },
      { arbitrary: fc.array(part, { minLength: 2, maxLength: 4 }).map((parts) => parts.join(",")), weight: 1 }
    )
  }
  const expression = fc.tuple(
    fc.option(field(0, 59), { nil: undefined }),
    field(0, 59),
    field(0, 23),
    field(1, 31),
    field(1, 12),
    field(0, 7)
  ).map(([s, ...rest]) => (s === undefined ? rest : [s, ...rest]).join(" "))
  const parsed = expression.chain((e) => fc.constant(Either.getOrUndefined(parseSchedule(e, "UTC"))))
    .filter((s): s is CronSchedule => s !== undefined)

  /** Two of `crons` read alike only when they fire alike. */
  const expectAlikeOnlyWhenTheSame = (crons: ReadonlyArray<CronSchedule>) => {
    const seen = new Map<string, string>()
    for (const cron of crons) {
      const text = describeCron(cron)
      const known = seen.get(text)
      if (known === undefined) seen.set(text, meaning(cron))
      else expect(meaning(cron), text).toBe(known)
    }
  }

  it.prop("words every expression, in words only", [parsed], ([cron]) => {
    const text = describeCron(cron)
    expect(text).toMatch(/^(at|every) /)
    expect(text).not.toMatch(/undefined|NaN|\s\s|[*/]/)
  })

  it.prop(
    "never gives two schedules that fire differently the same words",
    [fc.array(parsed, { minLength: 20, maxLength: 60 })],
    ([crons]) => expectAlikeOnlyWhenTheSame(crons)
  )

  // Look-alikes: fields that differ by little (a step's start, one value, a range's end), so that
  // arrays of them hold many near misses, and spellings of one field, so that they hold equals.
  const lookAlikes = fc.tuple(
    fc.constantFrom("0", "*/20", "20/20", "*", "0,30", "*/30"),
    fc.constantFrom("*", "*/7", "3-59/7", "0-56/7", "*/15", "0,15,30,45", "5/15", "0", "30", "0,30", "*/30", "0-4", "0,1,2,3,4", "1-5"),
    fc.constantFrom("*", "*/2", "1/2", "0-22/2", "*/5", "9-17", "9,17", "9", "0-23", "*/3"),
    fc.constantFrom("*", "1", "1,15", "*/2", "2/2", "1-7", "31", "1-31"),
    fc.constantFrom("*", "1-3", "jan-mar", "1,2,3", "*/3", "1,4,7,10", "2"),
    fc.constantFrom("*", "1-5", "mon-fri", "0", "7", "sun", "6,0", "5-7", "0-6", "*/2")
  ).chain(([seconds, ...rest]) =>
    fc.constantFrom(rest.join(" "), [seconds, ...rest].join(" "))
  ).map((e) => Either.getOrUndefined(parseSchedule(e, "UTC"))).filter((s): s is CronSchedule => s !== undefined)

  it.prop(
    "never gives look-alike schedules that fire differently the same words",
    [fc.array(lookAlikes, { minLength: 40, maxLength: 80 })],
    ([crons]) => expectAlikeOnlyWhenTheSame(crons)
  )

  it.prop("gives two spellings of one schedule the same words", [parsed], ([schedule]) => {
    const cron = schedule.wallClock
    // The same sets written out value by value (no star, no step, no range).
    const list = (set: ReadonlySet<number>, min: number, max: number) =>
      set.size === 0 ? Array.from({ length: max - min + 1 }, (_, i) => min + i).join(",") : [...set].join(",")
    const starred = (set: ReadonlySet<number>, min: number, max: number) => (set.size === 0 ? "*" : list(set, min, max))
    // Which day field "starts with *" decides how they combine: when it matters, they stay as written.
    const segments = schedule.expression.split(" ")
    const [days, weekdays] = segments[segments.length - 3]!.startsWith("*") || segments[segments.length - 1]!.startsWith("*")
      ? [segments[segments.length - 3]!, segments[segments.length - 1]!]
      : [starred(cron.days, 1, 31), starred(cron.weekdays, 0, 6)]
    const rewritten = [
      list(cron.seconds, 0, 59),
      list(cron.minutes, 0, 59),
      list(cron.hours, 0, 23),
      days,
      list(cron.months, 1, 12),
      weekdays
    ].join(" ")
    // Longer than Cron.ts accepts: effect's parser reads it.
    expect(describeCron({ expression: rewritten, wallClock: Cron.unsafeParse(rewritten, "UTC") })).toBe(describeCron(schedule))
  })
})
