/**
 * A team's overview (RunOverview.ts): hourly buckets of the window, runs by the hour they were
 * created and their state now, waits and durations as nearest-rank percentiles.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { type OverviewRun, overviewOf, percentilesOf, windowStart } from "../src/domain/RunOverview.js"

const HOUR = 3_600_000
const NOW = Date.UTC(2026, 11, 1, 10, 30)

describe("overviewOf", () => {
  const since = windowStart(NOW, 3)

  it("counts the runs created in each hour of the window by their state now, with their waits and durations", () => {
    const runs: Array<OverviewRun> = [
      // Created before the window: left out.
      { state: "SUCCEEDED", created_at: since - HOUR, started_at: since - HOUR + 1_000, ended_at: since + 60_000 },
      { state: "SUCCEEDED", created_at: since + 10, started_at: since + 1_010, ended_at: since + 61_010 },
      { state: "FAILED", created_at: since + HOUR, started_at: since + HOUR + 2_000, ended_at: since + HOUR + 62_000 },
      { state: "CANCELLED", created_at: since + 2 * HOUR, started_at: null, ended_at: since + 2 * HOUR + 5 },
      { state: "INPROGRESS", created_at: since + 2 * HOUR, started_at: since + 2 * HOUR + 4_000, ended_at: null },
      { state: "QUEUED", created_at: since + 2 * HOUR + 9, started_at: null, ended_at: null }
    ]
    const overview = overviewOf(runs, since, 3, false)
    expect(overview.since).toBe("2026-12-01T08:00:00.000Z")
    expect(overview.hours.map((h) => [h.hour.slice(11, 16), h.created, h.SUCCEEDED, h.FAILED, h.CANCELLED, h.live])).toEqual([
      ["08:00", 1, 1, 0, 0, 0],
      ["09:00", 1, 0, 1, 0, 0],
      ["10:00", 3, 0, 0, 1, 2]
    ])
    expect(overview.hours.map((h) => h.queue_wait_seconds.p50)).toEqual([1, 2, 4])
    expect(overview.hours.map((h) => h.run_duration_seconds.count)).toEqual([1, 1, 0])
    // Over the window: waits of 1, 2 and 4 s; durations of 60 s twice.
    expect(overview.queue_wait_seconds).toEqual({ count: 3, p50: 2, p90: 4, p99: 4, max: 4 })
    expect(overview.run_duration_seconds).toEqual({ count: 2, p50: 60, p90: 60, p99: 60, max: 60 })
  })

  it("has every hour of the window, and null percentiles without runs", () => {
    const overview = overviewOf([], windowStart(NOW, 24), 24, false)
    expect(overview.hours).toHaveLength(24)
    expect(overview.hours.at(-1)!.hour).toBe("2026-12-01T10:00:00.000Z")
    expect(overview.queue_wait_seconds).toEqual({ count: 0, p50: null, p90: null, p99: null, max: null })
  })
})

describe("percentilesOf", () => {
  it.prop("nearest rank: each percentile is a value with at least that share of the values at or below it", [
    fc.array(fc.integer({ min: 0, max: 10_000 }), { minLength: 1, maxLength: 200 })
  ], ([values]) => {
    const p = percentilesOf(values)
    for (const [pct, value] of [[50, p.p50], [90, p.p90], [99, p.p99]] as const) {
      expect(values).toContain(value)
      expect(values.filter((v) => v <= value!).length / values.length).toBeGreaterThanOrEqual(pct / 100)
      expect(values.filter((v) => v < value!).length / values.length).toBeLessThan(pct / 100)
    }
    expect(p.max).toBe(Math.max(...values))
  })
})
