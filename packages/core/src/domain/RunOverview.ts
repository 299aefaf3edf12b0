/**
 * A team's overview (docs/dashboard.md, `GET /agent/team/overview`): what its runs did over the
 * last hours, as the dashboard's Overview page draws it.
 *
 * Decisions:
 * - The window is the last `hours` whole UTC hours, the current one included (1 to 168, 24 by
 *   default); each hour is a bucket, empty ones included, so a chart's axis is the window.
 * - A run counts in the hour it was created, by its state now: the outcomes (`SUCCEEDED`, `FAILED`,
 *   `ERROR`, `CANCELLED`, `BLOCKED`) and `live` (not ended yet). So each figure is exactly what the
 *   run list shows for `created_after`/`created_before` around the hour and that state: a chart
 *   clicked opens that list.
 * - `queue_wait_seconds`: from a run's creation to its agent's start (waiting in the queue, then the
 *   sandbox's setup), for the runs that started. `run_duration_seconds`: from the start to the end,
 *   for the runs that ended after a start. Per hour and over the window; percentiles by nearest
 *   rank, null when no run counts.
 * - What is read is bounded: the team's runs created in the window, the newest first, at most
 *   `MAX_OVERVIEW_RUNS`; past it `truncated` is true and the figures cover the runs read.
 */
import { Schema } from "effect"
import type { RunState } from "./RunState.js"

/** The longest window, in hours (a week). */
export const MAX_OVERVIEW_HOURS = 168
/** The window when none is asked, in hours. */
export const DEFAULT_OVERVIEW_HOURS = 24
/** The most runs an overview reads. */
export const MAX_OVERVIEW_RUNS = 20_000

const HOUR_MS = 3_600_000

/** What an overview needs of a run (epoch milliseconds). */
export interface OverviewRun {
  readonly state: RunState
  readonly created_at: number
  readonly started_at: number | null
  readonly ended_at: number | null
}

/** The outcomes counted per hour. */
export const OUTCOMES = ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED", "BLOCKED"] as const
type Outcome = (typeof OUTCOMES)[number]

const Count = Schema.NonNegativeInt

/** Percentiles of durations in seconds (null when `count` is 0). */
export const Percentiles = Schema.Struct({
  count: Count,
  p50: Schema.NullOr(Schema.Number),
  p90: Schema.NullOr(Schema.Number),
  p99: Schema.NullOr(Schema.Number),
  max: Schema.NullOr(Schema.Number)
}).annotations({ identifier: "Percentiles" })
export type Percentiles = typeof Percentiles.Type

/** One hour of the window: the runs created in it, by their state now, and their waits and durations. */
export const OverviewHour = Schema.Struct({
  /** The hour's start (UTC, RFC 3339). */
  hour: Schema.String,
  created: Count,
  SUCCEEDED: Count,
  FAILED: Count,
  ERROR: Count,
  CANCELLED: Count,
  BLOCKED: Count,
  /** Not ended yet (PENDING, QUEUED, CLAIMED, INPROGRESS). */
  live: Count,
  queue_wait_seconds: Percentiles,
  run_duration_seconds: Percentiles
}).annotations({ identifier: "OverviewHour" })
export type OverviewHour = typeof OverviewHour.Type

/** `GET /agent/team/overview`. */
export class TeamOverviewResponse extends Schema.Class<TeamOverviewResponse>("TeamOverviewResponse")({
  /** The window's start: the first hour's (UTC, RFC 3339). */
  since: Schema.String,
  hours: Schema.Array(OverviewHour),
  queue_wait_seconds: Percentiles,
  run_duration_seconds: Percentiles,
  /** More runs created in the window than an overview reads: the figures cover the newest. */
  truncated: Schema.Boolean
}) {}

/** The start of the window of `hours` hours ending with the hour of `now`. */
export const windowStart = (now: number, hours: number): number => (Math.floor(now / HOUR_MS) - (hours - 1)) * HOUR_MS

/** Nearest-rank percentiles of `values` (seconds). */
export const percentilesOf = (values: ReadonlyArray<number>): Percentiles => {
  const sorted = [...values].sort((a, b) => a - b)
  const rank = (p: number) => (sorted.length === 0 ? null : sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!)
  return { count: sorted.length, p50: rank(50), p90: rank(90), p99: rank(99), max: sorted.at(-1) ?? null }
}

const isOutcome = (state: RunState): state is Outcome => (OUTCOMES as ReadonlyArray<string>).includes(state)

interface Bucket {
  readonly counts: Record<Outcome | "live", number>
  readonly waits: Array<number>
  readonly durations: Array<number>
}

const emptyBucket = (): Bucket => ({
  counts: { SUCCEEDED: 0, FAILED: 0, ERROR: 0, CANCELLED: 0, BLOCKED: 0, live: 0 },
  waits: [],
  durations: []
})

/** The overview of `runs` (those created in the window) over the `hours` hours from `since`. */
export const overviewOf = (runs: ReadonlyArray<OverviewRun>, since: number, hours: number, truncated: boolean): TeamOverviewResponse => {
  const buckets = Array.from({ length: hours }, emptyBucket)
  for (const run of runs) {
    const bucket = buckets[Math.floor((run.created_at - since) / HOUR_MS)]
    if (bucket === undefined) continue
    bucket.counts[isOutcome(run.state) ? run.state : "live"] += 1
    if (run.started_at !== null) bucket.waits.push((run.started_at - run.created_at) / 1000)
    if (run.started_at !== null && run.ended_at !== null) bucket.durations.push((run.ended_at - run.started_at) / 1000)
  }
  return new TeamOverviewResponse({
    since: new Date(since).toISOString(),
    hours: buckets.map((b, i) => ({
      hour: new Date(since + i * HOUR_MS).toISOString(),
      created: Object.values(b.counts).reduce((sum, n) => sum + n, 0),
      ...b.counts,
      queue_wait_seconds: percentilesOf(b.waits),
      run_duration_seconds: percentilesOf(b.durations)
    })),
    queue_wait_seconds: percentilesOf(buckets.flatMap((b) => b.waits)),
    run_duration_seconds: percentilesOf(buckets.flatMap((b) => b.durations)),
    truncated
  })
}
