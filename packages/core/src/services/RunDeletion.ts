/**
 * Deleting a run (docs/retention.md#deleting-a-run): `DELETE /agent/runs/{runId}`.
 *
 * Decisions:
 * - The run's creator (unless a viewer now) and the team's admins delete it (and instance
 *   administrators); other members and viewers get 403, anyone who cannot see it 404, an agent's
 *   run token 403 (no agent deletes runs). Audited `run.delete`, with the refusals.
 * - Only an ended run: a live one is 409 naming its state (cancel it first), so no agent keeps
 *   working on a run that is gone; and not while a run above it is live (409 naming
 *   `parent_run_id`): that run's budget counts what this one spent.
 * - It goes as the retention sweep removes runs (RetentionStore): its timeline, conversation,
 *   follow-ups, artifacts, metadata and outbound deliveries in the transaction of its audit entry,
 *   then its blobs (transcript, agent state, images) at once; a blob that cannot be removed now
 *   stays queued for the sweep. Its children are runs of their own and stay; a pull request or
 *   branch its agent pushed stays on the Git host.
 */
import { Effect, Option } from "effect"
import type { Viewer } from "../domain/Access.js"
import { Conflict, NotAuthorized } from "../domain/Errors.js"
import { requireVisibleRun, runOwnership } from "../domain/RunRecords.js"
import { isTerminal } from "../domain/RunState.js"
import type { StoredRun } from "../ports/RunStore.js"
import { removeQueuedKeys } from "../engine/DataRetention.js"
import { storageUnavailable } from "../internal/Services.js"
import { BlobStore } from "../ports/BlobStore.js"
import { RetentionStore } from "../ports/RetentionStore.js"
import { RunStore } from "../ports/RunStore.js"
import { Audit } from "./Audit.js"

const resource = (id: string) => ({ type: "run", id: id.slice(0, 64) })

/** Why the viewer may not delete a run it can see, or undefined when it may. */
const deleteProblem = (viewer: Viewer, run: StoredRun): string | undefined => {
  if (viewer.acting_run_id !== undefined) return "an agent's run token cannot delete runs"
  if (viewer.instance_admin || viewer.role === "admin") return undefined
  if (viewer.role !== "viewer" && runOwnership(run).creator_uid === viewer.principal_uid) return undefined
  return "only the run's creator and the team's admins delete a run"
}

export class RunDeletion extends Effect.Service<RunDeletion>()("@agent-runs/core/RunDeletion", {
  dependencies: [Audit.Default],
  effect: Effect.gen(function*() {
    const audit = yield* Audit
    const runs = yield* RunStore
    const retention = yield* RetentionStore
    const blobs = yield* BlobStore

    /** Deletes an ended run the viewer may delete, with everything of it. */
    const remove = Effect.fn("RunDeletion.remove")(
      function*(viewer: Viewer, rawId: string) {
        const run = yield* requireVisibleRun(runs, viewer, rawId)
        const runId = run.item.run_id
        const problem = deleteProblem(viewer, run)
        if (problem !== undefined) return yield* new NotAuthorized({ message: problem })
        if (!isTerminal(run.item.state)) {
          return yield* new Conflict({ message: `state: the run is ${run.item.state}; cancel it first, then delete it` })
        }
        const liveAncestor = yield* Effect.findFirst(run.item.ancestor_run_ids, (id) =>
          Effect.map(runs.get(id), (a) => Option.isSome(a) && !isTerminal(a.value.item.state)))
        if (Option.isSome(liveAncestor)) {
          return yield* new Conflict({
            message: `parent_run_id: run ${liveAncestor.value} above it is still live, and its budget counts what this run spent; delete it once that run has ended`
          })
        }
        const removed = yield* audit.recording(viewer, retention.removeRun(runId), () => ({
          action: "run.delete",
          resource: resource(runId)
        }))
        if (Option.isNone(removed)) {
          return yield* new Conflict({ message: "state: the run changed while it was being deleted; try again", retryable: true })
        }
        yield* removeQueuedKeys(removed.value).pipe(
          Effect.provideService(BlobStore, blobs),
          Effect.provideService(RetentionStore, retention),
          Effect.catchAll((e) => Effect.logWarning(`run ${runId}: its blobs wait for the retention sweep`, e))
        )
      },
      storageUnavailable,
      audit.refusals("run.delete", (rawId: string) => resource(rawId))
    )

    return { remove } as const
  })
}) {}
