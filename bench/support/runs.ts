/**
 * Runs written straight into storage by the benchmarks. (Built here rather than with `makeRun` of
 * @agent-runs/core/testing, whose module imports vitest.)
 */
import { Ids, Run, type RunStore } from "@agent-runs/core"
import { DateTime } from "effect"
import { randomBytes } from "node:crypto"

export type RunFields = ConstructorParameters<typeof Run.RunItem>[0]

/**
 * A finished, Team-scoped run created at `created` by `principal` through the API, with no
 * environment, artifacts or usage; `fields` replace any of its values.
 */
export const storedRun = (
  created: number,
  team: Ids.TeamUid,
  principal: Ids.PrincipalUid,
  fields: Partial<RunFields>
): RunStore.StoredRun => {
  const runId = Ids.formatUuidV7(created, randomBytes(10)) as Ids.RunId
  const who = { type: "user", uid: principal, display_name: "bench" } as const
  const item = new Run.RunItem(
    {
      run_id: runId,
      task_id: runId,
      title: "Benchmark run",
      prompt: "Benchmark run",
      state: "SUCCEEDED",
      created_at: DateTime.unsafeMake(created),
      updated_at: DateTime.unsafeMake(created + 60_000),
      started_at: null,
      ended_at: null,
      session_id: null,
      session_link: null,
      conversation_id: null,
      agent_config: {},
      agent_skill: null,
      creator: who,
      executor: who,
      source: "API",
      execution_location: "REMOTE",
      environment_id: null,
      schedule: null,
      parent_run_id: null,
      ancestor_run_ids: [],
      metadata: {},
      artifacts: [],
      status_message: null,
      request_usage: { input_tokens: 0, output_tokens: 0, inference_cost: 0, compute_cost: 0 },
      is_sandbox_running: false,
      is_run_type_cancellable: true,
      scope: { type: "Team", uid: team },
      attempt: 1,
      execution_count: 1,
      ...fields
    },
    true
  )
  return { item, team_uid: team, lease: null, at_capacity: false, sandbox_retained: false, has_conversation: false }
}
