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
 */
import { Clock, Duration, Effect } from "effect"
import type { ExecutionId } from "../domain/Ids.js"

const POLL = Duration.millis(100)

export class LiveExecutions extends Effect.Service<LiveExecutions>()("@agent-runs/core/LiveExecutions", {
  sync: () => {
    const ids = new Set<ExecutionId>()
    /** When the grace period ends; undefined until draining begins. */
    let deadline: number | undefined

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
      drain
    }
  }
}) {}
