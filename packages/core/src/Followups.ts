/**
 * Follow-up messages (CONTRACT §6), routed by the run's state with `decideFollowup`:
 * - QUEUED, PENDING or CLAIMED: stored in the run's follow-up inbox; the agent receives them when
 *   it starts (`followups` of the harness start message).
 * - INPROGRESS: stored in the same inbox, which the dispatcher holding the run drains into the
 *   live agent (`{"type":"followup"}` on its stdin). This service records; the dispatcher delivers.
 * - Ended: a new execution of the same run (same run and conversation, `execution_count + 1`,
 *   back to QUEUED, `attempt` 1), whose first follow-up is the message; an empty message
 *   continues from the saved conversation alone.
 * - FAILED with `environment_setup_failed` inside `session_debug_until`: stored for the debug
 *   agent in the retained sandbox; the run stays FAILED with its message and code unchanged.
 *
 * Decisions where the contract is silent:
 * - Checks in order: malformed run id 400, unknown or hidden 404, viewer 403, then the routing
 *   rules (empty message, never-started run: 400).
 * - The state change is written first, guarded by the state read (and the lease holder); the
 *   message is stored after it. A lost race re-reads and decides again once, then answers 409
 *   retryable. Events of a new execution carry a fresh execution id.
 * - The answer is `{run_id, state, execution_count, route}` with the state after the follow-up.
 */
import { Clock, Effect, Either, Option, Schema } from "effect"
import { canChange, canSee } from "./Access.js"
import type { Viewer } from "./Access.js"
import { Conflict, InvalidRequest, NotAuthorized, ResourceNotFound } from "./Errors.js"
import { Ids, RunId } from "./Ids.js"
import { storageUnavailable } from "./internal/Services.js"
import { RunStore } from "./ports/RunStore.js"
import type { RunFollowupRequest } from "./Run.js"
import type { RunState } from "./RunState.js"
import { decideFollowup, followupEvent, isBlankMessage, transition } from "./RunStateMachine.js"
import type { FollowupRoute } from "./RunStateMachine.js"
import { applyTransition, currentExecution, eventsAt, runOwnership, runSnapshot } from "./Runs.js"

/** What became of a follow-up, as the API names it. */
export type FollowupRouteName = "store_for_start" | "deliver_live" | "new_execution" | "debug_session"

const routeNames: Record<FollowupRoute["_tag"], FollowupRouteName> = {
  StoreForStart: "store_for_start",
  DeliverLive: "deliver_live",
  NewExecution: "new_execution",
  DebugSession: "debug_session"
}

/** The answer to an accepted follow-up. */
export interface FollowupAccepted {
  readonly run_id: RunId
  readonly state: RunState
  readonly execution_count: number
  readonly route: FollowupRouteName
}

const isRunId = Schema.is(RunId)

/** The follow-up service. */
export class Followups extends Effect.Service<Followups>()("@agent-runs/core/Followups", {
  effect: Effect.gen(function*() {
    const store = yield* RunStore
    const ids = yield* Ids

    const sendOnce = (viewer: Viewer, runId: RunId, message: string) =>
      Effect.gen(function*() {
        const found = Option.filter(yield* store.get(runId), (run) => canSee(viewer, runOwnership(run)))
        if (Option.isNone(found)) return yield* ResourceNotFound.of("run", runId)
        const run = found.value
        if (!canChange(viewer, runOwnership(run))) {
          return yield* new NotAuthorized({ message: "viewers cannot send follow-ups" })
        }
        const now = yield* Clock.currentTimeMillis
        const snapshot = runSnapshot(run)
        const route = decideFollowup(snapshot, message, now)
        if (Either.isLeft(route)) return yield* route.left
        const moved = transition(snapshot, followupEvent(route.right, message), now)
        if (Either.isLeft(moved)) {
          return yield* new Conflict({ message: `the run changed (${moved.left.message}); try again`, retryable: true })
        }
        const execution = route.right._tag === "NewExecution"
          ? yield* ids.executionId
          : yield* currentExecution(store, ids, run)
        const next = applyTransition(run, moved.right, now)
        yield* store.update(
          runId,
          { state: run.item.state, ...(run.lease === null ? {} : { execution_id: run.lease.execution_id }) },
          next,
          eventsAt(moved.right.timeline, now, execution)
        )
        if (!isBlankMessage(message)) yield* store.enqueueFollowup(runId, { message, received_at: now })
        return {
          run_id: runId,
          state: next.item.state,
          execution_count: next.item.execution_count,
          route: routeNames[route.right._tag]
        } satisfies FollowupAccepted
      })

    /** Sends a follow-up to a run the viewer may change. */
    const send = Effect.fn("Followups.send")(
      function*(viewer: Viewer, rawId: string, request: RunFollowupRequest) {
        if (!isRunId(rawId)) return yield* InvalidRequest.forField("runId", "must be a run id (a lowercase UUIDv7)")
        return yield* sendOnce(viewer, rawId, request.message).pipe(
          Effect.catchTag("StaleWrite", () => sendOnce(viewer, rawId, request.message)),
          Effect.catchTag(
            "StaleWrite",
            () => Effect.fail(new Conflict({ message: "the run changed while sending; try again", retryable: true }))
          )
        )
      },
      storageUnavailable
    )

    return { send } as const
  })
}) {}
