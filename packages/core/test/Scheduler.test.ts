import { describe, expect, it } from "@effect/vitest"
import { DateTime } from "effect"
import * as fc from "fast-check"
import { formatUuidV7, type RunId } from "../src/domain/Ids.js"
import { changesNothing, type ScheduleTicks, type TicksWrite } from "../src/ports/ScheduleStore.js"
import type { RunState } from "../src/domain/RunState.js"
import { recordOutcomes, TickOutcome } from "../src/engine/Scheduler.js"

const T0 = Date.UTC(2026, 4, 1, 9)
const SECOND = 1_000
const LIMIT = 4

const runIdFor = (tick: number): RunId => formatUuidV7(T0 + tick * SECOND, new Uint8Array(10).fill(tick % 256)) as RunId

/**
 * What the replicas of a fleet can report about ticks 1..n of one schedule: per tick, a run
 * started by one replica (others may report it AlreadyStarted), or refusals (each replica refuses
 * with the message of that tick), or both when the cause was fixed between two replicas' tries.
 */
const tickFacts = fc.array(
  fc.record({
    started: fc.boolean(),
    refused: fc.boolean(),
    duplicates: fc.nat({ max: 2 }),
    state: fc.constantFrom<RunState>("QUEUED", "PENDING")
  }),
  { minLength: 1, maxLength: 12 }
)

type Facts = typeof tickFacts extends fc.Arbitrary<infer A> ? A : never

const outcomesOf = (facts: Facts): Array<TickOutcome> =>
  facts.flatMap((fact, i) => {
    const tick = i + 1
    const scheduledFor = T0 + tick * SECOND
    const out: Array<TickOutcome> = []
    if (fact.started) {
      out.push(TickOutcome.Started({ scheduledFor, run_id: runIdFor(tick), state: fact.state }))
      for (let d = 0; d < fact.duplicates; d++) out.push(TickOutcome.AlreadyStarted({ scheduledFor }))
    }
    if (fact.refused || !fact.started) out.push(TickOutcome.Refused({ scheduledFor, message: `tick ${tick} refused` }))
    return out
  })

/** A fresh schedule's part: created at T0, nothing handled. */
const fresh: ScheduleTicks = {
  lastTickAt: T0,
  history: { last_ran: null, next_run: null, recent_runs: [] },
  last_spawn_error: null
}

const asPart = (write: TicksWrite): ScheduleTicks => ({
  lastTickAt: write.lastTickAt,
  history: { last_ran: write.last_ran, next_run: null, recent_runs: write.recent_runs },
  last_spawn_error: write.last_spawn_error
})

/** Applies batches one after the other, as replicas writing in turn do. */
const applyBatches = (batches: ReadonlyArray<ReadonlyArray<TickOutcome>>): TicksWrite =>
  batches.reduce((write, batch) => recordOutcomes(asPart(write), batch, LIMIT), recordOutcomes(fresh, [], LIMIT))

const same = (a: TicksWrite, b: TicksWrite) => changesNothing(asPart(a), b)

/** Splits a list into consecutive batches at the given cut points. */
const split = <A>(items: ReadonlyArray<A>, cuts: ReadonlyArray<number>): Array<Array<A>> => {
  const points = [...new Set(cuts.map((c) => c % (items.length + 1)))].sort((a, b) => a - b)
  const batches: Array<Array<A>> = []
  let from = 0
  for (const p of [...points, items.length]) {
    batches.push(items.slice(from, p))
    from = p
  }
  return batches
}

describe("Scheduler.recordOutcomes", () => {
  it.prop(
    "whatever the order and batching of the replicas' reports, the record is the same",
    [
      tickFacts.chain((facts) =>
        fc.tuple(
          fc.constant(facts),
          fc.shuffledSubarray(outcomesOf(facts), { minLength: outcomesOf(facts).length }),
          fc.array(fc.nat(), { maxLength: 4 })
        )
      )
    ],
    ([[facts, shuffled, cuts]]) => {
      const inOrder = applyBatches([outcomesOf(facts)])
      const anyOrder = applyBatches(split(shuffled, cuts))
      // Only which of a tick's messages is kept could differ, and every replica gives a tick the same.
      expect(same(inOrder, anyOrder)).toBe(true)
      // Applying a report again changes nothing.
      expect(changesNothing(asPart(anyOrder), recordOutcomes(asPart(anyOrder), shuffled, LIMIT))).toBe(true)
    }
  )

  it.prop("keeps what a user reads in history: the newest ticks, the latest run, the newest tick's error", [tickFacts], ([facts]) => {
    const write = applyBatches([outcomesOf(facts)])
    const ticks = facts.map((_, i) => i + 1)
    const started = ticks.filter((t) => facts[t - 1]!.started)
    const newest = ticks[ticks.length - 1]!
    expect(write.lastTickAt).toBe(T0 + newest * SECOND)
    expect(write.last_ran === null ? null : DateTime.toEpochMillis(write.last_ran)).toBe(
      started.length === 0 ? null : T0 + started[started.length - 1]! * SECOND
    )
    const expectedRuns = started.slice(-LIMIT).reverse()
    expect(write.recent_runs.map((r) => r.run_id)).toEqual(expectedRuns.map(runIdFor))
    expect(write.recent_runs.map((r) => DateTime.toEpochMillis(r.scheduled_for))).toEqual(
      expectedRuns.map((t) => T0 + t * SECOND)
    )
    expect(write.last_spawn_error).toBe(facts[newest - 1]!.started ? null : `tick ${newest} refused`)
  })

  it("a report older than the watermark adds its run but leaves the newer tick's error; a run for the newest tick clears it", () => {
    const part: ScheduleTicks = { ...fresh, lastTickAt: T0 + 5 * SECOND, last_spawn_error: "tick 5 refused" }
    const late = recordOutcomes(part, [TickOutcome.Started({ scheduledFor: T0 + 3 * SECOND, run_id: runIdFor(3), state: "QUEUED" })], LIMIT)
    expect(late.lastTickAt).toBe(T0 + 5 * SECOND)
    expect(late.last_spawn_error).toBe("tick 5 refused")
    expect(late.recent_runs.map((r) => r.run_id)).toEqual([runIdFor(3)])
    const older = recordOutcomes(asPart(late), [TickOutcome.Refused({ scheduledFor: T0 + 4 * SECOND, message: "old" })], LIMIT)
    expect(older.last_spawn_error).toBe("tick 5 refused")
    const fixed = recordOutcomes(asPart(late), [TickOutcome.AlreadyStarted({ scheduledFor: T0 + 5 * SECOND })], LIMIT)
    expect(fixed.last_spawn_error).toBeNull()
    expect(DateTime.toEpochMillis(fixed.last_ran!)).toBe(T0 + 5 * SECOND)
    expect(changesNothing(asPart(fixed), recordOutcomes(asPart(fixed), [], LIMIT))).toBe(true)
  })
})
