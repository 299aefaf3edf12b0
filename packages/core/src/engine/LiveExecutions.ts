/**
 * The executions this process runs now, by id, from the claim on. The lease sweep of the same
 * process renews the lease of one of them instead of requeueing its run: a renewal that came late
 * (a busy event loop, a slow database) is not an execution gone, and requeueing would run the
 * agent twice. Executions elsewhere (other replicas, self-hosted workers) are known only by their
 * leases.
 */
import { Effect } from "effect"
import type { ExecutionId } from "../domain/Ids.js"

export class LiveExecutions extends Effect.Service<LiveExecutions>()("@agent-runs/core/LiveExecutions", {
  sync: () => {
    const ids = new Set<ExecutionId>()
    return {
      add: (id: ExecutionId) => Effect.sync(() => void ids.add(id)),
      remove: (id: ExecutionId) => Effect.sync(() => void ids.delete(id)),
      has: (id: ExecutionId) => Effect.sync(() => ids.has(id))
    }
  }
}) {}
