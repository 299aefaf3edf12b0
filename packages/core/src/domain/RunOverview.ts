/**
 * A team's overview (docs/dashboard.md, `GET /agent/team/overview`): what its runs did over the
 * last hours, as the dashboard's Overview page draws it.
 *
 * Decisions:
 * - The window is the last `hours` whole UTC hours, the current one included (1 to 168, 24 by
 *   default); each hour is a bucket, empty ones included, so a chart's axis is the window.
 * - Runs per hour by outcome: the runs that ended in the hour (`ended_at`), by the state they ended
 *   in (`SUCCEEDED`, `FAILED`, `ERROR`, `CANCELLED`, `BLOCKED`), and the runs created in it.
 * - `queue_wait_seconds`: for the runs whose agent started in the window, from the run's creation to
 *   its agent's start (waiting in the queue, then the sandbox's setup). `run_duration_seconds`: for
 *   the runs that ended in the window after their agent started, from the start to the end.
 *   Percentiles by nearest rank; null when no run counts.
 * - What is read is bounded: the team's runs changed in the window, the most recently changed
 *   first, at most `MAX_OVERVIEW_RUNS`; past it `truncated` is true and the figures cover the runs
 *   read.
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

/** One hour of the window. */
export const OverviewHour = Schema.Struct({
  /** The hour's start (UTC, RFC 3339). */
  hour: Schema.String,
  created: Count,
  SUCCEEDED: Count,
  FAILED: Count,
  ERROR: Count,
  CANCELLED: Count,
  BLOCKED: Count
}).annotations({ identifier: "OverviewHour" })
export type OverviewHour = typeof OverviewHour.Type

/** Percentiles of durations in seconds (null when `count` is 0). */
export const Percentiles = Schema.Struct({
  count: Count,
  p50: Schema.NullOr(Schema.Number),
  p90: Schema.NullOr(Schema.Number),
  p99: Schema.NullOr(Schema.Number),
  max: Schema.NullOr(Schema.Number)
}).annotations({ identifier: "Percentiles" })
export type Percentiles = typeof Percentiles.Type

/** `GET /agent/team/overview`. */
export class TeamOverviewResponse extends Schema.Class<TeamOverviewResponse>("TeamOverviewResponse")({
  /** The window's start: the first hour's (UTC, RFC 3339). */
  since: Schema.String,
  hours: Schema.Array(OverviewHour),
  queue_wait_seconds: Percentiles,
  run_duration_seconds: Percentiles,
  /** More runs changed in the window than an overview reads: the figures cover the most recent. */
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

/** The overview of `runs` over the `hours` hours from `since`. */
export const overviewOf = (runs: ReadonlyArray<OverviewRun>, since: number, hours: number, truncated: boolean): TeamOverviewResponse => {
  const buckets = Array.from({ length: hours }, (_, i) => ({
    hour: new Date(since + i * HOUR_MS).toISOString(),
    created: 0,
    SUCCEEDED: 0,
    FAILED: 0,
    ERROR: 0,
    CANCELLED: 0,
    BLOCKED: 0
  }))
  const bucketOf = (at: number) => buckets[Math.floor((at - since) / HOUR_MS)]
  const waits: Array<number> = []
  const durations: Array<number> = []
  for (const run of runs) {
    const created = bucketOf(run.created_at)
    if (created !== undefined) created.created += 1
    if (run.started_at !== null && run.started_at >= since) waits.push((run.started_at - run.created_at) / 1000)
    if (run.ended_at === null || run.ended_at < since) continue
    const ended = bucketOf(run.ended_at)
    if (ended !== undefined && isOutcome(run.state)) ended[run.state] += 1
    if (run.started_at !== null) durations.push((run.ended_at - run.started_at) / 1000)
  }
  return new TeamOverviewResponse({
    since: new Date(since).toISOString(),
    hours: buckets,
    queue_wait_seconds: percentilesOf(waits),
    run_duration_seconds: percentilesOf(durations),
    truncated
  })
}
