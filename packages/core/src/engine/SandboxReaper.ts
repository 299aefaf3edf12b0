/**
 * The sandbox reaper, for executors whose place several servers share (a cluster's namespace:
 * `Executor.shared`): at start and every `REAP_MS`, each sandbox whose run no longer needs it is
 * released, whichever server made it. A sandbox is needed while its run's lease is its execution's
 * (an agent runs in it, here or on another replica), or while its run's debug window is open and
 * it is the sandbox of the run's latest execution (kept for a debug session). Every other one is
 * abandoned: its run ended, moved to another execution (the lease expired and the run was
 * requeued), or is unknown (deleted, or another database's). What a replica that died, or a
 * restart that could not take its sandboxes back, left behind goes this way.
 */
import { Clock, Effect, Layer, Option } from "effect"
import type { ExecutionId } from "../domain/Ids.js"
import { runSnapshot } from "../domain/RunRecords.js"
import { isDebugWindowOpen } from "../domain/RunStateMachine.js"
import { Executor, type Sandbox } from "../ports/Executor.js"
import { RunStore, type StoredRun } from "../ports/RunStore.js"
import { type Health, supervise } from "./Health.js"

/** How often the reaper looks. */
export const REAP_MS = 60_000

/**
 * Whether `sandbox` is abandoned: `run` is its run (none when unknown), `latest` the execution of
 * the run's latest timeline event, `now` the time. Pure.
 */
export const isAbandoned = (sandbox: Sandbox, run: StoredRun | undefined, latest: ExecutionId | undefined, now: number): boolean => {
  if (run === undefined) return true
  if (run.lease !== null) return run.lease.execution_id !== sandbox.execution_id
  return !(isDebugWindowOpen(runSnapshot(run), now) && latest === sandbox.execution_id)
}

/** One look: releases the abandoned sandboxes; how many. */
export const reap: Effect.Effect<number, unknown, Executor | RunStore> = Effect.gen(function*() {
  const executor = yield* Executor
  if (executor.shared === undefined) return 0
  const store = yield* RunStore
  let released = 0
  for (const sandbox of yield* executor.shared) {
    const run = Option.getOrUndefined(yield* store.get(sandbox.run_id))
    const latest = run === undefined || run.lease !== null ? undefined : (yield* store.timeline(sandbox.run_id, 0)).at(-1)?.execution_id
    if (!isAbandoned(sandbox, run, latest, yield* Clock.currentTimeMillis)) continue
    yield* Effect.logInfo(`releasing sandbox ${sandbox.id}: its run no longer needs it`).pipe(
      Effect.annotateLogs({ run_id: sandbox.run_id, execution_id: sandbox.execution_id })
    )
    yield* sandbox.release
    released++
  }
  return released
}).pipe(Effect.withSpan("SandboxReaper.reap"))

/** The reaper's loop, supervised (Health.ts); nothing for an executor without `shared`. */
export const loop: Layer.Layer<never, never, Executor | RunStore | Health> = Layer.scopedDiscard(
  Effect.gen(function*() {
    const executor = yield* Executor
    if (executor.shared === undefined) return
    yield* supervise("sandbox reaper", Effect.asVoid(reap), REAP_MS).pipe(Effect.forkScoped)
  })
)
