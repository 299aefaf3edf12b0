/**
 * A team's overview (RunOverview.ts): hourly buckets of the window, outcomes by the hour a run
 * ended, waits and durations as nearest-rank percentiles.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { type OverviewRun, overviewOf, percentilesOf, windowStart } from "../src/domain/RunOverview.js"

const HOUR = 3_600_000
const NOW = Date.UTC(2026, 11, 1, 10, 30)

describe("overviewOf", () => {
  const since = windowStart(NOW, 3)

  it("counts the runs created and ended in each hour of the window, by how they ended", () => {
    const runs: Array<OverviewRun> = [
      // Created before the window, ended in its first hour.
      { state: "SUCCEEDED", created_at: since - HOUR, started_at: since - HOUR + 1_000, ended_at: since + 60_000 },
      { state: "FAILED", created_at: since + HOUR, started_at: since + HOUR + 2_000, ended_at: since + HOUR + 62_000 },
      { state: "CANCELLED", created_at: since + 2 * HOUR, started_at: null, ended_at: since + 2 * HOUR + 5 },
      { state: "INPROGRESS", created_at: since + 2 * HOUR, started_at: since + 2 * HOUR + 4_000, ended_at: null }
    ]
    const overview = overviewOf(runs, since, 3, false)
    expect(overview.since).toBe("2026-12-01T08:00:00.000Z")
    expect(overview.hours.map((h) => [h.hour.slice(11, 16), h.created, h.SUCCEEDED, h.FAILED, h.CANCELLED])).toEqual([
      ["08:00", 0, 1, 0, 0],
      ["09:00", 1, 0, 1, 0],
      ["10:00", 2, 0, 0, 1]
    ])
    // Waits of the runs started in the window (2 s and 4 s; the one started before it is left out).
    expect(overview.queue_wait_seconds).toEqual({ count: 2, p50: 2, p90: 4, p99: 4, max: 4 })
    // Durations of the runs ended in the window after a start (the first started before it): 60 s and 3,659 s.
    expect(overview.run_duration_seconds).toEqual({ count: 2, p50: 60, p90: 3659, p99: 3659, max: 3659 })
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
