/**
 * `config.pull_request` (runs, schedules, automations; an environment's default): whether a run
 * of a team connected to GitHub ends with its work pushed and a pull request opened, and whether
 * as a draft (docs/github.md). The run's own setting wins over its environment's; neither: no pull
 * request. The branch is named from the run (`agent-runs/<run_id>`), so a follow-up pushes to it.
 */
import { Schema } from "effect"
import type { RunId } from "./Ids.js"

export const PullRequestConfig = Schema.Struct({
  enabled: Schema.Boolean,
  draft: Schema.optionalWith(Schema.Boolean, { exact: true })
}).annotations({ identifier: "PullRequestConfig" })
export type PullRequestConfig = typeof PullRequestConfig.Type

/** The branch of a run's work on the host. */
export const branchOf = (runId: RunId): string => `agent-runs/${runId}`

/** What applies to a run: its own setting, else its environment's; undefined when off. */
export const pullRequestOf = (
  run: PullRequestConfig | undefined,
  environment: PullRequestConfig | undefined
): { readonly draft: boolean } | undefined => {
  const chosen = run ?? environment
  return chosen?.enabled === true ? { draft: chosen.draft === true } : undefined
}
