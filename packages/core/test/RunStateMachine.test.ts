import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as fc from "fast-check"
import { RunErrorCode } from "../src/domain/Errors.js"
import { MAX_ATTEMPTS, RunExecutionLocation, RunSourceType, RunState, TerminalRunStates } from "../src/domain/RunState.js"
import {
  CreationTimeline,
  decideCancel,
  decideFollowup,
  followupEvent,
  isAllowed,
  isDebugWindowOpen,
  isRunTypeCancellable,
  newRunSnapshot,
  RunEvent,
  transition,
  TransitionTable
} from "../src/domain/RunStateMachine.js"
import type { Rejection, RunEventTag, RunSnapshot, Transition } from "../src/domain/RunStateMachine.js"

const T0 = 1_700_000_000_000
const MINUTE = 60_000
const RETENTION = 30 * MINUTE
const ENDED: ReadonlyArray<RunState> = ["SUCCEEDED", "FAILED", "BLOCKED", "ERROR", "CANCELLED"]

type Result = Either.Either<Transition, Rejection>

const ok = (result: Result): Transition =>
  Either.getOrThrowWith(result, (rejection) => new Error(`rejected ${rejection.event}: ${rejection.reason} (${rejection.message})`))

const rejected = (result: Result): Rejection =>
  Either.match(result, {
    onLeft: (rejection) => rejection,
    onRight: (t) => {
      throw new Error(`expected a rejection, got ${t.from} -${t.event}-> ${t.to}`)
    }
  })

const apiRun = (overrides: Partial<RunSnapshot> = {}): RunSnapshot => ({
  ...newRunSnapshot({ execution_location: "REMOTE", source: "API" }),
  ...overrides
})

/** Apply events in order at `now`, failing the test on any rejection. */
const apply = (run: RunSnapshot, now: number, ...events: ReadonlyArray<RunEvent>): RunSnapshot =>
  events.reduce((current, event) => ok(transition(current, event, now)).run, run)

const queued = (run: RunSnapshot = apiRun()) => apply(run, T0, RunEvent.Admit({ atCapacity: false }))
const claimed = (run: RunSnapshot = apiRun(), executionId = "exec-1") =>
  apply(queued(run), T0, RunEvent.Claim({ executionId, leaseExpiresAt: T0 + MINUTE }))
const inProgress = (run: RunSnapshot = apiRun()) => apply(claimed(run), T0, RunEvent.Start({ executionId: "exec-1" }))
const setupFailed = (retentionMillis?: number) =>
  apply(
    claimed(),
    T0,
    RunEvent.EnvironmentSetupFailed({ executionId: "exec-1", message: "npm ci exited with 1", retentionMillis })
  )

/** One run in each state, reached through the machine where it can be. */
const runIn = (state: RunState): RunSnapshot => {
  switch (state) {
    case "PENDING":
      return apiRun()
    case "QUEUED":
      return queued()
    case "CLAIMED":
      return claimed()
    case "INPROGRESS":
      return inProgress()
    case "SUCCEEDED":
      return apply(inProgress(), T0, RunEvent.Succeed({ executionId: "exec-1" }))
    case "FAILED":
      return apply(inProgress(), T0, RunEvent.Fail({ executionId: "exec-1", errorCode: "agent_failed", message: "x" }))
    case "BLOCKED":
      return apply(inProgress(), T0, RunEvent.Block({ executionId: "exec-1", message: "which branch?" }))
    case "ERROR":
      return apply(inProgress(), T0, RunEvent.Error({ errorCode: "internal_error", message: "storage" }))
    case "CANCELLED":
      return apply(inProgress(), T0, RunEvent.Cancel())
  }
}

// ---------------------------------------------------------------------------------------------
// Random event sequences

const ALL_EVENT_TAGS = [
  "WorkerAbsent",
  "Admit",
  "CapacityFreed",
  "Claim",
  "LeaseRenewed",
  "EnvironmentSetupStarted",
  "EnvironmentSetupSucceeded",
  "EnvironmentSetupFailed",
  "Start",
  "Succeed",
  "Fail",
  "Block",
  "Error",
  "LeaseExpired",
  "HandOver",
  "Cancel",
  "FollowupReceived",
  "FollowupContinuation",
  "DebugFollowup",
  "SandboxReleased"
] as const satisfies ReadonlyArray<RunEventTag>

type StepTag = RunEventTag | "RoutedFollowup"

interface Step {
  /** Guided steps pick among the events a user would expect next in the run's state (`pick`). */
  readonly guided: boolean
  readonly pick: number
  readonly tag: StepTag
  readonly current: boolean
  readonly leaseFor: number
  readonly advance: number
  readonly atCapacity: boolean
  readonly errorCode: RunErrorCode
  readonly message: string
  readonly retention: number | undefined
}

/** Steps weighted towards progress, so sequences reach every state, expire leases and continue runs. */
const arbStep: fc.Arbitrary<Step> = fc.record({
  guided: fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  pick: fc.nat(),
  tag: fc.oneof(
    {
      weight: 8,
      arbitrary: fc.constantFrom<StepTag>(
        "Admit",
        "CapacityFreed",
        "Claim",
        "LeaseRenewed",
        "EnvironmentSetupStarted",
        "EnvironmentSetupSucceeded",
        "Start",
        "LeaseExpired"
      )
    },
    {
      weight: 3,
      arbitrary: fc.constantFrom<StepTag>("Succeed", "Fail", "Block", "Error", "Cancel", "EnvironmentSetupFailed")
    },
    { weight: 3, arbitrary: fc.constant<StepTag>("RoutedFollowup") },
    {
      weight: 1,
      arbitrary: fc.constantFrom<StepTag>("FollowupReceived", "FollowupContinuation", "DebugFollowup", "SandboxReleased")
    }
  ),
  current: fc.oneof({ weight: 8, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  leaseFor: fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 1, max: 3 * MINUTE }) },
    { weight: 1, arbitrary: fc.integer({ min: -MINUTE, max: 0 }) }
  ),
  advance: fc.oneof(
    { weight: 4, arbitrary: fc.integer({ min: 0, max: 20_000 }) },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: 40 * MINUTE }) }
  ),
  atCapacity: fc.boolean(),
  errorCode: fc.constantFrom(...RunErrorCode.literals),
  message: fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom("please also add tests", "continue") },
    { weight: 1, arbitrary: fc.constantFrom("", " \n\t") }
  ),
  retention: fc.oneof(
    { weight: 3, arbitrary: fc.integer({ min: 1, max: 30 * MINUTE }) },
    { weight: 1, arbitrary: fc.constantFrom(undefined, 0) }
  )
})

/** What a user would expect to happen next in each state (written apart from the module's table). */
const LIKELY_NEXT: Record<RunState, ReadonlyArray<StepTag>> = {
  PENDING: ["Admit", "CapacityFreed", "RoutedFollowup"],
  QUEUED: ["Claim", "Claim", "Cancel", "RoutedFollowup"],
  CLAIMED: ["EnvironmentSetupStarted", "EnvironmentSetupSucceeded", "Start", "Start", "LeaseRenewed", "LeaseExpired", "EnvironmentSetupFailed", "Fail", "Cancel", "HandOver"],
  INPROGRESS: ["Succeed", "Fail", "Block", "Error", "LeaseRenewed", "LeaseExpired", "LeaseExpired", "RoutedFollowup", "Cancel", "HandOver"],
  SUCCEEDED: ["RoutedFollowup", "SandboxReleased"],
  FAILED: ["RoutedFollowup", "RoutedFollowup", "SandboxReleased"],
  BLOCKED: ["RoutedFollowup", "SandboxReleased"],
  ERROR: ["RoutedFollowup", "SandboxReleased"],
  CANCELLED: ["RoutedFollowup", "SandboxReleased"]
}

/** The event a step stands for, given the run it is applied to (so executor events can hold the lease). */
const toEvent = (run: RunSnapshot, step: Step, now: number, n: number): RunEvent => {
  const executionId = step.current ? (run.lease?.execution_id ?? `exec-${n}`) : "exec-intruder"
  const likely = LIKELY_NEXT[run.state]
  const tag = step.guided ? (likely[step.pick % likely.length] ?? step.tag) : step.tag
  switch (tag) {
    case "Admit":
      return RunEvent.Admit({ atCapacity: step.atCapacity })
    case "CapacityFreed":
      return RunEvent.CapacityFreed()
    case "Claim":
      return RunEvent.Claim({ executionId: `exec-${n}`, leaseExpiresAt: now + step.leaseFor })
    case "LeaseRenewed":
      return RunEvent.LeaseRenewed({ executionId, leaseExpiresAt: now + step.leaseFor })
    case "EnvironmentSetupStarted":
      return RunEvent.EnvironmentSetupStarted({ executionId })
    case "EnvironmentSetupSucceeded":
      return RunEvent.EnvironmentSetupSucceeded({ executionId })
    case "EnvironmentSetupFailed":
      return RunEvent.EnvironmentSetupFailed({ executionId, message: "setup failed", retentionMillis: step.retention })
    case "Start":
      return RunEvent.Start({ executionId })
    case "Succeed":
      return RunEvent.Succeed({ executionId, message: step.message })
    case "Fail":
      return RunEvent.Fail({ executionId, errorCode: step.errorCode, message: "agent exited 1" })
    case "Block":
      return RunEvent.Block({ executionId, message: "needs input" })
    case "Error":
      return RunEvent.Error({ executionId: step.current ? undefined : executionId, errorCode: step.errorCode, message: "x" })
    case "LeaseExpired":
      return RunEvent.LeaseExpired({ executionId })
    case "HandOver":
      return RunEvent.HandOver({ executionId, earlier: step.pick % 5 })
    case "Cancel":
      return RunEvent.Cancel()
    case "WorkerAbsent":
      return RunEvent.WorkerAbsent({ message: "the worker stayed away" })
    case "FollowupReceived":
      return RunEvent.FollowupReceived({ message: step.message })
    case "FollowupContinuation":
      return RunEvent.FollowupContinuation({ message: step.message })
    case "DebugFollowup":
      return RunEvent.DebugFollowup({ message: step.message })
    case "SandboxReleased":
      return RunEvent.SandboxReleased()
    case "RoutedFollowup":
      return Either.match(decideFollowup(run, step.message, now), {
        onLeft: () => RunEvent.FollowupReceived({ message: step.message }),
        onRight: (route) => followupEvent(route, step.message)
      })
  }
}

const arbFacts = fc.record({
  execution_location: fc.constantFrom(...RunExecutionLocation.literals),
  source: fc.constantFrom(...RunSourceType.literals),
  worker_host: fc.constantFrom(undefined, "", "gpu-box"),
  has_conversation: fc.boolean()
})

interface Applied {
  readonly before: RunSnapshot
  readonly event: RunEvent
  readonly now: number
  readonly result: Result
}

/** Run a random sequence from a freshly created run; every result, accepted or not. */
const runSequence = (facts: Parameters<typeof newRunSnapshot>[0], steps: ReadonlyArray<Step>) => {
  let run = newRunSnapshot(facts)
  let now = T0
  const applied: Array<Applied> = []
  steps.forEach((step, n) => {
    now += step.advance
    const event = toEvent(run, step, now, n)
    const result = transition(run, event, now)
    applied.push({ before: run, event, now, result })
    if (Either.isRight(result)) run = result.right.run
  })
  return { applied, last: run }
}

const arbSequence = fc.tuple(arbFacts, fc.array(arbStep, { minLength: 1, maxLength: 80, size: "max" }))

const arbSnapshot: fc.Arbitrary<RunSnapshot> = fc.record({
  state: fc.constantFrom(...RunState.literals),
  attempt: fc.integer({ min: 1, max: MAX_ATTEMPTS }),
  execution_count: fc.integer({ min: 1, max: 5 }),
  status_message: fc.option(
    fc.record({
      message: fc.string(),
      error_code: fc.option(fc.constantFrom(...RunErrorCode.literals), { nil: undefined }),
      retryable: fc.boolean(),
      session_debug_until: fc.option(fc.integer({ min: T0 - 10 * MINUTE, max: T0 + 60 * MINUTE }), { nil: undefined })
    }),
    { nil: undefined }
  ),
  lease: fc.option(
    fc.record({
      execution_id: fc.constantFrom("exec-1", "exec-2"),
      expires_at: fc.integer({ min: T0 - MINUTE, max: T0 + MINUTE })
    }),
    { nil: undefined }
  ),
  has_conversation: fc.boolean(),
  sandbox_retained: fc.boolean(),
  debug_session_started: fc.boolean(),
  worker_host: fc.constantFrom(undefined, "", "gpu-box"),
  execution_location: fc.constantFrom(...RunExecutionLocation.literals),
  source: fc.constantFrom(...RunSourceType.literals)
})

const PROPS = { fastCheck: { numRuns: 200 } }

// ---------------------------------------------------------------------------------------------

describe("RunStateMachine", () => {
  describe("lifecycle", () => {
    it("a created run is PENDING at attempt 1 of execution 1", () => {
      const run = newRunSnapshot({ execution_location: "REMOTE", source: "CLI", worker_host: "box" })
      expect(run).toMatchObject({ state: "PENDING", attempt: 1, execution_count: 1, worker_host: "box" })
      expect(CreationTimeline).toEqual(["run_created", "run_pending"])
    })

    it("goes PENDING → QUEUED → CLAIMED → INPROGRESS → SUCCEEDED, recording the timeline", () => {
      const steps: Array<[RunEvent, number]> = [
        [RunEvent.Admit({ atCapacity: false }), T0],
        [RunEvent.Claim({ executionId: "e1", leaseExpiresAt: T0 + MINUTE }), T0 + 1],
        [RunEvent.EnvironmentSetupStarted({ executionId: "e1" }), T0 + 2],
        [RunEvent.EnvironmentSetupSucceeded({ executionId: "e1" }), T0 + 3],
        [RunEvent.Start({ executionId: "e1" }), T0 + 4],
        [RunEvent.LeaseRenewed({ executionId: "e1", leaseExpiresAt: T0 + 5 * MINUTE }), T0 + 50_000],
        [RunEvent.Succeed({ executionId: "e1", message: "opened a PR" }), T0 + 2 * MINUTE]
      ]
      let run = apiRun()
      const seen: Array<string> = []
      for (const [event, now] of steps) {
        const t = ok(transition(run, event, now))
        seen.push(`${t.from}->${t.to}:${t.timeline.join(",")}`)
        run = t.run
      }
      expect(seen).toEqual([
        "PENDING->QUEUED:run_queued",
        "QUEUED->CLAIMED:run_claimed",
        "CLAIMED->CLAIMED:environment_setup_started",
        "CLAIMED->CLAIMED:environment_setup_succeeded",
        "CLAIMED->INPROGRESS:run_in_progress",
        "INPROGRESS->INPROGRESS:",
        "INPROGRESS->SUCCEEDED:run_succeeded"
      ])
      expect(run).toMatchObject({ state: "SUCCEEDED", attempt: 1, has_conversation: true, lease: undefined })
      expect(run.status_message).toEqual({ message: "opened a PR", retryable: false })
    })

    it("a run admitted at capacity stays PENDING until capacity frees", () => {
      const t = ok(transition(apiRun(), RunEvent.Admit({ atCapacity: true }), T0))
      expect([t.to, t.timeline]).toEqual(["PENDING", []])
      const freed = ok(transition(t.run, RunEvent.CapacityFreed(), T0 + 1))
      expect([freed.to, freed.timeline]).toEqual(["QUEUED", ["run_queued"]])
      expect(rejected(transition(freed.run, RunEvent.CapacityFreed(), T0 + 2)).reason).toBe("NotAllowed")
    })

    it("agent failure, block and service error end the run with their status message", () => {
      const failed = ok(
        transition(inProgress(), RunEvent.Fail({ executionId: "exec-1", errorCode: "budget_exceeded", message: "over" }), T0)
      )
      expect(failed.run.status_message).toEqual({ message: "over", error_code: "budget_exceeded", retryable: false })
      expect(failed.timeline).toEqual(["run_failed"])
      const blocked = ok(transition(inProgress(), RunEvent.Block({ executionId: "exec-1", message: "which repo?" }), T0))
      expect([blocked.to, blocked.run.status_message?.message]).toEqual(["BLOCKED", "which repo?"])
      const errored = ok(transition(queued(), RunEvent.Error({ errorCode: "internal_error", message: "db" }), T0))
      expect(errored.run.status_message).toEqual({ message: "db", error_code: "internal_error", retryable: true })
      expect(errored.timeline).toEqual(["run_errored"])
      const startFailed = ok(
        transition(claimed(), RunEvent.Fail({ executionId: "exec-1", errorCode: "agent_failed", message: "no binary" }), T0)
      )
      expect([startFailed.to, startFailed.run.lease]).toEqual(["FAILED", undefined])
      const plainSuccess = ok(transition(inProgress(), RunEvent.Succeed({ executionId: "exec-1" }), T0))
      expect(plainSuccess.run.status_message).toBeUndefined()
    })

    it("a setup failure with a retention keeps the sandbox and opens a debug window", () => {
      const t = ok(
        transition(
          claimed(),
          RunEvent.EnvironmentSetupFailed({ executionId: "exec-1", message: "apt failed", retentionMillis: RETENTION }),
          T0 + 10
        )
      )
      expect(t.timeline).toEqual(["environment_setup_failed", "run_failed"])
      expect(t.run).toMatchObject({ state: "FAILED", sandbox_retained: true, lease: undefined })
      expect(t.run.status_message).toEqual({
        message: "apt failed",
        error_code: "environment_setup_failed",
        retryable: false,
        session_debug_until: T0 + 10 + RETENTION
      })
      for (const retention of [undefined, 0]) {
        const none = setupFailed(retention)
        expect(none.sandbox_retained).toBe(false)
        expect(none.status_message?.session_debug_until).toBeUndefined()
      }
    })

    it("rejects executor events of another execution or after the lease ended", () => {
      const run = claimed()
      const stale = rejected(transition(run, RunEvent.Start({ executionId: "exec-2" }), T0))
      expect([stale.reason, stale.state, stale.event]).toEqual(["StaleExecution", "CLAIMED", "Start"])
      expect(rejected(transition(run, RunEvent.Start({ executionId: "exec-1" }), T0 + MINUTE)).reason).toBe("LeaseLapsed")
      expect(
        rejected(transition(run, RunEvent.LeaseRenewed({ executionId: "exec-1", leaseExpiresAt: T0 + 2 * MINUTE }), T0 + MINUTE))
          .reason
      ).toBe("LeaseLapsed")
      expect(
        rejected(transition(run, RunEvent.LeaseRenewed({ executionId: "exec-1", leaseExpiresAt: T0 }), T0 + 1)).reason
      ).toBe("InvalidLease")
      expect(
        rejected(transition(run, RunEvent.Error({ executionId: "exec-9", errorCode: "internal_error", message: "x" }), T0))
          .reason
      ).toBe("StaleExecution")
      expect(
        rejected(transition(queued(), RunEvent.Claim({ executionId: "e", leaseExpiresAt: T0 }), T0)).reason
      ).toBe("InvalidLease")
    })

    it("a renewed lease keeps the run past its first expiry", () => {
      const renewed = apply(claimed(), T0 + 30_000, RunEvent.LeaseRenewed({ executionId: "exec-1", leaseExpiresAt: T0 + 3 * MINUTE }))
      expect(renewed.lease).toEqual({ execution_id: "exec-1", expires_at: T0 + 3 * MINUTE })
      expect(rejected(transition(renewed, RunEvent.LeaseExpired({ executionId: "exec-1" }), T0 + 2 * MINUTE)).reason).toBe(
        "LeaseStillValid"
      )
      expect(rejected(transition(renewed, RunEvent.LeaseExpired({ executionId: "exec-0" }), T0 + 9 * MINUTE)).reason).toBe(
        "StaleExecution"
      )
      const started = ok(transition(renewed, RunEvent.Start({ executionId: "exec-1" }), T0 + 2 * MINUTE))
      expect(started.to).toBe("INPROGRESS")
    })

    it("an expired lease requeues the run with the next attempt; the old executor is fenced off", () => {
      const t = ok(transition(inProgress(), RunEvent.LeaseExpired({ executionId: "exec-1" }), T0 + MINUTE))
      expect([t.from, t.to, t.timeline]).toEqual(["INPROGRESS", "QUEUED", ["lease_expired", "requeued"]])
      expect(t.run).toMatchObject({ attempt: 2, execution_count: 1, lease: undefined })
      expect(rejected(transition(t.run, RunEvent.Succeed({ executionId: "exec-1" }), T0 + MINUTE)).reason).toBe("NotAllowed")
      const reclaimed = apply(t.run, T0 + MINUTE, RunEvent.Claim({ executionId: "exec-2", leaseExpiresAt: T0 + 2 * MINUTE }))
      expect(rejected(transition(reclaimed, RunEvent.Start({ executionId: "exec-1" }), T0 + MINUTE)).reason).toBe(
        "StaleExecution"
      )
    })

    it("a run handed over by its lease's holder is requeued at the same attempt; the old executor is fenced off", () => {
      const t = ok(transition(inProgress(), RunEvent.HandOver({ executionId: "exec-1", earlier: 0 }), T0 + 1))
      expect([t.from, t.to, t.timeline]).toEqual(["INPROGRESS", "QUEUED", ["handed_over", "requeued"]])
      expect(t.run).toMatchObject({ attempt: 1, execution_count: 1, lease: undefined })
      expect(rejected(transition(t.run, RunEvent.Succeed({ executionId: "exec-1" }), T0 + 2)).reason).toBe("NotAllowed")
      // Only the holder, while its lease lasts, hands over.
      expect(rejected(transition(inProgress(), RunEvent.HandOver({ executionId: "exec-0", earlier: 0 }), T0 + 1)).reason).toBe(
        "StaleExecution"
      )
      expect(rejected(transition(inProgress(), RunEvent.HandOver({ executionId: "exec-1", earlier: 0 }), T0 + 9 * MINUTE)).reason)
        .toBe("LeaseLapsed")
    })

    it("past three free hand-overs, a hand-over costs an attempt; at the last attempt the run ends ERROR", () => {
      expect(ok(transition(inProgress(), RunEvent.HandOver({ executionId: "exec-1", earlier: 2 }), T0 + 1)).run.attempt).toBe(1)
      const costly = ok(transition(inProgress(), RunEvent.HandOver({ executionId: "exec-1", earlier: 3 }), T0 + 1))
      expect([costly.to, costly.timeline, costly.run.attempt]).toEqual(["QUEUED", ["handed_over", "requeued"], 2])
      const last = ok(transition({ ...inProgress(), attempt: 3 }, RunEvent.HandOver({ executionId: "exec-1", earlier: 5 }), T0 + 1))
      expect([last.to, last.timeline, last.run.status_message?.error_code]).toEqual(["ERROR", ["handed_over", "run_errored"], "resource_unavailable"])
    })

    it("a released sandbox closes the debug window", () => {
      const failed = setupFailed(RETENTION)
      expect(Either.getOrThrow(decideFollowup(failed, "why?", T0 + 2))._tag).toBe("DebugSession")
      const released = ok(transition(failed, RunEvent.SandboxReleased(), T0 + 1))
      expect([released.to, released.timeline, released.run.sandbox_retained]).toEqual(["FAILED", [], false])
      // nothing left to debug and no conversation: the run never started
      expect(Either.isLeft(decideFollowup(released.run, "why?", T0 + 2))).toBe(true)
      // created from a saved conversation: it can be continued instead
      const withConversation = { ...released.run, has_conversation: true }
      expect(Either.getOrThrow(decideFollowup(withConversation, "why?", T0 + 2))._tag).toBe("NewExecution")
    })
  })

  describe("cancel", () => {
    const refusal = (run: RunSnapshot | undefined) =>
      Either.match(decideCancel(run), {
        onLeft: (e) => ({ tag: e._tag, error_code: e.errorCode, retryable: e.retryable, message: e.message }),
        onRight: (stop) => ({ tag: stop._tag, agentRunning: stop.agentRunning, executionId: stop.executionId, message: "" })
      })

    it("404 when the run is unknown or hidden", () => {
      expect(refusal(undefined)).toMatchObject({ tag: "ResourceNotFound", error_code: "resource_not_found", retryable: false })
    })

    it("422 for local and GitHub Action runs, in every state; self-hosted worker runs cancel like any other", () => {
      for (const state of RunState.literals) {
        const base = runIn(state)
        expect(isRunTypeCancellable(base)).toBe(true)
        expect(refusal({ ...base, worker_host: "gpu-box" })).toEqual(refusal(base))
        for (const run of [
          { ...base, execution_location: "LOCAL" as const },
          { ...base, source: "GITHUB_ACTION" as const }
        ]) {
          expect(refusal(run)).toMatchObject({ tag: "OperationNotSupported", error_code: "operation_not_supported", retryable: false })
          expect(isRunTypeCancellable(run)).toBe(false)
        }
      }
      expect(refusal({ ...queued(), execution_location: "LOCAL" }).message).toContain("locally")
      expect(refusal({ ...queued(), source: "GITHUB_ACTION" }).message).toContain("GitHub Action")
    })

    it("400 invalid_request when the run has ended", () => {
      for (const state of ENDED) {
        expect(refusal(runIn(state))).toMatchObject({ tag: "InvalidRequest", error_code: "invalid_request", retryable: false })
        expect(refusal(runIn(state)).message).toContain(state)
      }
    })

    it("409 conflict, retryable, while PENDING", () => {
      expect(refusal(apiRun())).toMatchObject({ tag: "Conflict", error_code: "conflict", retryable: true })
      const rejection = rejected(transition(apiRun(), RunEvent.Cancel(), T0))
      expect([rejection.reason, rejection.error?._tag]).toEqual(["Refused", "Conflict"])
    })

    it("stops a queued run without an agent, and a claimed or running one with its agent", () => {
      expect(refusal(queued())).toEqual({ tag: "StopRun", agentRunning: false, executionId: undefined, message: "" })
      expect(refusal(claimed())).toEqual({ tag: "StopRun", agentRunning: true, executionId: "exec-1", message: "" })
      expect(refusal(inProgress())).toEqual({ tag: "StopRun", agentRunning: true, executionId: "exec-1", message: "" })
      for (const run of [queued(), claimed(), inProgress()]) {
        const t = ok(transition(run, RunEvent.Cancel(), T0 + 5))
        expect([t.to, t.timeline, t.run.lease]).toEqual(["CANCELLED", ["run_cancelled"], undefined])
      }
    })

    it("WorkerAbsent fails a QUEUED run waiting for a self-hosted worker (resource_unavailable), nothing else", () => {
      const waiting = { ...queued(), worker_host: "gpu-box" }
      const moved = Either.getOrThrow(transition(waiting, RunEvent.WorkerAbsent({ message: "gone" }), T0))
      expect(moved).toMatchObject({ from: "QUEUED", to: "FAILED", timeline: ["run_failed"] })
      expect(moved.run.status_message).toMatchObject({ message: "gone", error_code: "resource_unavailable" })
      expect(Either.isLeft(transition(queued(), RunEvent.WorkerAbsent({ message: "gone" }), T0))).toBe(true)
      for (const state of RunState.literals.filter((s) => s !== "QUEUED")) {
        expect(Either.isLeft(transition({ ...runIn(state), worker_host: "gpu-box" }, RunEvent.WorkerAbsent({ message: "gone" }), T0))).toBe(true)
      }
    })

    it("an empty worker_host counts as unset", () => {
      expect(refusal({ ...queued(), worker_host: "" }).tag).toBe("StopRun")
    })

    /** The documented precedence (docs/reference/run-lifecycle.md; self-hosted worker runs cancellable since issue 15), written independently of the module. */
    const oracle = (run: RunSnapshot | undefined): string => {
      if (run === undefined) return "resource_not_found/false"
      if (run.execution_location === "LOCAL" || run.source === "GITHUB_ACTION") {
        return "operation_not_supported/false"
      }
      switch (run.state) {
        case "SUCCEEDED":
        case "FAILED":
        case "BLOCKED":
        case "ERROR":
        case "CANCELLED":
          return "invalid_request/false"
        case "PENDING":
          return "conflict/true"
        case "QUEUED":
          return "stop/idle"
        case "CLAIMED":
        case "INPROGRESS":
          return "stop/running"
      }
    }
    const outcome = (run: RunSnapshot | undefined): string =>
      Either.match(decideCancel(run), {
        onLeft: (e) => `${e.errorCode}/${e.retryable}`,
        onRight: (stop) => `stop/${stop.agentRunning ? "running" : "idle"}`
      })

    it("is total over every state × worker_host × execution_location × source and matches the oracle", () => {
      let combinations = 0
      for (const state of RunState.literals) {
        for (const worker_host of [undefined, "", "gpu-box"]) {
          for (const execution_location of RunExecutionLocation.literals) {
            for (const source of RunSourceType.literals) {
              const run: RunSnapshot = { ...runIn(state), worker_host, execution_location, source }
              expect(outcome(run)).toBe(oracle(run))
              combinations++
            }
          }
        }
      }
      expect(combinations).toBe(9 * 3 * 2 * 10)
    })

    it.prop(
      "matches the oracle on arbitrary snapshots",
      [fc.option(arbSnapshot, { nil: undefined })],
      ([run]) => {
        expect(outcome(run)).toBe(oracle(run))
      },
      PROPS
    )
  })

  describe("follow-up", () => {
    it("is stored for the start while PENDING, QUEUED or CLAIMED", () => {
      for (const run of [apiRun(), queued(), claimed()]) {
        expect(Either.getOrThrow(decideFollowup(run, "also fix the README", T0))._tag).toBe("StoreForStart")
        const t = ok(transition(run, RunEvent.FollowupReceived({ message: "also fix the README" }), T0))
        expect([t.from, t.to, t.timeline]).toEqual([run.state, run.state, ["followup_received"]])
        expect(t.run).toEqual(run)
      }
    })

    it("is delivered live while INPROGRESS", () => {
      expect(Either.getOrThrow(decideFollowup(inProgress(), "stop after tests", T0))._tag).toBe("DeliverLive")
      expect(ok(transition(inProgress(), RunEvent.FollowupReceived({ message: "m" }), T0)).to).toBe("INPROGRESS")
    })

    it("starts a new execution of an ended run", () => {
      for (const state of ENDED) {
        const run = runIn(state)
        expect(Either.getOrThrow(decideFollowup(run, "now the docs", T0))).toEqual(
          expect.objectContaining({ _tag: "NewExecution", executionCount: 2 })
        )
        const t = ok(transition(run, RunEvent.FollowupContinuation({ message: "now the docs" }), T0))
        expect([t.from, t.to, t.timeline]).toEqual([state, "QUEUED", ["followup_received", "run_queued"]])
        expect(t.run).toMatchObject({ execution_count: 2, attempt: 1, status_message: undefined, lease: undefined })
      }
    })

    it("goes to a debug session while a setup failure's window is open, leaving the run FAILED unchanged", () => {
      const run = setupFailed(RETENTION)
      expect([isDebugWindowOpen(run, T0 + MINUTE), isDebugWindowOpen(run, T0 + RETENTION)]).toEqual([true, false])
      const route = Either.getOrThrow(decideFollowup(run, "what failed?", T0 + MINUTE))
      expect(route).toEqual(expect.objectContaining({ _tag: "DebugSession", sessionDebugUntil: T0 + RETENTION }))
      const first = ok(transition(run, followupEvent(route, "what failed?"), T0 + MINUTE))
      expect([first.from, first.to, first.timeline]).toEqual(["FAILED", "FAILED", ["followup_received", "debug_session_started"]])
      expect(first.run.status_message).toEqual(run.status_message)
      expect(first.run.execution_count).toBe(1)
      const second = ok(transition(first.run, RunEvent.DebugFollowup({ message: "try again" }), T0 + 2 * MINUTE))
      expect(second.timeline).toEqual(["followup_received"])
      expect(second.run.status_message).toEqual(run.status_message)
    })

    it("continues normally once the debug window has passed", () => {
      const run = setupFailed(RETENTION)
      const route = Either.getOrThrow(decideFollowup(run, "retry", T0 + RETENTION))
      expect(route._tag).toBe("NewExecution")
      expect(rejected(transition(run, RunEvent.DebugFollowup({ message: "retry" }), T0 + RETENTION)).reason).toBe("Misrouted")
      expect(rejected(transition(run, RunEvent.FollowupContinuation({ message: "retry" }), T0 + 1)).reason).toBe("Misrouted")
    })

    it("400 for a run that never started (no conversation, no sandbox)", () => {
      for (const run of [setupFailed(undefined), apply(queued(), T0, RunEvent.Cancel())]) {
        const refused = Either.flip(decideFollowup(run, "hello", T0))
        expect(Either.getOrThrow(refused)).toMatchObject({ _tag: "InvalidRequest", errorCode: "invalid_request" })
        expect(Either.getOrThrow(refused).message).toContain("never started")
        const rejection = rejected(transition(run, RunEvent.FollowupContinuation({ message: "hello" }), T0))
        expect([rejection.reason, rejection.error?._tag]).toEqual(["Refused", "InvalidRequest"])
      }
    })

    it("accepts an empty message only to continue an ended run with a saved conversation", () => {
      const emptyRefused = (run: RunSnapshot, message: string, now = T0) =>
        Either.getOrThrow(Either.flip(decideFollowup(run, message, now)))
      for (const message of ["", "   ", "\n\t "]) {
        for (const run of [apiRun(), queued(), claimed(), inProgress()]) {
          expect(emptyRefused(run, message)).toMatchObject({ _tag: "InvalidRequest", field: "message" })
          expect(emptyRefused(run, message).message).toMatch(/^message: /)
        }
        expect(Either.getOrThrow(decideFollowup(runIn("SUCCEEDED"), message, T0))._tag).toBe("NewExecution")
        // window open: the debug agent needs a message
        expect(emptyRefused(setupFailed(RETENTION), message, T0 + 1).field).toBe("message")
        // window passed, sandbox kept but no conversation to continue
        expect(emptyRefused(setupFailed(RETENTION), message, T0 + RETENTION).field).toBe("message")
      }
    })

    it("a follow-up event that does not match the route is rejected", () => {
      expect(rejected(transition(inProgress(), RunEvent.FollowupContinuation({ message: "m" }), T0)).reason).toBe("Misrouted")
      expect(rejected(transition(runIn("SUCCEEDED"), RunEvent.FollowupReceived({ message: "m" }), T0)).reason).toBe(
        "Misrouted"
      )
      expect(rejected(transition(queued(), RunEvent.FollowupReceived({ message: "" }), T0)).reason).toBe("Refused")
    })
  })

  describe("properties", () => {
    it("the table lets nothing leave an ended state except a follow-up continuation, and covers every event", () => {
      for (const rule of TransitionTable) {
        if (TerminalRunStates.includes(rule.from) && rule.event !== "FollowupContinuation") expect(rule.to).toBe(rule.from)
      }
      expect(new Set(TransitionTable.map((rule) => rule.event))).toEqual(new Set(ALL_EVENT_TAGS))
      expect(isAllowed("QUEUED", "Start")).toBe(false)
    })

    it.prop(
      "no event leaves an ended state except FollowupContinuation",
      [arbSnapshot, fc.constantFrom(...TerminalRunStates), arbStep, fc.integer({ min: T0 - MINUTE, max: T0 + 2 * MINUTE })],
      ([snapshot, state, step, now]) => {
        const run = { ...snapshot, state }
        const event = toEvent(run, step, now, 0)
        const result = transition(run, event, now)
        if (Either.isRight(result) && event._tag !== "FollowupContinuation") {
          expect(result.right.to).toBe(state)
        }
        if (Either.isRight(result) && event._tag === "FollowupContinuation") expect(result.right.to).toBe("QUEUED")
      },
      PROPS
    )

    it.prop(
      "random event sequences only make moves of the TransitionTable",
      [arbSequence],
      ([[facts, steps]]) => {
        const { applied } = runSequence(facts, steps)
        for (const { before, result } of applied) {
          if (Either.isLeft(result)) {
            expect(result.left.state).toBe(before.state)
            continue
          }
          const t = result.right
          expect(t.from).toBe(before.state)
          expect(t.to).toBe(t.run.state)
          expect(TransitionTable).toContainEqual({ from: t.from, event: t.event, to: t.to })
          if (t.from !== t.to) expect(t.timeline.length).toBeGreaterThan(0)
          if (TerminalRunStates.includes(t.from) && t.event !== "FollowupContinuation") expect(t.to).toBe(t.from)
        }
      },
      PROPS
    )

    it.prop(
      "attempt stays within 1..MAX_ATTEMPTS and only a continuation changes execution_count",
      [arbSequence],
      ([[facts, steps]]) => {
        const { applied } = runSequence(facts, steps)
        for (const { before, result } of applied) {
          if (Either.isLeft(result)) continue
          const { run, event } = result.right
          expect(run.attempt).toBeGreaterThanOrEqual(1)
          expect(run.attempt).toBeLessThanOrEqual(MAX_ATTEMPTS)
          expect(run.execution_count).toBe(before.execution_count + (event === "FollowupContinuation" ? 1 : 0))
          if (event === "FollowupContinuation") expect(run.attempt).toBe(1)
          if (event === "LeaseExpired" && run.state === "QUEUED") expect(run.attempt).toBe(before.attempt + 1)
          expect(run.lease !== undefined).toBe(run.state === "CLAIMED" || run.state === "INPROGRESS")
        }
      },
      PROPS
    )

    it.prop(
      "a lease that expires MAX_ATTEMPTS times ends the run ERROR with resource_unavailable",
      [
        fc.array(
          fc.record({
            leaseFor: fc.integer({ min: 1, max: 10 * MINUTE }),
            started: fc.boolean(),
            late: fc.integer({ min: 0, max: MINUTE })
          }),
          { minLength: MAX_ATTEMPTS, maxLength: MAX_ATTEMPTS }
        )
      ],
      ([claims]) => {
        let run = queued()
        let now = T0
        claims.forEach(({ late, leaseFor, started }, i) => {
          expect([run.state, run.attempt]).toEqual(["QUEUED", i + 1])
          now += 1
          run = apply(run, now, RunEvent.Claim({ executionId: `exec-${i}`, leaseExpiresAt: now + leaseFor }))
          if (started) run = apply(run, now, RunEvent.Start({ executionId: `exec-${i}` }))
          now += leaseFor + late
          const t = ok(transition(run, RunEvent.LeaseExpired({ executionId: `exec-${i}` }), now))
          run = t.run
          if (i < MAX_ATTEMPTS - 1) {
            expect([t.to, t.timeline, run.attempt]).toEqual(["QUEUED", ["lease_expired", "requeued"], i + 2])
          } else {
            expect([t.to, t.timeline, run.attempt]).toEqual(["ERROR", ["lease_expired", "run_errored"], MAX_ATTEMPTS])
            expect(run.status_message).toMatchObject({ error_code: "resource_unavailable", retryable: true })
          }
        })
        expect(rejected(transition(run, RunEvent.Claim({ executionId: "exec-9", leaseExpiresAt: now + 1 }), now)).reason).toBe(
          "NotAllowed"
        )
      },
      PROPS
    )

    const arbEnding = fc.constantFrom("Succeed", "Fail", "Block", "Error", "Cancel", "ExpireOut")

    it.prop(
      "a follow-up continuation increments execution_count and resets attempt",
      [fc.array(fc.record({ expiries: fc.integer({ min: 0, max: MAX_ATTEMPTS - 1 }), ending: arbEnding }), { minLength: 1, maxLength: 5 })],
      ([rounds]) => {
        let run = queued()
        let now = T0
        rounds.forEach(({ ending, expiries }, round) => {
          const claims = ending === "ExpireOut" ? MAX_ATTEMPTS : expiries + 1
          for (let c = 0; c < claims; c++) {
            const id = `exec-${round}-${c}`
            now += 1
            run = apply(run, now, RunEvent.Claim({ executionId: id, leaseExpiresAt: now + MINUTE }), RunEvent.Start({ executionId: id }))
            if (c < claims - 1 || ending === "ExpireOut") {
              now += MINUTE
              run = apply(run, now, RunEvent.LeaseExpired({ executionId: id }))
            }
          }
          const id = `exec-${round}-${claims - 1}`
          const end: RunEvent | undefined =
            ending === "Succeed"
              ? RunEvent.Succeed({ executionId: id })
              : ending === "Fail"
              ? RunEvent.Fail({ executionId: id, errorCode: "agent_failed", message: "tests fail" })
              : ending === "Block"
              ? RunEvent.Block({ executionId: id, message: "?" })
              : ending === "Error"
              ? RunEvent.Error({ errorCode: "internal_error", message: "x" })
              : ending === "Cancel"
              ? RunEvent.Cancel()
              : undefined
          if (end !== undefined) run = apply(run, now, end)
          expect(TerminalRunStates).toContain(run.state)
          const before = run
          const t = ok(transition(run, RunEvent.FollowupContinuation({ message: "next" }), now))
          run = t.run
          expect(t.to).toBe("QUEUED")
          expect(run.execution_count).toBe(before.execution_count + 1)
          expect(run.execution_count).toBe(round + 2)
          expect(run.attempt).toBe(1)
          expect(run.status_message).toBeUndefined()
        })
      },
      PROPS
    )

    it.prop(
      "decideFollowup routes by state and never routes an ended run to the live agent",
      [arbSnapshot, fc.constantFrom("", "  ", "go on"), fc.integer({ min: T0 - MINUTE, max: T0 + 2 * MINUTE })],
      ([run, message, now]) => {
        const routed = decideFollowup(run, message, now)
        if (Either.isLeft(routed)) return
        const tag = routed.right._tag
        if (run.state === "INPROGRESS") expect(tag).toBe("DeliverLive")
        else if (ENDED.includes(run.state)) expect(["NewExecution", "DebugSession"]).toContain(tag)
        else expect(tag).toBe("StoreForStart")
        if (message.trim() === "") expect([tag, run.has_conversation]).toEqual(["NewExecution", true])
        // the recorded event of the route is always accepted
        expect(Either.isRight(transition(run, followupEvent(routed.right, message), now))).toBe(true)
      },
      PROPS
    )
  })
})
