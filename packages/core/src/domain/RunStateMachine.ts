/**
 * The run lifecycle (docs/reference/run-lifecycle.md) as pure functions: `transition(run, event, now)` moves a
 * `RunSnapshot` or rejects the event, `decideCancel` and `decideFollowup` answer the cancel and
 * follow-up endpoints. No I/O and no clock: the caller passes `now` (epoch millis) and persists
 * the next snapshot and the timeline event types of each `Transition`.
 *
 * Decisions:
 * - `attempt` is the ordinal of the claim of the current execution that is under way or awaited.
 *   It is 1 when the run is created and when a follow-up starts a new execution; a claim does not
 *   change it (the n-th claim happens with `attempt = n`); a lease expiry requeues with
 *   `attempt + 1`, and the expiry of the lease of attempt `MAX_ATTEMPTS` ends the run `ERROR` with
 *   `resource_unavailable` instead. So `1 <= attempt <= MAX_ATTEMPTS` always, and one execution is
 *   claimed at most `MAX_ATTEMPTS` (3) times after lost executors. A run handed over (`HandOver`:
 *   its lease's holder stopped the agent while shutting down) is requeued with the same `attempt`
 *   (a deploy costs no attempt), its first `MAX_FREE_HANDOVERS` (3) times; after that a hand-over
 *   counts as a lost executor.
 * - The execution id given at a claim is the fencing token. Every executor event names it; an event
 *   naming another execution (`StaleExecution`), or arriving at or after the lease's expiry
 *   (`LeaseLapsed`), is rejected. `LeaseExpired` names the lease it expires and is rejected before
 *   that lease's `expires_at` (`LeaseStillValid`). A lease ends at `expires_at` exactly.
 * - `Fail` is allowed from `CLAIMED` too (the agent failed to start); setup failures use
 *   `EnvironmentSetupFailed`. `Error` (a service failure) is allowed from every non-ended state.
 * - A setup failure keeps the sandbox and opens a debug window only when a retention longer than 0
 *   is given: `session_debug_until = now + retentionMillis`.
 * - `Start` marks `has_conversation`: the agent's conversation begins when it starts.
 * - A message that is empty after trimming whitespace counts as empty.
 * - Cancel is refused with 422 before 400: an ended run of a non-cancellable type answers 422.
 *   A `worker_host` that is the empty string counts as unset.
 * - Each state change records one event for the new state (`run_queued`, `run_claimed`, …); a
 *   lease expiry records `lease_expired` then `requeued` (or `run_errored`); a hand-over
 *   `handed_over` then `requeued`; a setup failure
 *   records `environment_setup_failed` then `run_failed`; a follow-up records `followup_received`
 *   first, and the first message of a debug window also `debug_session_started`.
 * - A cancelled run's status message is "cancelled by request"; status messages of requeues are
 *   left as they were (the timeline tells the story); a continuation clears the status message,
 *   the lease and the retained sandbox.
 */
import { Data, Either } from "effect"
import { Conflict, InvalidRequest, OperationNotSupported, ResourceNotFound } from "./Errors.js"
import type { RunErrorCode } from "./Errors.js"
import { isTerminal, MAX_ATTEMPTS, MAX_FREE_HANDOVERS, TerminalRunStates } from "./RunState.js"
import type { RunExecutionLocation, RunSourceType, RunState } from "./RunState.js"
import type { TimelineEventType } from "./Timeline.js"

/** A run's status message as the machine sees it; `session_debug_until` in epoch millis. */
export interface RunStatusSnapshot {
  readonly message: string
  readonly error_code?: RunErrorCode | undefined
  readonly retryable: boolean
  readonly session_debug_until?: number | undefined
}

/** The lease of a claimed run: the execution id (the fencing token) and when it ends (epoch millis). */
export interface RunLease {
  readonly execution_id: string
  readonly expires_at: number
}

/** The facts of a run the state machine reads and writes. */
export interface RunSnapshot {
  readonly state: RunState
  /** Ordinal of the current or awaited claim of the current execution, from 1. */
  readonly attempt: number
  /** Number of executions (the first, then one per follow-up continuation), from 1. */
  readonly execution_count: number
  readonly status_message?: RunStatusSnapshot | undefined
  readonly lease?: RunLease | undefined
  /** A saved conversation exists (the agent started, or the run was created from one). */
  readonly has_conversation: boolean
  /** The sandbox of a failed environment setup is kept for a debug session. */
  readonly sandbox_retained: boolean
  /** A debug agent was started in the retained sandbox. */
  readonly debug_session_started?: boolean | undefined
  readonly worker_host?: string | undefined
  readonly execution_location: RunExecutionLocation
  readonly source: RunSourceType
}

/** The snapshot of a run just written: `PENDING`, attempt 1 of execution 1. */
export const newRunSnapshot = (facts: {
  readonly execution_location: RunExecutionLocation
  readonly source: RunSourceType
  readonly worker_host?: string | undefined
  readonly has_conversation?: boolean | undefined
}): RunSnapshot => ({
  state: "PENDING",
  attempt: 1,
  execution_count: 1,
  has_conversation: facts.has_conversation ?? false,
  sandbox_retained: false,
  execution_location: facts.execution_location,
  source: facts.source,
  ...(facts.worker_host === undefined ? {} : { worker_host: facts.worker_host })
})

/** The timeline events recorded when a run is written (before any `transition`). */
export const CreationTimeline: ReadonlyArray<TimelineEventType> = ["run_created", "run_pending"]

type Empty = Record<never, never>

/** Everything that can happen to a run. Executor events name their execution (the fencing token). */
export type RunEvent = Data.TaggedEnum<{
  /** Resolution done: queue it, or leave it `PENDING` while the team is at capacity. */
  Admit: { readonly atCapacity: boolean }
  /** The team has room again: a `PENDING` run is queued. */
  CapacityFreed: Empty
  /** An executor takes a queued run under a lease. */
  Claim: { readonly executionId: string; readonly leaseExpiresAt: number }
  LeaseRenewed: { readonly executionId: string; readonly leaseExpiresAt: number }
  EnvironmentSetupStarted: { readonly executionId: string }
  EnvironmentSetupSucceeded: { readonly executionId: string }
  /** `retentionMillis`: how long the failed sandbox is kept for a debug session (none if absent or 0). */
  EnvironmentSetupFailed: {
    readonly executionId: string
    readonly message: string
    readonly retentionMillis?: number | undefined
  }
  /** The agent started. */
  Start: { readonly executionId: string }
  Succeed: { readonly executionId: string; readonly message?: string | undefined }
  /** The agent failed. */
  Fail: { readonly executionId: string; readonly errorCode: RunErrorCode; readonly message: string }
  /** The agent stopped to wait for the user. */
  Block: { readonly executionId: string; readonly message: string }
  /** The service failed; `executionId` when an executor reports it. */
  Error: { readonly executionId?: string | undefined; readonly errorCode: RunErrorCode; readonly message: string }
  /** The lease of `executionId` ran out (the executor is presumed dead). */
  LeaseExpired: { readonly executionId: string }
  /**
   * The holder of the lease stopped its agent and gives the run back (a server or worker shutting
   * down); `earlier` is how many times the run was handed over before.
   */
  HandOver: { readonly executionId: string; readonly earlier: number }
  /** A caller cancels the run (checked by `decideCancel`). */
  Cancel: Empty
  /** The self-hosted worker a queued run waits for has stayed away too long: the run fails. */
  WorkerAbsent: { readonly message: string }
  /** A follow-up stored for the agent's start or delivered to the running agent. */
  FollowupReceived: { readonly message: string }
  /** A follow-up to an ended run: a new execution. */
  FollowupContinuation: { readonly message: string }
  /** A follow-up into the retained sandbox of a failed environment setup. */
  DebugFollowup: { readonly message: string }
  /** The retained sandbox of an ended run was removed. */
  SandboxReleased: Empty
}>
export const RunEvent = Data.taggedEnum<RunEvent>()
export type RunEventTag = RunEvent["_tag"]

/** A successful move: the next snapshot, the states, and the timeline events to record in order. */
export interface Transition {
  readonly from: RunState
  readonly to: RunState
  readonly event: RunEventTag
  readonly run: RunSnapshot
  readonly timeline: ReadonlyArray<TimelineEventType>
}

/** Why an event was rejected. */
export type RejectionReason =
  | "NotAllowed" // the event has no move from the run's state
  | "StaleExecution" // the event names another execution than the current lease's
  | "LeaseLapsed" // the executor's lease ended before its event arrived
  | "LeaseStillValid" // a lease expiry reported before the lease's end
  | "InvalidLease" // a claim or renewal whose lease would already be over
  | "Refused" // cancel or follow-up refused; `error` is the answer for the caller
  | "Misrouted" // a follow-up event that is not the route `decideFollowup` chose

/** The errors a cancel request can be answered with. */
export type CancelRefusal = ResourceNotFound | OperationNotSupported | InvalidRequest | Conflict

/** An event the machine did not apply; the run is unchanged. */
export class Rejection extends Data.TaggedClass("Rejection")<{
  readonly reason: RejectionReason
  readonly state: RunState
  readonly event: RunEventTag
  readonly message: string
  readonly error?: CancelRefusal | undefined
}> {}

/** One allowed move of the table. */
export interface TransitionRule {
  readonly from: RunState
  readonly event: RunEventTag
  readonly to: RunState
}

const rules = (from: RunState, moves: ReadonlyArray<readonly [RunEventTag, RunState]>): Array<TransitionRule> =>
  moves.map(([event, to]) => ({ from, event, to }))

/** Every allowed (from state, event) → to state; `transition` produces no other move. */
export const TransitionTable: ReadonlyArray<TransitionRule> = [
  ...rules("PENDING", [
    ["Admit", "PENDING"],
    ["Admit", "QUEUED"],
    ["CapacityFreed", "QUEUED"],
    ["Error", "ERROR"],
    ["FollowupReceived", "PENDING"]
  ]),
  ...rules("QUEUED", [
    ["Claim", "CLAIMED"],
    ["Cancel", "CANCELLED"],
    ["Error", "ERROR"],
    ["WorkerAbsent", "FAILED"],
    ["FollowupReceived", "QUEUED"]
  ]),
  ...rules("CLAIMED", [
    ["LeaseRenewed", "CLAIMED"],
    ["EnvironmentSetupStarted", "CLAIMED"],
    ["EnvironmentSetupSucceeded", "CLAIMED"],
    ["EnvironmentSetupFailed", "FAILED"],
    ["Start", "INPROGRESS"],
    ["Fail", "FAILED"],
    ["Error", "ERROR"],
    ["LeaseExpired", "QUEUED"],
    ["LeaseExpired", "ERROR"],
    ["HandOver", "QUEUED"],
    ["HandOver", "ERROR"],
    ["Cancel", "CANCELLED"],
    ["FollowupReceived", "CLAIMED"]
  ]),
  ...rules("INPROGRESS", [
    ["LeaseRenewed", "INPROGRESS"],
    ["Succeed", "SUCCEEDED"],
    ["Fail", "FAILED"],
    ["Block", "BLOCKED"],
    ["Error", "ERROR"],
    ["LeaseExpired", "QUEUED"],
    ["LeaseExpired", "ERROR"],
    ["HandOver", "QUEUED"],
    ["HandOver", "ERROR"],
    ["Cancel", "CANCELLED"],
    ["FollowupReceived", "INPROGRESS"]
  ]),
  ...TerminalRunStates.flatMap((state) =>
    rules(state, [
      ["FollowupContinuation", "QUEUED"],
      ["SandboxReleased", state]
    ])
  ),
  ...rules("FAILED", [["DebugFollowup", "FAILED"]])
]

/** Whether the table has a move for `event` from `state`. */
export const isAllowed = (state: RunState, event: RunEventTag): boolean =>
  TransitionTable.some((rule) => rule.from === state && rule.event === event)

/** Error codes whose status message says retrying may succeed. */
export const isRetryableRunError = (code: RunErrorCode): boolean =>
  code === "internal_error" || code === "resource_unavailable" || code === "rate_limited"

/** Whether a message counts as empty (nothing but whitespace). */
export const isBlankMessage = (message: string): boolean => message.trim() === ""

// ---------------------------------------------------------------------------------------------
// Cancel

/** The run can be cancelled: stop its agent if one runs, then record `Cancel`. */
export class StopRun extends Data.TaggedClass("StopRun")<{
  /** An executor holds the run (CLAIMED or INPROGRESS): send cancel, then SIGTERM, then SIGKILL. */
  readonly agentRunning: boolean
  /** The execution to stop, when one holds the run. */
  readonly executionId?: string | undefined
}> {}

/** Why the run's type cannot be cancelled, or undefined when it can. */
export const cancelUnsupportedReason = (
  run: Pick<RunSnapshot, "execution_location" | "source">
): string | undefined =>
  run.execution_location === "LOCAL"
    ? "runs executed locally cannot be cancelled"
    : run.source === "GITHUB_ACTION"
    ? "runs started by a GitHub Action cannot be cancelled"
    : undefined

/** Whether the run's type supports cancel (the RunItem's `is_run_type_cancellable`). */
export const isRunTypeCancellable = (run: Pick<RunSnapshot, "execution_location" | "source">): boolean =>
  cancelUnsupportedReason(run) === undefined

/** The answer to a cancel request: 404, 422, 400, 409 in that precedence, else stop the run. */
export const decideCancel = (run: RunSnapshot | undefined): Either.Either<StopRun, CancelRefusal> => {
  if (run === undefined) return Either.left(ResourceNotFound.of("run"))
  const unsupported = cancelUnsupportedReason(run)
  if (unsupported !== undefined) return Either.left(new OperationNotSupported({ message: unsupported }))
  if (isTerminal(run.state)) return Either.left(new InvalidRequest({ message: `run is already ${run.state}` }))
  if (run.state === "PENDING") {
    return Either.left(new Conflict({ message: "run is PENDING; try again shortly", retryable: true }))
  }
  return Either.right(
    new StopRun({
      agentRunning: run.state === "CLAIMED" || run.state === "INPROGRESS",
      ...(run.lease === undefined ? {} : { executionId: run.lease.execution_id })
    })
  )
}

// ---------------------------------------------------------------------------------------------
// Follow-up

/** Where a follow-up goes. */
export type FollowupRoute = Data.TaggedEnum<{
  /** The run has not started its agent: keep the message and hand it over at start. */
  StoreForStart: Empty
  /** The agent is running: deliver the message now. */
  DeliverLive: Empty
  /** The run ended: start execution `executionCount` with the conversation plus the message. */
  NewExecution: { readonly executionCount: number }
  /** Setup failed and the debug window is open: send the message into the retained sandbox. */
  DebugSession: { readonly sessionDebugUntil: number }
}>
export const FollowupRoute = Data.taggedEnum<FollowupRoute>()

/** The end of the open debug window of a failed setup's retained sandbox, or undefined if none is open. */
const openDebugWindow = (run: RunSnapshot, now: number): number | undefined => {
  const status = run.status_message
  const until = status?.session_debug_until
  return run.state === "FAILED" &&
    run.sandbox_retained &&
    status?.error_code === "environment_setup_failed" &&
    until !== undefined &&
    now < until
    ? until
    : undefined
}

/** Whether a message now goes to a debug agent in the retained sandbox of a failed setup. */
export const isDebugWindowOpen = (run: RunSnapshot, now: number): boolean => openDebugWindow(run, now) !== undefined

const emptyMessage = () =>
  InvalidRequest.forField("message", "must not be empty unless continuing an ended run from its saved conversation")

/** The route of a follow-up message by the run's state, or the 400 that refuses it. */
export const decideFollowup = (
  run: RunSnapshot,
  message: string,
  now: number
): Either.Either<FollowupRoute, InvalidRequest> => {
  const blank = isBlankMessage(message)
  if (!isTerminal(run.state)) {
    if (blank) return Either.left(emptyMessage())
    return Either.right(run.state === "INPROGRESS" ? FollowupRoute.DeliverLive() : FollowupRoute.StoreForStart())
  }
  const debugUntil = openDebugWindow(run, now)
  if (debugUntil !== undefined) {
    if (blank) return Either.left(emptyMessage())
    return Either.right(FollowupRoute.DebugSession({ sessionDebugUntil: debugUntil }))
  }
  if (!run.has_conversation && !run.sandbox_retained) {
    return Either.left(
      new InvalidRequest({ message: "run never started: it has no conversation to continue and no sandbox" })
    )
  }
  if (blank && !run.has_conversation) return Either.left(emptyMessage())
  return Either.right(FollowupRoute.NewExecution({ executionCount: run.execution_count + 1 }))
}

/** The event that records a follow-up sent along `route`. */
export const followupEvent = (route: FollowupRoute, message: string): RunEvent => {
  switch (route._tag) {
    case "StoreForStart":
    case "DeliverLive":
      return RunEvent.FollowupReceived({ message })
    case "NewExecution":
      return RunEvent.FollowupContinuation({ message })
    case "DebugSession":
      return RunEvent.DebugFollowup({ message })
  }
}

// ---------------------------------------------------------------------------------------------
// Transition

type Result = Either.Either<Transition, Rejection>

const reject = (run: RunSnapshot, event: RunEvent, reason: RejectionReason, message: string, error?: CancelRefusal): Result =>
  Either.left(
    new Rejection({ reason, state: run.state, event: event._tag, message, ...(error === undefined ? {} : { error }) })
  )

const move = (run: RunSnapshot, event: RunEvent, next: RunSnapshot, timeline: ReadonlyArray<TimelineEventType>): Result =>
  Either.right({ from: run.state, to: next.state, event: event._tag, run: next, timeline })

/** The run ended in `state`: the lease is gone. */
const end = (run: RunSnapshot, state: RunState, status: RunStatusSnapshot | undefined): RunSnapshot => ({
  ...run,
  state,
  lease: undefined,
  status_message: status
})

const status = (message: string, errorCode?: RunErrorCode): RunStatusSnapshot => ({
  message,
  retryable: errorCode === undefined ? false : isRetryableRunError(errorCode),
  ...(errorCode === undefined ? {} : { error_code: errorCode })
})

/** The rejection of an executor event whose lease is not the current one or is over, if any. */
const checkLease = (run: RunSnapshot, event: RunEvent, executionId: string, now: number): Result | undefined => {
  if (run.lease === undefined || run.lease.execution_id !== executionId) {
    return reject(run, event, "StaleExecution", `execution ${executionId} does not hold the run`)
  }
  if (now >= run.lease.expires_at) {
    return reject(run, event, "LeaseLapsed", `the lease of execution ${executionId} has expired`)
  }
  return undefined
}

const followupMatches: Record<FollowupRoute["_tag"], RunEventTag> = {
  StoreForStart: "FollowupReceived",
  DeliverLive: "FollowupReceived",
  NewExecution: "FollowupContinuation",
  DebugSession: "DebugFollowup"
}

const followup = (
  run: RunSnapshot,
  event: Extract<RunEvent, { readonly _tag: "FollowupReceived" | "FollowupContinuation" | "DebugFollowup" }>,
  now: number
): Result => {
  const decided = decideFollowup(run, event.message, now)
  if (Either.isLeft(decided)) return reject(run, event, "Refused", decided.left.message, decided.left)
  const route = decided.right
  if (followupMatches[route._tag] !== event._tag) {
    return reject(run, event, "Misrouted", `a follow-up to a ${run.state} run is routed ${route._tag}`)
  }
  switch (route._tag) {
    case "StoreForStart":
    case "DeliverLive":
      return move(run, event, run, ["followup_received"])
    case "NewExecution":
      return move(
        run,
        event,
        {
          ...run,
          state: "QUEUED",
          attempt: 1,
          execution_count: route.executionCount,
          status_message: undefined,
          lease: undefined,
          sandbox_retained: false,
          debug_session_started: false
        },
        ["followup_received", "run_queued"]
      )
    case "DebugSession":
      return move(
        run,
        event,
        { ...run, debug_session_started: true },
        run.debug_session_started === true ? ["followup_received"] : ["followup_received", "debug_session_started"]
      )
  }
}

/** Apply `event` to `run` at `now` (epoch millis): the move, or why it was rejected. */
export const transition = (run: RunSnapshot, event: RunEvent, now: number): Result => {
  switch (event._tag) {
    case "Cancel": {
      const decided = decideCancel(run)
      if (Either.isLeft(decided)) return reject(run, event, "Refused", decided.left.message, decided.left)
      return move(run, event, end(run, "CANCELLED", status("cancelled by request")), ["run_cancelled"])
    }
    case "FollowupReceived":
    case "FollowupContinuation":
    case "DebugFollowup":
      return followup(run, event, now)
  }
  if (!isAllowed(run.state, event._tag)) {
    return reject(run, event, "NotAllowed", `${event._tag} is not allowed when the run is ${run.state}`)
  }
  switch (event._tag) {
    case "Admit":
      return event.atCapacity ? move(run, event, run, []) : move(run, event, { ...run, state: "QUEUED" }, ["run_queued"])
    case "CapacityFreed":
      return move(run, event, { ...run, state: "QUEUED" }, ["run_queued"])
    case "Claim":
      if (event.leaseExpiresAt <= now) return reject(run, event, "InvalidLease", "the lease must end after now")
      return move(
        run,
        event,
        { ...run, state: "CLAIMED", lease: { execution_id: event.executionId, expires_at: event.leaseExpiresAt } },
        ["run_claimed"]
      )
    case "LeaseRenewed":
      return (
        checkLease(run, event, event.executionId, now) ??
        (event.leaseExpiresAt <= now
          ? reject(run, event, "InvalidLease", "the lease must end after now")
          : move(run, event, { ...run, lease: { execution_id: event.executionId, expires_at: event.leaseExpiresAt } }, []))
      )
    case "EnvironmentSetupStarted":
      return checkLease(run, event, event.executionId, now) ?? move(run, event, run, ["environment_setup_started"])
    case "EnvironmentSetupSucceeded":
      return checkLease(run, event, event.executionId, now) ?? move(run, event, run, ["environment_setup_succeeded"])
    case "EnvironmentSetupFailed": {
      const rejected = checkLease(run, event, event.executionId, now)
      if (rejected !== undefined) return rejected
      const retention = event.retentionMillis ?? 0
      const retain = retention > 0
      const failed: RunStatusSnapshot = {
        ...status(event.message, "environment_setup_failed"),
        ...(retain ? { session_debug_until: now + retention } : {})
      }
      return move(run, event, { ...end(run, "FAILED", failed), sandbox_retained: retain, debug_session_started: false }, [
        "environment_setup_failed",
        "run_failed"
      ])
    }
    case "Start":
      return (
        checkLease(run, event, event.executionId, now) ??
        move(run, event, { ...run, state: "INPROGRESS", has_conversation: true }, ["run_in_progress"])
      )
    case "Succeed":
      return (
        checkLease(run, event, event.executionId, now) ??
        move(run, event, end(run, "SUCCEEDED", event.message === undefined ? undefined : status(event.message)), [
          "run_succeeded"
        ])
      )
    case "Fail":
      return (
        checkLease(run, event, event.executionId, now) ??
        move(run, event, end(run, "FAILED", status(event.message, event.errorCode)), ["run_failed"])
      )
    case "Block":
      return (
        checkLease(run, event, event.executionId, now) ??
        move(run, event, end(run, "BLOCKED", status(event.message)), ["run_blocked"])
      )
    case "WorkerAbsent":
      return run.worker_host === undefined || run.worker_host === ""
        ? reject(run, event, "Refused", "the run does not wait for a self-hosted worker")
        : move(run, event, end(run, "FAILED", status(event.message, "resource_unavailable")), ["run_failed"])
    case "Error":
      return (
        (event.executionId === undefined ? undefined : checkLease(run, event, event.executionId, now)) ??
        move(run, event, end(run, "ERROR", status(event.message, event.errorCode)), ["run_errored"])
      )
    case "LeaseExpired": {
      if (run.lease === undefined || run.lease.execution_id !== event.executionId) {
        return reject(run, event, "StaleExecution", `execution ${event.executionId} does not hold the run`)
      }
      if (now < run.lease.expires_at) {
        return reject(run, event, "LeaseStillValid", `the lease of execution ${event.executionId} has not expired`)
      }
      if (run.attempt >= MAX_ATTEMPTS) {
        const lost = status(`the executor was lost ${MAX_ATTEMPTS} times; giving up`, "resource_unavailable")
        return move(run, event, end(run, "ERROR", lost), ["lease_expired", "run_errored"])
      }
      return move(run, event, { ...run, state: "QUEUED", attempt: run.attempt + 1, lease: undefined }, [
        "lease_expired",
        "requeued"
      ])
    }
    case "HandOver": {
      const refused = checkLease(run, event, event.executionId, now)
      if (refused !== undefined) return refused
      if (event.earlier < MAX_FREE_HANDOVERS) {
        return move(run, event, { ...run, state: "QUEUED", lease: undefined }, ["handed_over", "requeued"])
      }
      if (run.attempt >= MAX_ATTEMPTS) {
        const lost = status(`handed over ${event.earlier + 1} times and lost ${MAX_ATTEMPTS} times; giving up`, "resource_unavailable")
        return move(run, event, end(run, "ERROR", lost), ["handed_over", "run_errored"])
      }
      return move(run, event, { ...run, state: "QUEUED", attempt: run.attempt + 1, lease: undefined }, ["handed_over", "requeued"])
    }
    case "SandboxReleased":
      return move(run, event, { ...run, sandbox_retained: false }, [])
  }
}
