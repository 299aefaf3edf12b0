/**
 * Driving one agent process: its output read into the transcript and reduced (Harness.ts) into the
 * execution's state, what changed saved incrementally, its end awaited, and stopping it. Shared by
 * executions (ExecutionLoop.ts) and the debug sessions of retained sandboxes (DebugWindows.ts).
 *
 * - The transcript is appended at known offsets as the output comes; the agent waits (its pipe
 *   fills) while storage fails, so nothing it printed is dropped. Output past the run's limit is
 *   not kept: the state records the violation, and the agent is stopped.
 * - Saving is incremental: the conversation's new operations in numbered parts (ConversationLog.ts),
 *   new artifacts, and for a held run what the agent reported. Nothing counts as saved before
 *   storage confirmed it: after a failed write, the next save writes it again.
 */
import { Clock, Deferred, Duration, Effect, Fiber, Option, Schedule, Stream } from "effect"
import type * as AdoptionNote from "../domain/AdoptionNote.js"
import type { ConversationOp } from "../domain/ConversationLog.js"
import {
  addUsage,
  cancelMessage,
  emptyLineBuffer,
  type ExecutionState,
  flushLines,
  type LineBuffer,
  type LineParser,
  reduce,
  splitLines,
  takeArtifacts,
  takeOps
} from "../domain/Harness.js"
import type { HealthService } from "./Health.js"
import { outage, STORAGE_PATIENCE_MS } from "./Health.js"
import type { AgentProcess } from "../ports/Executor.js"
import type { StorageError } from "../ports/Storage.js"
import type { Report } from "../domain/ExecutionEvent.js"
import type { Lost, OutputSink } from "./ExecutionHost.js"
import { DEFAULT_MAX_OUTPUT_BYTES, type DispatcherSettings } from "./Settings.js"
import * as ToolSpans from "./ToolSpans.js"

/** How long the output of an agent that exited is still read. */
const DRAIN_MS = 2_000

/** About how large a part of a conversation log is at most (one operation may be larger). */
const PART_CHARS = 256 * 1024

/** Whether an execution still holds its run: once it lost it (a cancel, a lost lease), it stops retrying writes. */
export interface Holding {
  lost: boolean
}

/** Where an execution's conversation log stands: the next part's number, the part being written. */
interface ConversationWriter {
  seq: number
  inflight: Array<ConversationOp> | undefined
}

/** An agent's output as it is read and saved. */
export interface Output {
  readonly state: ExecutionState
  readonly sink: OutputSink
  /** Where the transcript ends: the next output's offset. */
  size: number
  /** Bytes of the agent's stdout read so far (where a process adopting it goes on; AdoptionNote.ts). */
  agentBytes: number
  /** The line the agent is writing, not finished yet. */
  buffer: LineBuffer
  /** Whether the reader waits for storage to take a chunk. */
  writing: boolean
  readonly log: ConversationWriter
  /** For an execution holding its run: where its report goes, the usage before it, and the report last written. */
  readonly reports: {
    readonly send: (report: Report) => Effect.Effect<void, Lost | StorageError>
    readonly usage: Report["request_usage"]
    written: string
  } | undefined
}

/** What an execution's state reports, on top of the run's usage before it. */
const reportOf = (state: ExecutionState, usage: Report["request_usage"]): Report => {
  const session = state.session
  return {
    ...(session === undefined ? {} : { session_id: session.session_id, session_link: session.session_link }),
    request_usage: state.usage === undefined ? usage : addUsage(usage, state.usage),
    ...(state.status === undefined ? {} : { status: state.status })
  }
}

/** The report of a held run's output, with its JSON, when it differs from the one last sent. */
const unsentReport = (out: Output): { readonly report: Report; readonly json: string } | undefined => {
  if (out.reports === undefined) return undefined
  const report = reportOf(out.state, out.reports.usage)
  const json = JSON.stringify(report)
  return json === out.reports.written ? undefined : { report, json }
}

/** Where a held run's report goes, and the run's usage before the execution. */
interface Reports {
  readonly send: (report: Report) => Effect.Effect<void, Lost | StorageError>
  readonly usage: Report["request_usage"]
}

/** A new output record for an execution's state. */
export const output = (state: ExecutionState, sink: OutputSink, size: number, reports?: Reports): Output => ({
  state,
  sink,
  size,
  agentBytes: 0,
  buffer: emptyLineBuffer,
  writing: false,
  log: { seq: 1, inflight: undefined },
  // What the state reports before the agent said anything is what the run has stored: not sent.
  reports: reports === undefined ? undefined : { ...reports, written: JSON.stringify(reportOf(state, reports.usage)) }
})

/** The output record of an adopted agent, as the process that left it left it (AdoptionNote.ts). */
export const adoptedOutput = (adoption: AdoptionNote.Adoption, sink: OutputSink, send: Reports["send"]): Output => ({
  state: adoption.state,
  sink,
  size: adoption.transcript_bytes,
  agentBytes: adoption.offset,
  buffer: adoption.buffer,
  writing: false,
  log: { seq: adoption.conversation_seq, inflight: undefined },
  reports: { send, usage: adoption.usage_before, written: adoption.report_written }
})

/** What the next process needs to adopt the agent of a held run's output, once all of it is saved. */
export const adoptionOf = (out: Output, startedAt: number): AdoptionNote.Adoption | undefined =>
  out.reports === undefined || out.log.inflight !== undefined || out.state.pending.length > 0 || out.state.artifacts.length > 0
    ? undefined
    : {
      offset: out.agentBytes,
      transcript_bytes: out.size,
      buffer: out.buffer,
      state: out.state,
      usage_before: out.reports.usage,
      report_written: out.reports.written,
      conversation_seq: out.log.seq,
      started_at: startedAt
    }

export const make = (settings: DispatcherSettings, health: HealthService) => {
  /**
   * Retries a write while storage fails (reported to `Health`), backing off up to 5 s, for
   * `STORAGE_PATIENCE_MS` at most: an outage delays the run instead of losing it. An execution
   * that lost its run stops retrying.
   */
  const persistently = <A, E>(write: Effect.Effect<A, E | StorageError>, holding?: Holding): Effect.Effect<A, E | StorageError> =>
    write.pipe(
      Effect.tapErrorTag("StorageError" as never, () => health.storageFailed),
      Effect.retry({
        schedule: Schedule.exponential(Duration.millis(100)).pipe(
          Schedule.union(Schedule.spaced(Duration.seconds(5))),
          Schedule.upTo(Duration.millis(STORAGE_PATIENCE_MS))
        ),
        while: (e) => (e as { _tag?: string })._tag === "StorageError" && holding?.lost !== true
      })
    )

  /**
   * Pumps the agent's stdout into the transcript and the execution's state; completes `violated`
   * once the agent broke the protocol (too much output, a line refused) or passed the run's budget
   * (Budget.ts), so that it is stopped.
   */
  const pump = (agent: AgentProcess, out: Output, violated: Deferred.Deferred<void>, holding: Holding, parse?: LineParser) =>
    Effect.gen(function*() {
      const { state } = out
      const tools = yield* ToolSpans.make
      const limit = settings.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES
      const noteViolation = Effect.suspend(() => state.violation === undefined && state.exceeded === undefined ? Effect.void : Deferred.succeed(violated, undefined))
      yield* agent.stdout.pipe(
        Stream.runForEach((chunk) =>
          Effect.gen(function*() {
            if (state.violation !== undefined) return
            const room = limit - out.size
            const kept = chunk.length <= room ? chunk : chunk.subarray(0, Math.max(0, room))
            if (kept.length > 0) {
              out.writing = true
              yield* persistently(out.sink.appendTranscript(out.size, kept), holding).pipe(
                Effect.ensuring(Effect.sync(() => (out.writing = false))),
                Effect.catchAll((e) => Effect.logError("execution: the transcript could not be written; output lost", e))
              )
            }
            // Taken whole or not at all once written: the pump may be stopped between two chunks,
            // or while one waits for storage (an agent left for the next process goes on from the
            // bytes taken; a chunk written again at its place is written once).
            yield* Effect.uninterruptible(Effect.gen(function*() {
              out.size += kept.length
              out.agentBytes += chunk.length
              const split = splitLines(out.buffer, kept, parse)
              out.buffer = split.buffer
              const now = yield* Clock.currentTimeMillis
              for (const line of split.lines) {
                reduce(state, line, now)
                tools.observe(line, now)
              }
              if (kept.length < chunk.length) {
                state.violation ??= `the agent's output passed the run's limit of ${limit} bytes; the agent was stopped`
              }
            }))
            yield* noteViolation
          })
        ),
        Effect.catchAll((e) => Effect.logWarning("execution: reading the agent's output failed", e))
      )
      const now = yield* Clock.currentTimeMillis
      for (const line of flushLines(out.buffer, parse)) {
        reduce(state, line, now)
        tools.observe(line, now)
      }
      tools.endAll(now)
      yield* noteViolation
    })

  /**
   * Saves the conversation and artifacts the output added. Fails with the storage failure (the
   * caller decides whether to retry); what failed is written again by the next save.
   */
  const saveOutput = (out: Output) =>
    Effect.gen(function*() {
      const { log, state } = out
      // A part once formed is written as it is until storage took it (a retry after a lost answer
      // is then a no-op), before the next is formed.
      for (;;) {
        if (log.inflight === undefined && state.pending.length > 0) log.inflight = takeOps(state, PART_CHARS)
        if (log.inflight === undefined) break
        yield* out.sink.appendConversation({ seq: log.seq, ops: log.inflight })
        log.inflight = undefined
        log.seq += 1
      }
      const artifacts = takeArtifacts(state)
      for (const [i, artifact] of artifacts.entries()) {
        yield* out.sink.addArtifact(artifact).pipe(
          Effect.tapError(() => Effect.sync(() => state.artifacts.unshift(...artifacts.slice(i))))
        )
      }
    })

  /** Saves what the output changed: conversation, artifacts, and for a held run the report. */
  const save = (out: Output) =>
    Effect.gen(function*() {
      yield* saveOutput(out)
      const unsent = unsentReport(out)
      if (unsent === undefined || out.reports === undefined) return
      yield* out.reports.send(unsent.report).pipe(Effect.catchTag("Lost", () => Effect.void))
      out.reports.written = unsent.json
    }).pipe(
      // A save cut short would leave half of it unmarked: the periodic save is interrupted at the
      // end of an execution, and finishes first.
      Effect.uninterruptible
    )

  /** The periodic save while the agent runs: a failure is logged once per outage, the next save tries again. */
  const flush = (out: Output) => {
    const saves = outage(health, "execution: saving the conversation (the next save tries again)")
    return save(out).pipe(Effect.zipRight(saves.succeeded), Effect.catchAll(saves.failed))
  }

  /**
   * The last save, retried while storage fails, before the run's outcome is written: the report not
   * sent yet, for the outcome's write to carry (none for a debug session, or when it was sent).
   */
  const flushLast = (out: Output, holding: Holding) =>
    persistently(saveOutput(out), holding).pipe(Effect.map(() => unsentReport(out)?.report))

  /**
   * Waits until the agent has exited and its output is read: its exit code. Output still in the
   * pipe is read for up to `DRAIN_MS` after the exit (longer while a chunk waits for storage); a
   * process the agent left behind that holds the pipe open does not keep the run going.
   */
  const finished = (agent: AgentProcess, pumping: Fiber.RuntimeFiber<void, StorageError>, out: Output) =>
    Effect.gen(function*() {
      const exitCode = yield* agent.exitCode.pipe(Effect.orElseSucceed(() => 1))
      let drained = yield* Fiber.join(pumping).pipe(Effect.timeoutOption(Duration.millis(DRAIN_MS)))
      while (Option.isNone(drained) && out.writing) {
        drained = yield* Fiber.join(pumping).pipe(Effect.timeoutOption(Duration.millis(DRAIN_MS)))
      }
      if (Option.isNone(drained)) {
        yield* Fiber.interrupt(pumping)
        yield* Effect.logWarning(`execution: the agent exited with code ${exitCode} but its output stayed open; stopped reading`)
      }
      return exitCode
    })

  /**
   * Stops an agent: the cancel message, then SIGTERM, then SIGKILL, each after the grace period.
   * The message may not get there at all (an agent that filled its own stdin's pipe): it is given
   * the grace period too.
   */
  const stopAgent = (agent: AgentProcess) =>
    Effect.gen(function*() {
      yield* agent.send(cancelMessage).pipe(Effect.timeout(Duration.millis(settings.cancelGraceMs)), Effect.ignore)
      const exited = yield* agent.exitCode.pipe(
        Effect.timeoutOption(Duration.millis(settings.cancelGraceMs)),
        Effect.orElseSucceed(() => Option.some(-1))
      )
      if (Option.isNone(exited)) yield* agent.terminate(settings.cancelGraceMs)
    })

  /** The harness command as argv: a shell command run by `/bin/sh -c "exec …"`. */
  const harnessCommand = (harness: string | null) => ["/bin/sh", "-c", `exec ${harness ?? settings.harness}`]

  /** The variables every agent gets. */
  const agentEnv = (runId: string, executionId: string, token: string) => ({
    AGENT_RUNS_RUN_ID: runId,
    AGENT_RUNS_EXECUTION_ID: executionId,
    AGENT_RUNS_API_URL: settings.apiBaseUrl,
    AGENT_RUNS_RUN_TOKEN: token
  })

  return { persistently, pump, save, flush, flushLast, finished, stopAgent, harnessCommand, agentEnv } as const
}
