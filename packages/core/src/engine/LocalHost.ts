/**
 * The execution host of the server's own executions: over storage (RunExecutions.ts), claiming the
 * runs no self-hosted worker is named for. Plans read skills from the server's repositories and
 * resolve MCP servers with the team's secrets; a failed setup's sandbox goes to its debug window
 * (DebugWindows.ts).
 */
import { Effect, Layer, Option } from "effect"
import * as Adoptions from "./Adoptions.js"
import * as AgentStates from "./AgentStates.js"
import { BlobStore } from "../ports/BlobStore.js"
import { RepoSource } from "../ports/RepoSource.js"
import { RunStore } from "../ports/RunStore.js"
import { SecretStore } from "../ports/SecretStore.js"
import { DebugWindows } from "./DebugWindows.js"
import { ExecutionHost } from "./ExecutionHost.js"
import type { ClaimedRun } from "./ExecutionPlan.js"
import { planRecordingSecretReads } from "./SecretReads.js"
import { AuditLog } from "../ports/AuditLog.js"
import { type ExecutionId, Ids, type RunId } from "../domain/Ids.js"
import { RunExecutions } from "./RunExecutions.js"
import { DispatcherConfig } from "./Settings.js"

export const layer: Layer.Layer<
  ExecutionHost,
  never,
  RunExecutions | RunStore | RepoSource | SecretStore | DebugWindows | DispatcherConfig | BlobStore | AuditLog | Ids
> =
  Layer.effect(
    ExecutionHost,
    Effect.gen(function*() {
      const settings = yield* DispatcherConfig
      const executions = yield* RunExecutions
      const store = yield* RunStore
      const sources = { repos: yield* RepoSource, store: yield* SecretStore, debugWindows: true }
      const windows = yield* DebugWindows
      const blobs = yield* BlobStore
      const audit = yield* AuditLog
      const ids = yield* Ids
      /** The plan of a run claimed (or taken up again), if any. */
      const planned = <E>(claim: Effect.Effect<Option.Option<ClaimedRun>, E>) =>
        claim.pipe(
          Effect.flatMap(Option.match({
            onNone: () => Effect.succeedNone,
            onSome: (claimed) => Effect.asSome(planRecordingSecretReads(claimed, sources, audit, ids))
          }))
        )
      const resumed = (runId: RunId, executionId: ExecutionId) => planned(executions.resume(runId, executionId, settings.leaseMs))
      return ExecutionHost.of({
        wakeups: store.wakeups,
        claim: (executionId) => planned(executions.claim({ worker_host: null, execution_id: executionId, lease_ms: settings.leaseMs })),
        renew: (runId, executionId) => executions.renew(runId, executionId, settings.leaseMs),
        // A lease that lapsed while storage failed is renewed first (the execution is alive here).
        record: (runId, executionId, events, report) => executions.record(runId, executionId, events, { renewFor: settings.leaseMs, report }),
        report: executions.report,
        childrenHold: (runId) => executions.childrenHold(runId),
        followups: executions.followups,
        output: executions.output,
        retain: windows.retain,
        agentState: (runId) => AgentStates.read(blobs, runId),
        saveAgentState: (runId, executionId, state) =>
          // Only the execution holding the run writes its state.
          executions.held(runId, executionId).pipe(Effect.zipRight(AgentStates.save(blobs, runId, state))),
        adoption: Adoptions.make(blobs, executions, resumed)
      })
    })
  )
