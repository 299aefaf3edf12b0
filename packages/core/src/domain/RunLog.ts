/**
 * What the service logs about runs for operators: one line per change of a run's state, with the
 * run id (and the team, the execution, the attempt, the states, and for an ending the error code
 * and message) as structured fields. With `AGENT_RUNS_LOG_FORMAT=json` each line is a JSON object
 * whose `annotations` hold these fields, so one run's story is a filter on `run_id`. Each change is
 * also measured (RunMetrics.ts).
 */
import { Effect } from "effect"
import type { StoredRun } from "../ports/RunStore.js"
import { recordClaimed, recordCreated, recordTransition } from "./RunMetrics.js"

/** Logs a run's creation (its first state). */
export const logCreated = (run: StoredRun) =>
  Effect.logInfo(`run created (${run.item.state})`).pipe(
    Effect.annotateLogs({ run_id: run.item.run_id, team_uid: run.team_uid, state: run.item.state, source: run.item.source }),
    Effect.zipRight(recordCreated(run))
  )

/** Logs the claim of a run by an execution (QUEUED → CLAIMED). */
export const logClaimed = (run: StoredRun, executionId: string) =>
  Effect.logInfo("run QUEUED → CLAIMED").pipe(
    Effect.annotateLogs({ run_id: run.item.run_id, team_uid: run.team_uid, from: "QUEUED", to: "CLAIMED", attempt: run.item.attempt, execution_id: executionId }),
    Effect.zipRight(recordClaimed(run))
  )

/** Logs a run's change of state from `before` to `after`; nothing when its state stayed. */
export const logTransition = (before: StoredRun, after: StoredRun, executionId?: string) => {
  const from = before.item.state
  const to = after.item.state
  if (from === to) return Effect.void
  const status = after.item.status_message
  const failed = to === "FAILED" || to === "ERROR"
  const fields = {
    run_id: after.item.run_id,
    team_uid: after.team_uid,
    from,
    to,
    attempt: after.item.attempt,
    ...(executionId === undefined ? {} : { execution_id: executionId }),
    ...(failed && status !== null
      ? { error_code: status.error_code ?? "unknown", message: status.message }
      : {})
  }
  const line = `run ${from} → ${to}`
  return (failed ? Effect.logWarning(line) : Effect.logInfo(line)).pipe(
    Effect.annotateLogs(fields),
    Effect.zipRight(recordTransition(before, after))
  )
}
