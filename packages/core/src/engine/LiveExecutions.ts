/**
 * The executions this process runs now, by id, from the claim on, and their drain.
 *
 * The lease sweep of the same process renews the lease of one of them instead of requeueing its
 * run: a renewal that came late (a busy event loop, a slow database) is not an execution gone, and
 * requeueing would run the agent twice. Executions elsewhere (other replicas, self-hosted workers)
 * are known only by their leases.
 *
 * Draining (docs/deployment.md#draining-on-deploy): a server or worker that is stopping claims no
 * more (the execution loop asks `isDraining`), lets the agents it runs finish for a grace period,
 * and only then stops the rest, each handing its run back to the queue at the same attempt
 * (ExecutionLoop.ts), so that another replica or worker takes it and a deploy costs no attempt.
 * `drain(graceMs)` begins draining and waits for the executions to end until the grace period that
 * the first call started is over: the bundled server calls it while its HTTP server still answers
 * (`/readyz` says 503 from then on), and the execution loop calls it again when it stops (for an
 * embedding host or a worker that did not), which then waits only for what is left of that period.
 *
 * Leaving (docs/deployment.md#adopting-agents-across-a-restart): once the grace period is over, the
 * loop asks the executions that can leave their agent running for the next process to do so
 * (`leave`), and waits a little for them, before it stops the rest.
 */
import { Clock, Deferred, Duration, Effect, FiberId } from "effect"
import type { ExecutionId } from "../domain/Ids.js"

const POLL = Duration.millis(100)

export class LiveExecutions extends Effect.Service<LiveExecutions>()("@agent-runs/core/LiveExecutions", {
  sync: () => {
    const ids = new Set<ExecutionId>()
    /** When the grace period ends; undefined until draining begins. */
    let deadline: number | undefined
    /** The executions that can leave their agent for the next process (while they can). */
    const lasting = new Set<ExecutionId>()
    /** The executions that left their agent: their runs are not handed over. */
    const left = new Set<ExecutionId>()
    /** Completed when they are asked to. */
    const leaving = Deferred.unsafeMake<void>(FiberId.none)

    /** Asks the executions that can leave their agent to do so, and waits until they have, for `timeoutMs` at most. */
    const leave = (timeoutMs: number) =>
      Effect.gen(function*() {
        yield* Deferred.succeed(leaving, undefined)
        const until = (yield* Clock.currentTimeMillis) + timeoutMs
        while (lasting.size > 0 && (yield* Clock.currentTimeMillis) < until) yield* Effect.sleep(POLL)
      }).pipe(Effect.withSpan("LiveExecutions.leave"))

    /** Begins draining (once), then waits until no execution is left or the grace period is over. */
    const drain = (graceMs: number) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        deadline ??= now + graceMs
        const until = deadline
        while (ids.size > 0 && (yield* Clock.currentTimeMillis) < until) yield* Effect.sleep(POLL)
      }).pipe(Effect.withSpan("LiveExecutions.drain"))

    return {
      add: (id: ExecutionId) => Effect.sync(() => void ids.add(id)),
      remove: (id: ExecutionId) => Effect.sync(() => void ids.delete(id)),
      has: (id: ExecutionId) => Effect.sync(() => ids.has(id)),
      isDraining: Effect.sync(() => deadline !== undefined),
      drain,
      leave,
      /** Completes when the executions that can are to leave their agent. */
      leaving: Deferred.await(leaving),
      /** Counts the execution among those that can leave their agent (`leave` waits for them). */
      holdLasting: (id: ExecutionId) => Effect.sync(() => void lasting.add(id)),
      /** No longer: it left its agent, could not, or its agent ended. */
      dropLasting: (id: ExecutionId) => Effect.sync(() => void lasting.delete(id)),
      /** Notes that the execution left its agent for the next process (its run stays held). */
      markLeft: (id: ExecutionId) => Effect.sync(() => void left.add(id)),
      /** Whether the execution left its agent. */
      wasLeft: (id: ExecutionId) => Effect.sync(() => left.has(id))
    }
  }
}) {}
