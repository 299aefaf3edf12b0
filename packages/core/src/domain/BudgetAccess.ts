/**
 * What an agent's run token may do with a budget around it (docs/budgets.md, Budget.ts): the runs
 * it creates go under its own run or its descendants, and the agent of a run with a cost budget
 * sends follow-ups only inside its tree and makes no schedules or automations, whose runs would
 * spend outside the budget.
 */
import type { Viewer } from "./Access.js"

/**
 * Why an agent of a run with a cost budget may not make `what` (schedules, automations): their
 * runs start later as their owner, outside the run's budget. Undefined when it may.
 */
export const budgetEscapeProblem = (viewer: Viewer, what: string): string | undefined =>
  viewer.acting_run_max_cost_usd === undefined
    ? undefined
    : `an agent's run token of a run with a budget (config.max_cost_usd) cannot ${what}: their runs would not draw on the run's budget`

/**
 * Why `viewer` may not name `parent` as the parent of a new run: an agent's run token names its
 * own run or one of its descendants, so that what the new run spends is drawn from its budget.
 */
export const parentProblem = (viewer: Viewer, parent: RunInTree): string | undefined =>
  underActingRun(viewer, parent)
    ? undefined
    : `parent_run_id: an agent's run token creates runs under its own run (${viewer.acting_run_id}) or its descendants, not under run ${parent.run_id}`

/**
 * Why the agent of a run with a cost budget may not send a follow-up to `run`: only its own run and
 * its descendants, whose spend the budget counts. Undefined when it may.
 */
export const followupProblem = (viewer: Viewer, run: RunInTree): string | undefined =>
  viewer.acting_run_max_cost_usd === undefined || underActingRun(viewer, run)
    ? undefined
    : `an agent's run token of a run with a budget (config.max_cost_usd) sends follow-ups to its own run and its descendants only: ` +
      `run ${run.run_id} would spend outside the budget`

/** A run with its place in its tree. */
interface RunInTree {
  readonly run_id: string
  readonly ancestor_run_ids: ReadonlyArray<string>
}

/** Whether `run` is the calling agent's own run or one of its descendants (always, for a caller that is no agent). */
const underActingRun = (viewer: Viewer, run: RunInTree): boolean => {
  const acting = viewer.acting_run_id
  return acting === undefined || run.run_id === acting || run.ancestor_run_ids.includes(acting)
}
