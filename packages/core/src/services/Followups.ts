/**
 * Follow-up messages (docs/reference/run-lifecycle.md, `POST /agent/runs/{runId}/followups`), routed by the run's
 * state with RunStateMachine's `decideFollowup`:
 * - PENDING, QUEUED or CLAIMED: stored in the run's follow-up inbox; the agent receives them when
 *   it starts (`followups` of the harness start message, docs/reference/harness-protocol.md). PENDING is treated like
 *   QUEUED: the run has not started, so the message waits with it.
 * - INPROGRESS: stored in the same inbox. This service only records the message; the dispatcher
 *   holding the run drains the inbox (`takeFollowups`) into the live agent as
 *   `{"type":"followup", message, mode: "normal"}` on its stdin.
 * - Ended (SUCCEEDED, FAILED, BLOCKED, ERROR, CANCELLED) after the agent started: a new execution
 *   of the same run: same run and conversation, `execution_count + 1`, `attempt` 1, back to
 *   QUEUED (status message, lease and retained sandbox cleared), the message stored as the first
 *   follow-up of the new execution; an empty message continues from the saved conversation alone.
 * - FAILED with `environment_setup_failed` while `session_debug_until` has not passed (and the
 *   sandbox is retained): stored in the same inbox for the debug agent in the retained sandbox;
 *   the dispatcher delivers it with `mode: "debug"` (the run is FAILED inside its debug window).
 *   The run stays FAILED with its message, error code, debug window and `ended_at` unchanged.
 *
 * Decisions:
 * - Checks in order: malformed run id 400 naming `runId`, unknown or hidden 404, viewer 403, then
 *   RunStateMachine's 400s: an empty (blank) message except to continue an ended run that has a
 *   saved conversation, and an ended run that never started (no conversation, no sandbox).
 * - A failed setup whose debug window has passed but whose sandbox was retained counts as started
 *   (the sandbox exists): a message starts a new execution; an empty one is refused (nothing to
 *   continue from).
 * - The state change (when there is one), its timeline events and the inbox entry are written in
 *   one step (`RunStore.recordFollowup`), guarded by the state read and the lease holder: an
 *   executor claiming a new execution always finds its first follow-up. When the state does not
 *   change only `updated_at` is written, so nothing an executor wrote meanwhile is undone. A lost
 *   race re-reads and decides again once, then answers 409 retryable.
 * - Timeline: `followup_received` for every accepted follow-up; a new execution adds `run_queued`,
 *   both under a fresh execution id (the new execution's first events); the first follow-up of a
 *   debug window adds `debug_session_started` (read from the timeline: a debug session started
 *   after the latest `environment_setup_failed`). Other events carry the lease holder's execution
 *   id, else the run's latest one (as Runs.cancel). The message itself is not put on the timeline.
 * - `updated_at` becomes the time of the follow-up, whatever the route.
 * - The answer is `RunFollowupResponse {run_id, state, execution_count, route}`, with the state and
 *   count after the follow-up and `route` naming what happened to the message.
 * - Quotas (Quotas.ts): a message over `followupBytes` is a 413 naming `message`, checked after
 *   the viewer check; a run whose inbox already holds `pendingFollowups` messages its agent has
 *   not received is a 429 (`Retry-After`: FOLLOWUP_RETRY_SECONDS), nothing written. The inbox is
 *   counted in the same write as the new entry (`FollowupWrite.maxPending`), so concurrent senders
 *   never take it past the limit. Messages delivered to a running agent leave the inbox at once.
 *   Whatever the route, a run takes at most `followupsPerMinute` messages (`followupBytesPerMinute`
 *   bytes) in any minute, taken before the write and given back when it fails, and at most
 *   `followupsPerRun` (`followupBytesPerRun` bytes) in its life, counted in the write: 429 with
 *   `Retry-After` past either, nothing written (FOLLOWUP_TOTAL_RETRY_SECONDS and
 *   `retryable: false` past the life total).
 * - The sender shapes the run (docs/security.md): it is recorded in the same write, and the run's
 *   token acts from then on with no more than the sender's role (Access.runTokenRole). A member's
 *   follow-up to an admin's run lowers its token to a member's for the rest of the run; a run whose
 *   agent holds a secret only admins may hand out refuses followups from anyone else (403).
 */
import { followupProblem } from "../domain/BudgetAccess.js"
import { Clock, Effect, Either, Option, Schema, Tracer } from "effect"
import { canChange, shaperOf } from "../domain/Access.js"
import { checkFollowupSender } from "../domain/AdminOnlySecrets.js"
import type { Viewer } from "../domain/Access.js"
import { Conflict, NotAuthorized, RateLimited, ResourceNotFound } from "../domain/Errors.js"
import { Ids, RunId } from "../domain/Ids.js"
import { storageUnavailable } from "../internal/Services.js"
import { RunStore } from "../ports/RunStore.js"
import { checkSize, Quotas, utf8Bytes } from "../domain/Quotas.js"
import { makeWeightedLimiter } from "../domain/RateLimit.js"
import type { StoredRun } from "../ports/RunStore.js"
import type { RunFollowupRequest } from "../domain/Run.js"
import { RunState } from "../domain/RunState.js"
import {
  decideFollowup,
  followupEvent,
  isBlankMessage,
  isDebugWindowOpen,
  transition
} from "../domain/RunStateMachine.js"
import type { FollowupRoute, RunSnapshot } from "../domain/RunStateMachine.js"
import { applyTransition, currentExecution, eventsAt, guardOf, parseRunId, runOwnership, runSnapshot, visibleRun } from "../domain/RunRecords.js"
import { logTransition } from "../domain/RunLog.js"
import { Audit } from "./Audit.js"
import type { TimelineEvent } from "../domain/Timeline.js"

/** What became of a follow-up message. */
export const FollowupRouteName = Schema.Literal("store_for_start", "deliver_live", "new_execution", "debug_session")
export type FollowupRouteName = typeof FollowupRouteName.Type

/** The API name of each route of RunStateMachine's `FollowupRoute`. */
export const routeName: Record<FollowupRoute["_tag"], FollowupRouteName> = {
  StoreForStart: "store_for_start",
  DeliverLive: "deliver_live",
  NewExecution: "new_execution",
  DebugSession: "debug_session"
}

/** `POST /agent/runs/{runId}/followups`: the follow-up was accepted. */
export class RunFollowupResponse extends Schema.Class<RunFollowupResponse>("RunFollowupResponse")({
  run_id: RunId,
  state: RunState,
  execution_count: Schema.Int.pipe(Schema.greaterThanOrEqualTo(1)),
  route: FollowupRouteName
}) {}

/** Whether a debug agent was started since the latest failed setup (timeline in sequence order). */
export const debugSessionStarted = (timeline: ReadonlyArray<TimelineEvent>): boolean => {
  for (let i = timeline.length - 1; i >= 0; i--) {
    const type = timeline[i]!.event_type
    if (type === "debug_session_started") return true
    if (type === "environment_setup_failed") return false
  }
  return false
}


/** The `Retry-After` of a follow-up refused because the run's inbox is full: its agent has yet to start. */
export const FOLLOWUP_RETRY_SECONDS = 30

/** The `Retry-After` of a follow-up refused because the run took its life total (waiting does not help). */
export const FOLLOWUP_TOTAL_RETRY_SECONDS = 86_400

/** The follow-up service. */
/** The run a follow-up goes to, as an audited resource (a raw id cut short). */
const resource = (rawId: string) => ({ type: "run", id: rawId.slice(0, 64) })

/**
 * Links the span sending a follow-up to the run's trace (docs/observability.md): the follow-up's
 * request has a trace of its own, and leads to the run's.
 */
const linkToRunTrace = (run: StoredRun) =>
  run.item.trace_id === undefined || run.item.trace_span_id === undefined
    ? Effect.void
    : Effect.linkSpanCurrent(
      Tracer.externalSpan({ traceId: run.item.trace_id, spanId: run.item.trace_span_id, sampled: true }),
      { "agent_runs.run_id": run.item.run_id }
    )

export class Followups extends Effect.Service<Followups>()("@agent-runs/core/Followups", {
  dependencies: [Audit.Default],
  effect: Effect.gen(function*() {
    const audit = yield* Audit
    const store = yield* RunStore
    const ids = yield* Ids
    const quotas = yield* Quotas
    // Follow-ups per run in the last minute (this process's), by count and bytes.
    const recent = makeWeightedLimiter({
      maxCount: quotas.followupsPerMinute,
      maxWeight: quotas.followupBytesPerMinute,
      windowMs: 60_000
    })
    let prunedAt = 0

    /** Takes the run's per-minute follow-up quota for `bytes` now; 429 with `Retry-After` when it has no room. */
    const takeRecent = (runId: RunId, bytes: number, now: number) =>
      Effect.suspend(() => {
        if (now - prunedAt >= 60_000) {
          recent.prune(now)
          prunedAt = now
        }
        const decision = recent.take(runId, now, bytes)
        if (decision.allowed) return Effect.void
        const seconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1000))
        return Effect.fail(
          new RateLimited({
            message: `message: run ${runId} takes at most ${quotas.followupsPerMinute} follow-ups ` +
              `(${quotas.followupBytesPerMinute} bytes) a minute; try again in ${seconds} s`,
            retryAfterSeconds: seconds
          })
        )
      })

    /** The machine's view of the run, with whether a debug session runs when its window is open. */
    const snapshotOf = (run: StoredRun, now: number) =>
      Effect.gen(function*() {
        const snapshot: RunSnapshot = runSnapshot(run)
        if (!isDebugWindowOpen(snapshot, now)) return snapshot
        const timeline = yield* store.timeline(run.item.run_id, 0)
        return { ...snapshot, debug_session_started: debugSessionStarted(timeline) }
      })

    const sendOnce = (viewer: Viewer, runId: RunId, message: string) =>
      Effect.gen(function*() {
        const found = yield* visibleRun(store, viewer, runId)
        if (Option.isNone(found)) return yield* ResourceNotFound.of("run", runId)
        const run = found.value
        if (!canChange(viewer, runOwnership(run))) {
          return yield* new NotAuthorized({ message: "viewers cannot send follow-ups" })
        }
        const outside = followupProblem(viewer, run.item)
        if (outside !== undefined) return yield* new NotAuthorized({ message: outside })
        yield* checkFollowupSender(viewer, run.item.agent_config)
        yield* checkSize("message", message, quotas.followupBytes)
        yield* linkToRunTrace(run)
        const now = yield* Clock.currentTimeMillis
        const snapshot = yield* snapshotOf(run, now)
        const route = decideFollowup(snapshot, message, now)
        if (Either.isLeft(route)) return yield* route.left
        const moved = transition(snapshot, followupEvent(route.right, message), now)
        if (Either.isLeft(moved)) return yield* Effect.die(moved.left)
        const newExecution = route.right._tag === "NewExecution"
        const execution = newExecution ? yield* ids.executionId : yield* currentExecution(store, ids, run)
        const next = applyTransition(run, moved.right, now)
        const blank = isBlankMessage(message)
        // An empty continuation counts too (it starts an execution), weighing nothing.
        yield* takeRecent(runId, blank ? 0 : utf8Bytes(message), now)
        const record = store.recordFollowup(
          runId,
          guardOf(run),
          {
            ...(newExecution ? { next } : {}),
            at: now,
            events: eventsAt(moved.right.timeline, now, execution),
            ...(blank ? {} : { followup: { message, received_at: now } }),
            maxPending: quotas.pendingFollowups,
            maxTotal: { count: quotas.followupsPerRun, bytes: quotas.followupBytesPerRun },
            shaper: shaperOf(viewer)
          }
        ).pipe(
          Effect.onError(() => Effect.sync(() => recent.refund(runId))),
          Effect.catchTags({
            FollowupInboxFull: ({ pending }) =>
              Effect.fail(
                new RateLimited({
                  message: `message: run ${runId} has ${pending} follow-ups waiting for its agent, its quota ` +
                    `(${quotas.pendingFollowups}); try again once the agent has taken them`,
                  retryAfterSeconds: FOLLOWUP_RETRY_SECONDS
                })
              ),
            FollowupTotalSpent: ({ bytes, count }) =>
              Effect.fail(
                new RateLimited({
                  message: `message: run ${runId} has received ${count} follow-ups (${bytes} bytes); a run takes at most ` +
                    `${quotas.followupsPerRun} (${quotas.followupBytesPerRun} bytes) in its life: ` +
                    "continue in a new run with its conversation_id",
                  retryAfterSeconds: FOLLOWUP_TOTAL_RETRY_SECONDS,
                  retryable: false
                })
              )
          })
        )
        yield* audit.recording(viewer, record, () => ({ action: "run.followup", resource: resource(runId) }))
        if (newExecution) yield* logTransition(run, next)
        return new RunFollowupResponse({
          run_id: runId,
          state: next.item.state,
          execution_count: next.item.execution_count,
          route: routeName[route.right._tag]
        })
      })

    /** Sends a follow-up (a decoded `RunFollowupRequest`) to a run the viewer may change. */
    const send = Effect.fn("Followups.send")(
      function*(viewer: Viewer, rawId: string, request: RunFollowupRequest) {
        const runId = yield* parseRunId(rawId)
        return yield* sendOnce(viewer, runId, request.message).pipe(
          Effect.catchTag("StaleWrite", () => sendOnce(viewer, runId, request.message)),
          Effect.catchTag(
            "StaleWrite",
            () => Effect.fail(new Conflict({ message: "the run changed while sending the follow-up; try again", retryable: true }))
          )
        )
      },
      storageUnavailable,
      audit.refusals("run.followup", (rawId: string) => resource(rawId))
    )

    return { send } as const
  })
}) {}
