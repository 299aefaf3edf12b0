/**
 * The server's backstop of a run's maximum runtime on self-hosted workers. A worker stops its
 * agent at the limit itself (engine/Execution.ts, as every host does); one that does not (an old
 * worker, a broken or hostile one) is stopped here: a renewal of the lease by an execution whose
 * agent started longer ago than the run's limit plus one lease length (the worker's own stop comes
 * first) ends the run FAILED `max_runtime_exceeded`, and the renewal is refused, so the worker's
 * execution has lost its run.
 */
import { DateTime, Effect, Option } from "effect"
import type { ExecutionId } from "../domain/Ids.js"
import { effectiveMaxRuntimeMs } from "../domain/MaxRuntime.js"
import type { EnvironmentStore } from "../ports/EnvironmentStore.js"
import type { RunStore, StoredRun } from "../ports/RunStore.js"
import type { StorageError } from "../ports/Storage.js"

/**
 * The limit (ms) of `run`'s execution `executionId` when its agent has run past it plus `graceMs`
 * at `now`; none otherwise (no ceiling, the agent not started yet, or within its time).
 */
export const overtime = (stores: { readonly runs: RunStore["Type"]; readonly environments: EnvironmentStore["Type"] }) =>
(
  run: StoredRun,
  executionId: ExecutionId,
  now: number,
  settings: { readonly ceilingSeconds: number | undefined; readonly graceMs: number }
): Effect.Effect<Option.Option<number>, StorageError> =>
  Effect.gen(function*() {
    if (settings.ceilingSeconds === undefined) return Option.none()
    const started = (yield* stores.runs.timeline(run.item.run_id, 0))
      .find((event) => event.execution_id === executionId && event.event_type === "run_in_progress")?.occurred_at
    if (started === undefined) return Option.none()
    const environment = run.item.environment_id === null || run.item.agent_config.max_runtime_seconds !== undefined
      ? Option.none()
      : yield* stores.environments.get(run.item.environment_id)
    const asked = run.item.agent_config.max_runtime_seconds ??
      Option.getOrUndefined(Option.flatMap(environment, (env) => Option.fromNullable(env.item.config.max_runtime_seconds))) ?? null
    const limitMs = effectiveMaxRuntimeMs(asked, settings.ceilingSeconds)
    return now - DateTime.toEpochMillis(started) > limitMs + settings.graceMs ? Option.some(limitMs) : Option.none()
  })
