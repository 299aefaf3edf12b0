/**
 * The lease sweep (docs/reference/run-lifecycle.md), on the server only, every `sweepMs`:
 * - an expired lease requeues its run (`attempt + 1`; ERROR `resource_unavailable` after the third),
 *   the server's executions and self-hosted workers' alike. While storage failed lately, holders
 *   could not renew: leases expire a whole lease after the last storage failure at the earliest.
 *   The lease of an execution alive in this process is renewed instead (LiveExecutions.ts): its
 *   renewal came late, it is not gone;
 * - teams with PENDING runs and room again admit them, oldest first;
 * - QUEUED runs whose self-hosted worker stayed away fail: the run was created at least
 *   `workerWaitMs` ago and the worker has sent no heartbeat for as long (or never); a follow-up or a
 *   late admission does not restart the wait.
 */
import { Clock, Effect, Layer, Option } from "effect"
import { Health, supervise } from "./Health.js"
import { Ids } from "../domain/Ids.js"
import { RunStore } from "../ports/RunStore.js"
import { WorkerStore } from "../ports/WorkerStore.js"
import { isTerminal } from "../domain/RunState.js"
import { RunEvent } from "../domain/RunStateMachine.js"
import { currentExecution } from "../domain/RunRecords.js"
import { LiveExecutions } from "./LiveExecutions.js"
import { RunExecutions } from "./RunExecutions.js"
import { DEFAULT_WORKER_WAIT_MS, DispatcherConfig } from "./Settings.js"

/** One sweep, for the settings and stores of the context. */
export const make = Effect.gen(function*() {
  const settings = yield* DispatcherConfig
  const store = yield* RunStore
  const ids = yield* Ids
  const health = yield* Health
  const executions = yield* RunExecutions
  const live = yield* LiveExecutions
  const presence = yield* Effect.serviceOption(WorkerStore)

  const expireLeases = (now: number) =>
    Effect.gen(function*() {
      const fault = yield* health.lastStorageFault
      if (Option.isSome(fault) && now - fault.value < settings.leaseMs) return
      for (const run of yield* store.expiredLeases(now, 100)) {
        const lease = run.lease
        if (lease === null) continue
        if (yield* live.has(lease.execution_id)) {
          yield* executions.renew(run.item.run_id, lease.execution_id, settings.leaseMs).pipe(Effect.catchTag("Lost", () => Effect.void))
          yield* Effect.logWarning(`lease of run ${run.item.run_id} expired while its execution here lives: renewed (the renewal came late)`)
          continue
        }
        const next = yield* executions.advanceUnlessLost(run.item.run_id, RunEvent.LeaseExpired({ executionId: lease.execution_id }), lease.execution_id)
        if (Option.isNone(next)) continue
        if (isTerminal(next.value.item.state)) yield* executions.admit(next.value.team_uid)
        yield* Effect.logInfo(`lease of run ${run.item.run_id} expired; now ${next.value.item.state}`)
      }
    })

  const failAbandoned = (now: number) =>
    Effect.gen(function*() {
      if (Option.isNone(presence)) return
      const waitMs = settings.workerWaitMs ?? DEFAULT_WORKER_WAIT_MS
      for (const run of yield* store.waitingForWorkers(now - waitMs, 100)) {
        const workerId = run.item.agent_config.worker_host
        if (workerId === undefined) continue
        const seen = yield* presence.value.lastHeartbeat(run.team_uid, workerId)
        if (Option.isSome(seen) && now - seen.value < waitMs) continue
        const message = `self-hosted worker ${workerId} has not been connected for ${Math.round(waitMs / 1000)} s; ` +
          "the run stopped waiting for it"
        const next = yield* executions.advanceUnlessLost(run.item.run_id, RunEvent.WorkerAbsent({ message }), yield* currentExecution(store, ids, run))
        if (Option.isNone(next)) continue
        yield* Effect.logInfo(`run ${run.item.run_id} failed: ${message}`)
        yield* executions.admit(run.team_uid)
      }
    })

  return Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    yield* expireLeases(now)
    for (const team of yield* store.waitingTeams(100)) yield* executions.admit(team)
    yield* failAbandoned(now)
  })
})

/** The sweep every `sweepMs`, supervised (Health.ts). */
export const layer: Layer.Layer<never, never, DispatcherConfig | RunStore | Ids | Health | RunExecutions | LiveExecutions> = Layer.scopedDiscard(
  Effect.gen(function*() {
    const settings = yield* DispatcherConfig
    yield* supervise("lease sweep", yield* make, settings.sweepMs).pipe(Effect.forkScoped)
  })
)
