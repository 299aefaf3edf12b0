/**
 * What the service measures about runs (docs/observability.md), as Effect metrics: `/metrics`
 * renders them as Prometheus text and the OpenTelemetry export sends the same ones. Each is
 * recorded where RunLog.ts logs the change it counts, in the process that made it.
 *
 * - `agent_runs_runs_created_total{source}`: runs created.
 * - `agent_runs_run_state_changes_total{to, error_code}`: changes of a run's state, by the state
 *   reached (and for FAILED and ERROR the error code): runs by state and outcome.
 * - `agent_runs_run_queue_wait_seconds`: from a run's creation to its first claim.
 * - `agent_runs_run_duration_seconds{state}`: from a run's start to its end, by how it ended.
 */
import { DateTime, Effect, Metric, MetricBoundaries } from "effect"
import type { StoredRun } from "../ports/RunStore.js"
import { isTerminal } from "./RunState.js"

export const runsCreated = Metric.counter("agent_runs_runs_created_total", {
  description: "runs created, by source",
  incremental: true
})

export const runStateChanges = Metric.counter("agent_runs_run_state_changes_total", {
  description: "changes of a run's state, by the state reached (and for FAILED and ERROR the error code)",
  incremental: true
})

export const queueWait = Metric.histogram(
  "agent_runs_run_queue_wait_seconds",
  MetricBoundaries.exponential({ start: 0.05, factor: 2, count: 18 }),
  "seconds from a run's creation to its first claim"
)

export const runDuration = Metric.histogram(
  "agent_runs_run_duration_seconds",
  MetricBoundaries.exponential({ start: 1, factor: 2, count: 18 }),
  "seconds from a run's start to its end, by the state it ended in"
)

const seconds = (from: DateTime.Utc, to: DateTime.Utc) => (DateTime.toEpochMillis(to) - DateTime.toEpochMillis(from)) / 1000

/** Counts a run created. */
export const recordCreated = (run: StoredRun) => Metric.increment(Metric.tagged(runsCreated, "source", run.item.source))

const claimed = Metric.tagged(Metric.tagged(runStateChanges, "to", "CLAIMED"), "error_code", "")

/** Counts a claim (QUEUED → CLAIMED), and the wait of a run claimed for its first execution. */
export const recordClaimed = (run: StoredRun) =>
  Effect.zipRight(
    Metric.increment(claimed),
    run.item.execution_count === 1 && run.item.attempt === 1
      ? Metric.update(queueWait, Math.max(0, seconds(run.item.created_at, run.item.updated_at)))
      : Effect.void
  )

/** Counts a change of state, and the duration of a run that ended. */
export const recordTransition = (before: StoredRun, after: StoredRun) => {
  const to = after.item.state
  if (before.item.state === to) return Effect.void
  const failed = to === "FAILED" || to === "ERROR"
  const errorCode = failed ? after.item.status_message?.error_code ?? "unknown" : ""
  const counted = Metric.increment(Metric.tagged(Metric.tagged(runStateChanges, "to", to), "error_code", errorCode))
  const { started_at, ended_at } = after.item
  return isTerminal(to) && started_at !== null && ended_at !== null
    ? Effect.zipRight(counted, Metric.update(Metric.tagged(runDuration, "state", to), Math.max(0, seconds(started_at, ended_at))))
    : counted
}
