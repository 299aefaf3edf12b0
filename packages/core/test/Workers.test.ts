import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Either } from "effect"
import * as fc from "fast-check"
import type { ExecutionId, TeamUid } from "../src/Ids.js"
import type { NewTimelineEvent, StoredRun } from "../src/ports/RunStore.js"
import { RunItem } from "../src/Run.js"
import type { RunState } from "../src/RunState.js"
import { TimelineEventType } from "../src/Timeline.js"
import { acceptWorkerWrite, holds, isWorkersRun } from "../src/Workers.js"

const HOLDER = "01a208ee-b8be-7a20-a79a-f1c93d6c2eee" as ExecutionId
const OTHER = "01a208ee-b920-7839-9fb9-bc08cd6c7240" as ExecutionId
const TEAM = "AAAAAAAAAAAAAAAAAAAAAA" as TeamUid

const WRITABLE: ReadonlyArray<RunState> = ["CLAIMED", "INPROGRESS", "SUCCEEDED", "FAILED", "BLOCKED", "ERROR"]
const WORKER_EVENTS = [
  "environment_setup_started",
  "environment_setup_succeeded",
  "environment_setup_failed",
  "run_in_progress",
  "run_succeeded",
  "run_failed",
  "run_blocked",
  "run_errored"
] as const

const item = Arbitrary.make(RunItem)

/** A run held by HOLDER (CLAIMED or INPROGRESS) for worker "w1" of TEAM. */
const current = fc.tuple(item, fc.constantFrom<RunState>("CLAIMED", "INPROGRESS"), fc.integer({ min: 0, max: 1e12 }), fc.boolean())
  .map(([i, state, expires, conversation]): StoredRun => ({
    item: new RunItem({ ...i, state, agent_config: { ...i.agent_config, worker_host: "w1" } }),
    team_uid: TEAM,
    lease: { execution_id: HOLDER, expires_at: expires },
    at_capacity: false,
    sandbox_retained: false,
    has_conversation: conversation
  }))

/** What a worker proposes: any item in a writable state, the lease kept or released. */
const proposal = fc.tuple(item, fc.constantFrom(...WRITABLE), fc.boolean(), fc.boolean(), fc.boolean())
  .map(([i, state, keep, retained, conversation]): StoredRun => ({
    item: new RunItem({ ...i, state }),
    team_uid: "BBBBBBBBBBBBBBBBBBBBBB" as TeamUid,
    lease: keep ? { execution_id: HOLDER, expires_at: 1 } : null,
    at_capacity: true,
    sandbox_retained: retained,
    has_conversation: conversation
  }))

const events = fc.array(
  fc.record({ event_type: fc.constantFrom(...WORKER_EVENTS), occurred_at: fc.nat() }).map((e): NewTimelineEvent => ({ ...e, execution_id: HOLDER })),
  { maxLength: 4 }
)

const ended = (state: RunState) => state !== "CLAIMED" && state !== "INPROGRESS"

describe("acceptWorkerWrite", () => {
  it.prop("an accepted write changes only what an executor writes; the rest stays the server's", [current, proposal, events], ([run, next, evs]) => {
    const accepted = acceptWorkerWrite(run, { state: run.item.state, execution_id: HOLDER }, next, evs)
    if (!ended(next.item.state) && next.lease === null) {
      expect(Either.isLeft(accepted)).toBe(true)
      return
    }
    const written = Either.getOrThrow(accepted).run
    expect(written.item.state).toBe(next.item.state)
    expect(written.item.status_message).toEqual(next.item.status_message)
    expect(written.item.request_usage).toEqual(next.item.request_usage)
    for (const field of ["run_id", "prompt", "title", "agent_config", "creator", "executor", "metadata", "attempt", "execution_count", "artifacts", "scope", "created_at", "source", "environment_id"] as const) {
      expect(written.item[field]).toEqual(run.item[field])
    }
    expect(written.team_uid).toBe(run.team_uid)
    expect(written.at_capacity).toBe(run.at_capacity)
    expect(written.sandbox_retained).toBe(false)
    // The lease: released when the run ended, else kept with the server's expiry.
    expect(written.lease).toEqual(ended(next.item.state) ? null : run.lease)
    expect(written.has_conversation).toBe(run.has_conversation || next.has_conversation)
  })

  it.prop("a write by an execution that does not hold the run, or with a stale state, is refused", [current, proposal, events, fc.boolean()], ([run, next, evs, otherExecution]) => {
    const guard = otherExecution
      ? { state: run.item.state, execution_id: OTHER }
      : { state: (run.item.state === "CLAIMED" ? "INPROGRESS" : "CLAIMED") as RunState, execution_id: HOLDER }
    expect(Either.isLeft(acceptWorkerWrite(run, guard, next, evs))).toBe(true)
    // A run that ended or was requeued is held by nobody.
    for (const state of ["QUEUED", "SUCCEEDED", "CANCELLED", "ERROR"] as const) {
      const moved: StoredRun = { ...run, lease: null, item: new RunItem({ ...run.item, state }) }
      expect(Either.isLeft(acceptWorkerWrite(moved, { state, execution_id: HOLDER }, next, evs))).toBe(true)
    }
  })

  it.prop(
    "events that are not an executor's, or of another execution, are refused",
    [current, proposal, fc.constantFrom(...TimelineEventType.literals), fc.boolean()],
    ([run, next, type, otherExecution]) => {
      const evs: Array<NewTimelineEvent> = [{ event_type: type, occurred_at: 0, execution_id: otherExecution ? OTHER : HOLDER }]
      const kept: StoredRun = { ...next, lease: { execution_id: HOLDER, expires_at: 1 } }
      const accepted = acceptWorkerWrite(run, { state: run.item.state, execution_id: HOLDER }, kept, evs)
      const allowed = !otherExecution && (WORKER_EVENTS as ReadonlyArray<string>).includes(type)
      expect(Either.isRight(accepted)).toBe(allowed)
    }
  )

  it("a lease cannot be handed to another execution, nor a run moved to QUEUED or CANCELLED", () => {
    fc.assert(fc.property(current, proposal, (run, next) => {
      const guard = { state: run.item.state, execution_id: HOLDER }
      expect(Either.isLeft(acceptWorkerWrite(run, guard, { ...next, lease: { execution_id: OTHER, expires_at: 1 } }, []))).toBe(true)
      for (const state of ["QUEUED", "CANCELLED", "PENDING"] as const) {
        expect(Either.isLeft(acceptWorkerWrite(run, guard, { ...next, item: new RunItem({ ...next.item, state }) }, []))).toBe(true)
      }
    }))
  })

  it("a worker's runs are those of its team addressed to its id; an execution holds a run under its lease only", () => {
    fc.assert(fc.property(current, (run) => {
      expect(isWorkersRun(run, { team_uid: TEAM, worker_id: "w1" })).toBe(true)
      expect(isWorkersRun(run, { team_uid: TEAM, worker_id: "w2" })).toBe(false)
      expect(isWorkersRun(run, { team_uid: "CCCCCCCCCCCCCCCCCCCCCC" as TeamUid, worker_id: "w1" })).toBe(false)
      expect(holds(run, HOLDER)).toBe(true)
      expect(holds(run, OTHER)).toBe(false)
    }))
  })
})
