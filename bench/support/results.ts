/**
 * The figures a benchmark reports to `npm run bench` (bench/all.ts): one row per measured path,
 * ours and the baseline measured in the same run. A script records its rows with `record`; when
 * BENCH_RESULTS_FILE is set (bench/all.ts sets it) each row is appended to that file as one JSON
 * line, and bench/all.ts gathers them into bench/results/latest.json.
 */
import { appendFileSync } from "node:fs"

export interface ResultRow {
  /** The path measured, e.g. "GET /agent/runs (SQLite)". */
  readonly name: string
  /** Our figure, in `unit`. */
  readonly ours: number
  /** The baseline's figure in the same run, in `unit` (null when the row has no baseline). */
  readonly baseline: number | null
  /** e.g. "req/s", "ms p50", "s", "ms CPU per run-minute". */
  readonly unit: string
  /** How many times worse than the baseline we are (≥ 1 is slower; null without a baseline). */
  readonly ratio: number | null
  /** The goal in words, e.g. "≥ 3,000 req/s and ≤ 5×". */
  readonly goal: string
  /** Whether the goal is met by this run's figures. */
  readonly met: boolean
  /**
   * Ours as a share of the baseline (ours / baseline, e.g. 0.25), on rows whose goal is such a
   * share (`higherIsBetter`'s `minShare`; bench/http and bench/ingress against the Effect floor).
   */
  readonly share?: number
  /** What else a reader needs: the baseline's name, p99s, counts. */
  readonly notes?: string
}

const round = (n: number) => (Math.abs(n) >= 100 ? Math.round(n) : Math.round(n * 100) / 100)

const makeRow = (
  name: string,
  ours: number,
  baseline: number | null,
  unit: string,
  ratio: number | null,
  goal: string,
  met: boolean,
  notes: string | undefined,
  share?: number
): ResultRow => ({
  name,
  ours: round(ours),
  baseline: baseline === null ? null : round(baseline),
  unit,
  ratio: ratio === null ? null : round(ratio),
  goal,
  met,
  ...(share === undefined ? {} : { share: Math.round(share * 10_000) / 10_000 }),
  ...(notes === undefined ? {} : { notes })
})

/**
 * A row where more is better (throughput): ratio = baseline / ours. `min` is the goal's floor for
 * ours, `maxRatio` its ceiling for the ratio, `minShare` its floor for ours as a share of the
 * baseline (ours / baseline ≥ minShare, e.g. 0.25 for "≥ 25% of the floor"; the row then carries
 * that share as `share`). Any of them may be absent.
 */
export const higherIsBetter = (
  name: string,
  ours: number,
  baseline: number | null,
  unit: string,
  goal: { readonly min?: number; readonly maxRatio?: number; readonly minShare?: number; readonly text: string },
  notes?: string
): ResultRow => {
  const ratio = baseline === null || ours === 0 ? null : baseline / ours
  const share = goal.minShare === undefined || baseline === null || baseline <= 0 ? undefined : ours / baseline
  const met = (goal.min === undefined || ours >= goal.min) &&
    (goal.maxRatio === undefined || (ratio !== null && ratio <= goal.maxRatio)) &&
    (goal.minShare === undefined || (share !== undefined && share >= goal.minShare))
  return makeRow(name, ours, baseline, unit, ratio, goal.text, met, notes, share)
}

/**
 * A row where less is better (latency, time, CPU): ratio = ours / baseline. `max` is the goal's
 * ceiling for ours, `maxRatio` its ceiling for the ratio, `maxOver` its ceiling for ours − baseline.
 */
export const lowerIsBetter = (
  name: string,
  ours: number,
  baseline: number | null,
  unit: string,
  goal: { readonly max?: number; readonly maxRatio?: number; readonly maxOver?: number; readonly text: string },
  notes?: string
): ResultRow => {
  const ratio = baseline === null || baseline === 0 ? null : ours / baseline
  const met = (goal.max === undefined || ours <= goal.max) &&
    (goal.maxRatio === undefined || (ratio !== null && ratio <= goal.maxRatio)) &&
    (goal.maxOver === undefined || (baseline !== null && ours - baseline <= goal.maxOver))
  return makeRow(name, ours, baseline, unit, ratio, goal.text, met, notes)
}

/** Prints the row and, under bench/all.ts, hands it over. */
export const record = (row: ResultRow): void => {
  console.log(`result: ${JSON.stringify(row)}`)
  const file = process.env.BENCH_RESULTS_FILE
  if (file !== undefined && file !== "") appendFileSync(file, `${JSON.stringify(row)}\n`)
}
