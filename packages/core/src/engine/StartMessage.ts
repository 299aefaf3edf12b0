/** The start message an `oz` agent reads first on its stdin (docs/harnesses.md). */
import type { StartMessage } from "../domain/Harness.js"
import type { Sandbox } from "../ports/Executor.js"
import type { ExecutionPlan } from "./ExecutionPlan.js"

/** The start message of a plan's agent. */
export const startMessage = (
  plan: Pick<ExecutionPlan, "run_id" | "execution_id" | "start">,
  sandbox: Sandbox,
  token: string,
  apiBaseUrl: string,
  mode: "normal" | "debug",
  followups: ReadonlyArray<string>
): StartMessage => ({
  type: "start",
  run_id: plan.run_id,
  execution_id: plan.execution_id,
  mode,
  ...plan.start,
  attachments: sandbox.attachments,
  followups,
  api: { base_url: apiBaseUrl, run_token: token }
})
