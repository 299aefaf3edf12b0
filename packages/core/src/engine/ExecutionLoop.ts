/**
 * The execution loop (docs/execution.md), the same on the server and on a self-hosted worker: while
 * it has free slots it claims runs from its `ExecutionHost` (woken by the host's wake-ups, polling
 * as a fallback), and runs each claimed plan to its end (Execution.ts) in a fiber of its own.
 *
 * The loop depends on the ports only (host, executor, ids, health): no service, no storage.
 *
 * Stopping (LiveExecutions.ts, draining): no claim once draining began; when the loop's layer stops it waits for
 * the drain, lets the executions that can leave their agent running for the next process
 * (`adoptAgents`), says it is departing (a worker's goodbye: no claim is answered for it after),
 * then stops the executions left, and each hands its run back (`HandOver`) once its agent is
 * stopped. Starting, it first takes up the executions an earlier process left, and looks for more
 * every few seconds while it runs.
 */
import { Duration, Effect, Either, ExecutionStrategy, Layer, Option, Schedule, Scope, Stream } from "effect"
import { type Health, supervise } from "./Health.js"
import { Ids } from "../domain/Ids.js"
import { type Adoptable, Executor } from "../ports/Executor.js"
import type { StorageError } from "../ports/Storage.js"
import * as Execution from "./Execution.js"
import { type AdoptionHost, ExecutionHost } from "./ExecutionHost.js"
import type { ExecutionPlan } from "./ExecutionPlan.js"
import { LiveExecutions } from "./LiveExecutions.js"
import { DEFAULT_DRAIN_MS, DispatcherConfig } from "./Settings.js"

/**
 * Claims in flight at once at most, while runs wait (see `claimRound`). Each claim waits for a few
 * turns of the event loop (storage, the transcript's size), and a server busy with hundreds of runs
 * takes seconds a turn: with 4 claims in flight it claimed one or two runs a second (issue 34).
 */
export const CLAIMERS = 16

/** Begins draining with the settings' grace period and waits for it (LiveExecutions.ts). */
export const drain: Effect.Effect<void, never, LiveExecutions | DispatcherConfig> = Effect.gen(function*() {
  const settings = yield* DispatcherConfig
  yield* (yield* LiveExecutions).drain(settings.drainMs ?? DEFAULT_DRAIN_MS)
})

/**
 * How long a stopping loop waits, once the grace period is over, for the executions that can leave
 * their agent running for the next process to do so (Execution.ts): the rest are stopped then.
 */
const LEAVE_MS = 10_000

/** Asks the executions that can to leave their agent for the next process, and waits for them (LiveExecutions.ts). */
const leave: Effect.Effect<void, never, LiveExecutions> = Effect.flatMap(LiveExecutions, (live) => live.leave(LEAVE_MS))

/** How often the loop looks for agents that stopping processes left for it (`adoptLeft`). */
const ADOPT_EVERY = Duration.seconds(5)

/** How long taking an agent another process left may take (`takeUp`). */
const TAKE_TIMEOUT = Duration.seconds(10)

/** How long telling the host of a hand-over may take while stopping. */
const HAND_OVER_TIMEOUT = Duration.seconds(5)

/** The loop's parts for the scope given: `claimSome` claims and starts runs while slots are free. */
export const make = (scope: Scope.Scope) => Effect.gen(function*() {
  const settings = yield* DispatcherConfig
  const host = yield* ExecutionHost
  const ids = yield* Ids
  const live = yield* LiveExecutions
  const executor = yield* Executor
  const { adopt, execute } = yield* Execution.make
  /** Executions under way. */
  let running = 0
  /** Whether a claim round waits for its turn (see `wake`). */
  let roundWaiting = false
  /** One claim round at a time (its claims go side by side, see `claimRound`). */
  const claiming = yield* Effect.makeSemaphore(1)

  /**
   * Gives a run back to the queue (at the same attempt) once its execution was stopped by the loop's
   * end, its agent stopped: its lease would otherwise run out and cost it an attempt. When the host
   * cannot be told in time, the lease runs out as before; a run that ended or was cancelled
   * meanwhile (`Lost`) has nothing to hand over. Interruptible, so that the timeout holds in a
   * finalizer.
   */
  const handOver = (plan: ExecutionPlan) =>
    host.record(plan.run_id, plan.execution_id, [{ _tag: "HandOver" }]).pipe(
      // An execution that left its agent for the next process keeps its run (stopped just after).
      Effect.unlessEffect(live.wasLeft(plan.execution_id)),
      Effect.interruptible,
      Effect.timeoutFail({ duration: HAND_OVER_TIMEOUT, onTimeout: () => "the host did not answer in time" }),
      Effect.zipRight(Effect.logInfo(`run ${plan.run_id} handed back to the queue: this process is stopping`)),
      Effect.catchTag("Lost", () => Effect.logDebug(`run ${plan.run_id} was not handed over: it ended or moved on meanwhile`)),
      Effect.catchAllCause((cause) => Effect.logWarning(`run ${plan.run_id} could not be handed over; its lease will run out`, cause))
    )

  /** Claims one run and starts it in a slot the caller keeps free for it: whether there was one. */
  const claimOne: Effect.Effect<boolean, StorageError> = Effect.gen(function*() {
    if (yield* live.isDraining) return false
    // Live from before the claim: the sweep must not take the run while its plan is made.
    const executionId = yield* ids.executionId
    yield* live.add(executionId)
    const claimed = yield* host.claim(executionId).pipe(Effect.onError(() => live.remove(executionId)))
    if (claimed._tag === "None") {
      yield* live.remove(executionId)
      return false
    }
    // A claim that was under way when draining began: its run goes straight back.
    if (yield* live.isDraining) {
      yield* handOver(claimed.value).pipe(Effect.ensuring(live.remove(executionId)))
      return false
    }
    yield* inSlot(claimed.value, execute(claimed.value))
    return true
  })

  /** Runs an execution of the plan in a slot (its own fiber), handing its run over if the loop stops it. */
  const inSlot = (plan: ExecutionPlan, execution: Effect.Effect<void, never, Scope.Scope>) =>
    Effect.suspend(() => {
      running += 1
      return execution.pipe(
        Effect.scoped,
        Effect.onInterrupt(() => handOver(plan)),
        // A slot is free again: look for more work at once (interruptible: a finalizer is not,
        // and what it forks would inherit that).
        Effect.ensuring(Effect.suspend(() => {
          running -= 1
          return live.remove(plan.execution_id).pipe(Effect.zipRight(wake))
        })),
        // Interruptible whoever forks it (`takeUp` does, uninterruptible).
        Effect.interruptible,
        Effect.forkIn(scope)
      )
    })

  /**
   * Takes up the executions an earlier process of the service left running (the executor's
   * adoptable agents; docs/deployment.md#adopting-agents-across-a-restart), unless draining: each whose run it
   * still holds goes on here in a slot; the sandboxes of the others are released (their runs
   * ended or went on elsewhere). A note that cannot be read now is tried a few times; then the
   * sandbox goes, and the run comes back through the lease sweep. Fails when the executor cannot
   * be asked.
   */
  const adoptLeft = Effect.gen(function*() {
    const adoption = host.adoption
    if (adoption === undefined || executor.adoptable === undefined || (yield* live.isDraining)) return
    const found = yield* executor.adoptable
    for (const adoptable of found) {
      // Taken up by an earlier round already (an executor may list an agent until it is adopted),
      // or no slot free: another process may take it (its lease says how long it waits). As a
      // claim round (one at a time with them), so that the two do not both take the last slot.
      yield* claiming.withPermits(1)(Effect.gen(function*() {
        if ((yield* live.has(adoptable.sandbox.execution_id)) || running >= settings.concurrency || (yield* live.isDraining)) return
        yield* takeUp(adoption, adoptable)
      }))
    }
  })

  /**
   * Takes up one left agent (adoptLeft), whole or not at all once taken: what the executor took
   * for this process is not dropped by a stop (which waits for it). The take itself may be cut
   * short (at most `TAKE_TIMEOUT`): one cut short after it was made leaves the agent to its lease.
   */
  const takeUp = (adoption: AdoptionHost, adoptable: Adoptable) =>
    Effect.uninterruptibleMask((restore) => Effect.gen(function*() {
      const { execution_id, run_id } = adoptable.sandbox
      const taken = yield* restore((adoptable.take ?? Effect.succeed(true)).pipe(Effect.timeoutFail({
        duration: TAKE_TIMEOUT,
        onTimeout: () => `no answer within ${Duration.format(TAKE_TIMEOUT)}`
      }))).pipe(
        Effect.catchAll((e) => Effect.as(Effect.logWarning(`execution: run ${run_id}'s agent left by another process could not be taken`, e), false))
      )
      if (!taken) return
      // Live from before it is taken up: the lease sweep must not take the run meanwhile.
      yield* live.add(execution_id)
      const resumed = yield* adoption.resume(run_id, execution_id).pipe(
        Effect.retry(Schedule.exponential(Duration.millis(200)).pipe(Schedule.intersect(Schedule.recurs(4)))),
        Effect.catchAll((e) => Effect.as(Effect.logWarning(`execution: run ${run_id}'s agent left by an earlier process could not be taken up`, e), Option.none()))
      )
      if (Option.isSome(resumed)) {
        yield* inSlot(resumed.value.plan, adopt(resumed.value.plan, resumed.value.note, adoptable))
      } else {
        yield* live.remove(execution_id)
        yield* adoptable.sandbox.release
      }
    }))

  /**
   * A claim round: waves of claims side by side while slots are free and runs wait, each wave as
   * wide as the runs found so far in the round (up to `CLAIMERS` and the free slots: 1, 1, 2, 4,
   * 8, 16 …), so a queue is taken by more and more claims at once while a lone run costs one empty
   * claim after it, as before. A wave with an empty claim ends the round. A claim that fails does
   * not cut the others of its wave short (one cut short after it claimed would leave its run
   * claimed and never started); the round fails with it once they are done.
   */
  const claimRound: Effect.Effect<void, StorageError> = Effect.gen(function*() {
    let found = 0
    for (;;) {
      const width = Math.min(CLAIMERS, Math.max(1, found), settings.concurrency - running)
      if (width <= 0) return
      const wave = yield* Effect.all(Array.from({ length: width }, () => Effect.either(claimOne)), { concurrency: "unbounded" })
      found += wave.filter((claim) => Either.isRight(claim) && claim.right).length
      const failed = wave.find(Either.isLeft)
      if (failed !== undefined) return yield* failed.left
      if (wave.some((claim) => Either.isRight(claim) && !claim.right)) return
    }
  })

  /** Claims and starts runs while there are free slots and runs waiting. */
  const claimSome: Effect.Effect<void, StorageError> = claiming.withPermits(1)(
    Effect.suspend(() => {
      // From here on every run queued so far is seen: a wake-up now needs a round of its own.
      roundWaiting = false
      return claimRound
    })
  )

  /** `claimSome` on a wake-up or a freed slot: a failure is left to the polling loop to report. */
  const claimQuietly = claimSome.pipe(Effect.catchAllCause((cause) => Effect.logDebug("execution: claim failed", cause)))

  /**
   * A claim round soon, not waited for. Wake-ups that come while a round waits for its turn are one:
   * that round sees their runs (a round in progress is no such round: it may have looked already).
   */
  const wake: Effect.Effect<void> = Effect.suspend(() => {
    if (roundWaiting) return Effect.void
    roundWaiting = true
    return Effect.asVoid(Effect.forkIn(Effect.interruptible(claimQuietly), scope))
  })

  /** Executions under way now. */
  const active = Effect.sync(() => running)

  return { claimSome, claimQuietly, wake, active, adoptLeft } as const
})

/**
 * The loop for the scope of the layer: claiming on every wake-up and every `pollMs`, supervised
 * (Health.ts): a failing iteration is reported and retried, never the end of the loop.
 */
export const layer: Layer.Layer<never, never, DispatcherConfig | ExecutionHost | Executor | Ids | Health | LiveExecutions> = Layer.scopedDiscard(
  Effect.gen(function*() {
    const settings = yield* DispatcherConfig
    const host = yield* ExecutionHost
    // The executions live in a scope of their own, closed after the drain below: added later, the
    // drain runs first when the layer stops (agents finish, or are stopped and handed over after).
    // Closed in parallel: every agent is stopped at once, not one after the other.
    const executions = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.parallel)
    yield* Effect.addFinalizer(() => drain.pipe(Effect.zipRight(leave), Effect.zipRight(host.departing ?? Effect.void)))
    const loop = yield* make(executions)
    // Before any claim: the agents an earlier process left for this one; then again now and then,
    // for those a process stopping after this one started leaves (a rolling deploy's replicas
    // overlap). Stopped before the drain begins (added after its finalizer, so run before it).
    yield* loop.adoptLeft.pipe(
      Effect.retry(Schedule.exponential(Duration.millis(500)).pipe(Schedule.intersect(Schedule.recurs(5)))),
      Effect.catchAll((e) =>
        Effect.logWarning("execution: could not look for agents left by an earlier process; their runs come back when their leases run out", e)
      )
    )
    yield* loop.adoptLeft.pipe(
      Effect.catchAll((e) => Effect.logDebug("execution: could not look for agents left by other processes", e)),
      Effect.delay(ADOPT_EVERY),
      Effect.forever,
      Effect.forkScoped
    )
    // Wake-ups only hasten claiming (the poll finds the same runs): a broken subscription is
    // opened again, and not reported.
    yield* host.wakeups.pipe(
      Stream.runForEach(() => loop.wake),
      Effect.zipRight(Effect.fail("the wake-ups ended")),
      Effect.catchAllCause((cause) => Effect.logWarning("execution: wake-ups failed; polling until they are back", cause)),
      Effect.zipRight(Effect.sleep(Duration.millis(settings.pollMs))),
      Effect.forever,
      Effect.forkScoped
    )
    yield* supervise("execution claim loop", loop.claimSome, settings.pollMs).pipe(Effect.forkScoped)
  })
)
