/**
 * Port: what the execution loop (ExecutionLoop.ts) needs from the place that keeps runs: claim a
 * run as an execution plan, keep its lease, record its events and what its agent reported, take
 * its follow-ups, and store its output. Three implementations:
 * - local (LocalHost.ts): the server's own executions, over storage;
 * - remote (`@agent-runs/worker`): a self-hosted worker, over the server's worker endpoints,
 *   which apply the same events through the same code as local (RunExecutions.ts);
 * - in memory (`@agent-runs/core/testing`, MemoryHost.ts): tests of the loop alone.
 *
 * Every operation on a run is the execution's: `Lost` says the execution no longer holds its run
 * (a cancel, a lease taken over), and the execution stops. A `StorageError` is the host failing
 * (storage, or the server out of reach): the loop retries and keeps the agent going.
 */
import type { Effect, Option, Stream } from "effect"
import { Context, Data } from "effect"
import type { Artifact } from "../domain/Artifact.js"
import type { ConversationPart } from "../domain/ConversationLog.js"
import type { ExecutionId, RunId } from "../domain/Ids.js"
import type { Sandbox } from "../ports/Executor.js"
import type { StorageError } from "../ports/Storage.js"
import type { RunState } from "../domain/RunState.js"
import type { ExecutionEvent, Report } from "../domain/ExecutionEvent.js"
import type { ExecutionPlan } from "./ExecutionPlan.js"

/** The execution no longer holds its run: someone else moved it (a cancel, a lease expiry). */
export class Lost extends Data.TaggedError("Lost") {}

/** The run after an execution's events: its state, and whether a failed setup's sandbox is to be kept. */
export interface Recorded {
  readonly state: RunState
  readonly sandbox_retained: boolean
}

/** Where an execution's output goes: its run's transcript, conversation log and artifacts. */
export interface OutputSink {
  /** Appends bytes at `offset` of the transcript (bytes already there are not written again); its size after. */
  readonly appendTranscript: (offset: number, bytes: Uint8Array) => Effect.Effect<number, StorageError>
  /** Stores one numbered part of the execution's conversation log (a stored part again is a no-op). */
  readonly appendConversation: (part: ConversationPart) => Effect.Effect<void, StorageError>
  readonly addArtifact: (artifact: Artifact) => Effect.Effect<void, StorageError>
}

export interface ExecutionHostService {
  /** Hints that runs may be waiting (the loop also polls). */
  readonly wakeups: Stream.Stream<void, StorageError>
  /** Claims a run for a new execution under a lease: its plan, or none when nothing waits. */
  readonly claim: (executionId: ExecutionId) => Effect.Effect<Option.Option<ExecutionPlan>, StorageError>
  /** Extends the execution's lease. */
  readonly renew: (runId: RunId, executionId: ExecutionId) => Effect.Effect<void, Lost | StorageError>
  /**
   * Records the execution's events, in order, at once; with `report`, what the agent reported last
   * too (a host may write both at once: the outcome with the final usage).
   */
  readonly record: (
    runId: RunId,
    executionId: ExecutionId,
    events: ReadonlyArray<ExecutionEvent>,
    report?: Report
  ) => Effect.Effect<Recorded, Lost | StorageError>
  /** Records what the agent reported (session, usage, status). */
  readonly report: (runId: RunId, executionId: ExecutionId, report: Report) => Effect.Effect<void, Lost | StorageError>
  /**
   * What the run's children hold of its budget now (Budget.committedBy), asked after each lease
   * renewal of a run with a cost budget; undefined when the host does not know (the plan's stays).
   */
  readonly childrenHold: (runId: RunId, executionId: ExecutionId) => Effect.Effect<number | undefined, Lost | StorageError>
  /** Takes the follow-ups waiting for the execution's agent, oldest first. */
  readonly followups: (runId: RunId, executionId: ExecutionId) => Effect.Effect<ReadonlyArray<string>, Lost | StorageError>
  /** Where the execution's output goes. */
  readonly output: (runId: RunId, executionId: ExecutionId) => OutputSink
  /**
   * Takes the sandbox of a failed setup whose run keeps it (`Recorded.sandbox_retained`) for its
   * debug window; a host without debug windows releases it.
   */
  readonly retain: (runId: RunId, sandbox: Sandbox) => Effect.Effect<void>
  /**
   * The session files an agent CLI left in the run's earlier execution (CliAgent.ts), for the
   * execution to resume its session; none when none were kept. (A worker's host asks as the
   * execution, which the server checks holds the run.)
   */
  readonly agentState: (runId: RunId, executionId: ExecutionId) => Effect.Effect<Option.Option<Uint8Array>, Lost | StorageError>
  /** Keeps the session files of the execution's agent CLI for the run's next execution. */
  readonly saveAgentState: (runId: RunId, executionId: ExecutionId, state: Uint8Array) => Effect.Effect<void, Lost | StorageError>
  /**
   * Agents kept across a restart (Execution.ts, docs/deployment.md#adopting-agents-across-a-restart):
   * a stopping process leaves an execution's agent running and a note for the next, which takes
   * the execution up again under the same lease. Absent: a host whose executions never outlive
   * their process (a self-hosted worker's).
   */
  readonly adoption?: AdoptionHost | undefined
  /**
   * Said once this process stops executing (after the drain, before the runs it still holds are
   * handed back): a host whose claims wait for runs (a worker's long poll, which a proxy may keep
   * open at the server after the worker gave up on it) then gives this process no more, so that a
   * run handed back is not claimed again for it. A worker's goodbye. Absent: nothing to say.
   */
  readonly departing?: Effect.Effect<void> | undefined
}

/** Keeping an execution going from one process of the service to the next. */
export interface AdoptionHost {
  /** Keeps the note (AdoptionNote.ts) of the execution holding the run, for the next process. */
  readonly keep: (runId: RunId, executionId: ExecutionId, note: Uint8Array) => Effect.Effect<void, Lost | StorageError>
  /**
   * The plan of an execution an earlier process left, with its note, when it still holds its run
   * (its lease renewed) and left one; the note is taken (none for a second try).
   */
  readonly resume: (runId: RunId, executionId: ExecutionId) => Effect.Effect<
    Option.Option<{ readonly plan: ExecutionPlan; readonly note: Uint8Array }>,
    StorageError
  >
}

export class ExecutionHost extends Context.Tag("@agent-runs/core/ExecutionHost")<ExecutionHost, ExecutionHostService>() {}
