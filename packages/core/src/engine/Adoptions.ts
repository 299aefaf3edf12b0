/**
 * The server's side of keeping agents across a restart (`AdoptionHost`, ExecutionHost.ts): the
 * notes of the executions a stopping process left running, one blob each (`adoptionKey`), written
 * only by the execution holding its run; the next process takes its note and the execution's plan
 * again, while the execution still holds the run.
 */
import { Effect, Option } from "effect"
import { adoptionKey } from "../domain/BlobKeys.js"
import type { ExecutionId, RunId } from "../domain/Ids.js"
import type { BlobStore } from "../ports/BlobStore.js"
import type { StorageError } from "../ports/Storage.js"
import { readWhole } from "./AgentStates.js"
import type { AdoptionHost } from "./ExecutionHost.js"
import type { ExecutionPlan } from "./ExecutionPlan.js"
import type { RunExecutions } from "./RunExecutions.js"

export const make = (
  blobs: BlobStore["Type"],
  executions: RunExecutions,
  /** The plan of an execution taken up again (as a claim's is made). */
  resumed: (runId: RunId, executionId: ExecutionId) => Effect.Effect<Option.Option<ExecutionPlan>, StorageError>
): AdoptionHost => ({
  keep: (runId, executionId, note) =>
    executions.held(runId, executionId).pipe(Effect.zipRight(blobs.put(adoptionKey(runId, executionId), note))),
  resume: (runId, executionId) =>
    Effect.gen(function*() {
      const key = adoptionKey(runId, executionId)
      const note = yield* readWhole(blobs, key)
      if (Option.isNone(note)) return Option.none()
      const plan = yield* resumed(runId, executionId)
      yield* blobs.remove(key)
      return Option.map(plan, (plan) => ({ plan, note: note.value }))
    })
})
