/**
 * Deleting a run (docs/retention.md#deleting-a-run): `DELETE /agent/runs/{runId}`.
 *
 * Decisions:
 * - The run's creator (unless a viewer now) and the team's admins delete it; other members and
 *   viewers get 403, anyone who cannot see it 404, an agent's run token 403 (no agent deletes
 *   runs). Audited `run.delete`, with the refusals; a delete that finds the run changed rolls its
 *   entry back with it (409).
 * - Only an ended run: a live one is 409 naming its state (cancel it first); one cancelled under
 *   `SETTLE_MS` ago while an agent held it a retryable 409 (its agent may still be stopping and
 *   writing its transcript); one whose sandbox is kept for debugging 409. Not while a run above it is kept
 *   (409 naming `parent_run_id`: that run's budget counts what this one spent; the sweep has the
 *   same rule), nor while a live run continues its conversation (409 naming `conversation_id`).
 * - It goes as the retention sweep removes runs (RetentionStore): its timeline, conversation,
 *   follow-ups, artifacts, metadata and outbound deliveries in the transaction of its audit entry,
 *   then its blobs (transcript, agent state, images) at once; a blob that cannot be removed now
 *   stays queued for the sweep. Its children are runs of their own and stay; a pull request or
 *   branch its agent pushed stays on the Git host.
 */
import { Clock, DateTime, Effect, Option } from "effect"
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

/** How long after a cancel a run may be deleted: its agent's stop (grace, then a kill) and last writes are over. */
export const SETTLE_MS = 2 * 60 * 1000

/** Why the viewer may not delete a run it can see, or undefined when it may. */
const deleteProblem = (viewer: Viewer, run: StoredRun): string | undefined => {
  if (viewer.acting_run_id !== undefined) return "an agent's run token cannot delete runs"
  if (viewer.role === "admin") return undefined
  if (viewer.role !== "viewer" && runOwnership(run).creator_uid === viewer.principal_uid) return undefined
  return "only the run's creator and the team's admins delete a run"
}

/** Why the run itself may not go now (409), or undefined. */
const stateProblem = (run: StoredRun, now: number): Conflict | undefined => {
  const item = run.item
  if (!isTerminal(item.state)) return new Conflict({ message: `state: the run is ${item.state}; cancel it first, then delete it` })
  if (run.sandbox_retained) return new Conflict({ message: "state: the run's sandbox is kept for debugging; delete the run once it is released" })
  // A cancel ends the run before its agent has stopped (a grace, then a kill) and written its last output.
  const stopping = item.state === "CANCELLED" && item.started_at !== null
  if (stopping && now - DateTime.toEpochMillis(item.ended_at ?? item.updated_at) < SETTLE_MS) {
    return new Conflict({ message: "state: the run ended moments ago and its agent may still be stopping; try again in two minutes", retryable: true })
  }
  return undefined
}

export class RunDeletion extends Effect.Service<RunDeletion>()("@agent-runs/core/RunDeletion", {
  dependencies: [Audit.Default],
  effect: Effect.gen(function*() {
    const audit = yield* Audit
    const runs = yield* RunStore
    const retention = yield* RetentionStore
    const blobs = yield* BlobStore

    /** Why a kept run above it keeps the run (409), or undefined. */
    const ancestorProblem = (run: StoredRun) =>
      Effect.map(Effect.findFirst(run.item.ancestor_run_ids, (id) => Effect.map(runs.get(id), Option.isSome)), (kept) =>
        Option.isNone(kept) ? undefined : new Conflict({
          message: `parent_run_id: run ${kept.value} above it is kept, and its budget counts what this run spent; delete that run first`
        }))

    /** Why a live run continuing its conversation keeps the run (409), or undefined. */
    const conversationProblem = (run: StoredRun) =>
      Effect.gen(function*() {
        const conversation = run.item.conversation_id
        if (conversation === null) return undefined
        const continuing = (yield* runs.findByConversation(conversation))
          .find((r) => r.item.run_id !== run.item.run_id && !isTerminal(r.item.state))
        return continuing === undefined
          ? undefined
          : new Conflict({ message: `conversation_id: run ${continuing.item.run_id} continues its conversation and is still live` })
      })

    /**
     * Why the run itself cannot go now, whoever asks (409), or undefined: live, just cancelled, its
     * sandbox kept, its conversation continued by a live run. (Erasure deletes under these rules too.)
     */
    const blockers = (run: StoredRun) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const problem = stateProblem(run, now)
        return problem === undefined ? conversationProblem(run) : Effect.succeed(problem)
      })

    /** Deletes an ended run the viewer may delete, with everything of it. */
    const remove = Effect.fn("RunDeletion.remove")(
      function*(viewer: Viewer, rawId: string) {
        const run = yield* requireVisibleRun(runs, viewer, rawId)
        const runId = run.item.run_id
        const problem = deleteProblem(viewer, run)
        if (problem !== undefined) return yield* new NotAuthorized({ message: problem })
        const blocked = (yield* blockers(run)) ?? (yield* ancestorProblem(run))
        if (blocked !== undefined) return yield* blocked
        const removed = yield* audit.recording(viewer, retention.removeRun(runId), () => ({
          action: "run.delete",
          resource: resource(runId)
        })).pipe(
          Effect.catchTag("StaleWrite", () =>
            Effect.fail(new Conflict({ message: "state: the run changed while it was being deleted; try again", retryable: true })))
        )
        yield* removeQueuedKeys(removed).pipe(
          Effect.provideService(BlobStore, blobs),
          Effect.provideService(RetentionStore, retention),
          Effect.catchAll((e) => Effect.logWarning(`run ${runId}: its blobs wait for the retention sweep`, e))
        )
      },
      storageUnavailable,
      audit.refusals("run.delete", (rawId: string) => resource(rawId))
    )

    return { remove, blockers } as const
  })
}) {}
