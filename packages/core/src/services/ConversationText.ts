/**
 * A run's part of a conversation's JSON text (Conversations.ts, `ofRunJson` / `getJson`): each
 * execution as storage gives it, its text kept (`RunStore.keepRendered`) or its steps folded from
 * its log, and the keeping of an ended execution's text after a read wrote it
 * (docs/performance.md, "Reading a large conversation back").
 *
 * Decisions:
 * - A folded execution's text is kept only when its log no longer grows: its run has ended and no
 *   debug window is open on it (a debug agent writes to the run's conversation while the run stays
 *   FAILED). Storage refuses a text made from fewer parts than the log has by then (a late part of
 *   a cancelled agent), and writes nothing when the text it keeps is current already.
 * - The text is kept after its last piece is handed out, in the background (a fiber of the
 *   service's scope, interrupted when the service stops): the response does not wait for the write.
 *   It holds the text's pieces until then, not the execution's steps.
 * - One keep at a time per execution in this process: a read that meets a keep in flight writes
 *   the text without copying it.
 * - A keep that fails, dies or takes longer than `KEEP_TIMEOUT` is logged as a warning; the next
 *   read folds the log again.
 */
import { Clock, DateTime, Effect, FiberSet, Stream } from "effect"
import { renderedJson, stepsJson } from "../domain/ConversationJson.js"
import type { ExecutionId, RunId } from "../domain/Ids.js"
import { isTerminal } from "../domain/RunState.js"
import type { ExecutionConversation, RunStore, StoredRun } from "../ports/RunStore.js"

/** The longest a keep may take. */
const KEEP_TIMEOUT = "1 minute"

/** A run's executions, as the conversation's text reads them. */
export interface RunExecutions {
  readonly run: StoredRun
  readonly executions: ReadonlyArray<ExecutionConversation>
}

/** Whether an execution holds no step. */
const executionEmpty = (e: ExecutionConversation) => (e._tag === "Rendered" ? e.json === "" : e.steps.length === 0)

/** Whether a run's executions hold no step. */
export const runEmpty = ({ executions }: RunExecutions) => executions.every(executionEmpty)

/** Whether a run's conversation logs no longer grow at `now`: it ended, and no debug window is open on it. */
export const logsEnded = (run: StoredRun, now: number) => {
  if (!isTerminal(run.item.state)) return false
  const until = run.item.status_message?.session_debug_until
  return until === undefined || DateTime.toEpochMillis(until) <= now
}

/** `pieces`, each also pushed onto `into` as it is handed out. */
function* copied(pieces: Iterable<string>, into: Array<string>): Generator<string> {
  for (const piece of pieces) {
    into.push(piece)
    yield piece
  }
}

/** The text of runs' executions, keeping ended ones through `store` on fibers of `fibers`. */
export const make = (store: RunStore["Type"], fibers: FiberSet.FiberSet) => {
  /** The executions being kept in this process, `<run id> <execution id>`. */
  const keeping = new Set<string>()

  /** Keeps an execution's text, made of `pieces` from `parts` parts of its log. */
  const keep = (runId: RunId, executionId: ExecutionId, parts: number, pieces: ReadonlyArray<string>, key: string) =>
    Effect.suspend(() => store.keepRendered(runId, { execution_id: executionId, json: pieces.join(""), parts })).pipe(
      Effect.timeout(KEEP_TIMEOUT),
      Effect.catchAllCause((cause) => Effect.logWarning("a conversation's text was not kept; the next read folds it again", cause)),
      Effect.ensuring(Effect.sync(() => keeping.delete(key)))
    )

  /**
   * A folded execution's JSON in pieces, its text kept after the last one; written without a copy
   * when a keep of it is in flight. A response that ends early (the client gone) keeps nothing.
   */
  const keptJson = (runId: RunId, execution: Extract<ExecutionConversation, { readonly _tag: "Folded" }>, first: boolean) =>
    Stream.suspend(() => {
      const key = `${runId} ${execution.execution_id}`
      if (keeping.has(key)) return Stream.fromIteratorSucceed(stepsJson(execution.steps, first), 1)
      keeping.add(key)
      const { execution_id, parts } = execution
      const pieces: Array<string> = []
      let forked = false
      const fork = Effect.suspend(() => {
        forked = true
        return FiberSet.run(fibers, keep(runId, execution_id, parts, pieces, key))
      })
      return Stream.fromIterable(first || execution.steps.length === 0 ? [] : [","]).pipe(
        Stream.concat(Stream.fromIteratorSucceed(copied(stepsJson(execution.steps, true), pieces), 1)),
        Stream.concat(Stream.execute(fork)),
        Stream.ensuring(Effect.sync(() => forked || keeping.delete(key)))
      )
    })

  /**
   * An execution's JSON in pieces, one at a time (a chunk of several would hold them all before
   * the first is sent); `first`: whether it opens the `steps` array; `ended`: whether its run's
   * logs no longer grow.
   */
  const executionJson = (runId: RunId, execution: ExecutionConversation, first: boolean, ended: boolean) => {
    if (execution._tag === "Rendered") return Stream.fromIteratorSucceed(renderedJson(execution.json, first), 1)
    return ended ? keptJson(runId, execution, first) : Stream.fromIteratorSucceed(stepsJson(execution.steps, first), 1)
  }

  /** A run's executions' JSON in pieces; `first`: whether they open the `steps` array. */
  const runJson = ({ executions, run }: RunExecutions, first: boolean): Stream.Stream<string> =>
    Stream.unwrap(Effect.map(Clock.currentTimeMillis, (now) => {
      const ended = logsEnded(run, now)
      return Stream.fromIterable(executions).pipe(
        Stream.mapAccum(first, (first, e) => [first && executionEmpty(e), executionJson(run.item.run_id, e, first, ended)]),
        Stream.flatten()
      )
    }))

  return { runJson } as const
}
