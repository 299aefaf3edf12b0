/**
 * Debug windows (docs/reference/harness-protocol.md), on the server only: the sandbox of a failed setup is kept for its
 * environment's `failure_session_retention_minutes`; follow-ups sent meanwhile start a debug agent
 * (mode `debug`) in it, whose output joins the run's transcript and conversation; the sandbox is
 * released when the window ends.
 *
 * At start-up, the sandboxes of an earlier life of the service are taken back: those of an open
 * debug window are kept, the others released. Runs that life held come back through the lease
 * sweep once their lease expires (so a replica that restarts never runs a run twice while another
 * replica holds it).
 */
import { Clock, Deferred, Duration, Effect, Fiber, Layer, Option, Schedule } from "effect"
import { transcriptKey } from "../domain/BlobKeys.js"
import { addUserMessage, endUserMessages, followupMessage, newExecutionState } from "../domain/Harness.js"
import { Health, supervise } from "./Health.js"
import { Ids } from "../domain/Ids.js"
import type { RunId } from "../domain/Ids.js"
import { BlobStore } from "../ports/BlobStore.js"
import { EnvironmentStore } from "../ports/EnvironmentStore.js"
import { IdentityStore } from "../ports/IdentityStore.js"
import { secretsRefusalOf } from "../domain/RunTokenRole.js"
import { Executor } from "../ports/Executor.js"
import type { Sandbox } from "../ports/Executor.js"
import { RunStore } from "../ports/RunStore.js"
import { RepoSource } from "../ports/RepoSource.js"
import { RunTokens } from "../ports/RunTokens.js"
import { SecretStore } from "../ports/SecretStore.js"
import { isDebugWindowOpen, RunEvent } from "../domain/RunStateMachine.js"
import { currentExecution, runSnapshot } from "../domain/RunRecords.js"
import * as AgentSession from "./AgentSession.js"
import { startMessage } from "./StartMessage.js"
import { planRecordingSecretReads } from "./SecretReads.js"
import { AuditLog } from "../ports/AuditLog.js"
import { RunExecutions } from "./RunExecutions.js"
import { DispatcherConfig } from "./Settings.js"

/** A retained sandbox of a failed setup. */
interface Retained {
  readonly sandbox: Sandbox
  debugging: boolean
}

export class DebugWindows extends Effect.Service<DebugWindows>()("@agent-runs/core/DebugWindows", {
  scoped: Effect.gen(function*() {
    const scope = yield* Effect.scope
    const settings = yield* DispatcherConfig
    const store = yield* RunStore
    const blobs = yield* BlobStore
    const environments = yield* EnvironmentStore
    const identities = yield* IdentityStore
    const audit = yield* AuditLog
    const executor = yield* Executor
    const tokens = yield* RunTokens
    const ids = yield* Ids
    const health = yield* Health
    const executions = yield* RunExecutions
    const sources = { repos: yield* RepoSource, store: yield* SecretStore, debugWindows: true }
    const session = AgentSession.make(settings, health)
    const retained = new Map<RunId, Retained>()

    /** Keeps the sandbox of a failed setup for its run's debug window. */
    const retain = (runId: RunId, sandbox: Sandbox) => Effect.sync(() => void retained.set(runId, { sandbox, debugging: false }))

    /** A debug agent in a retained sandbox, for the follow-ups `first` and those that come while it runs. */
    const debugSession = (runId: RunId, keep: Retained, first: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const found = yield* store.get(runId)
        if (Option.isNone(found)) return
        const run = found.value
        const executionId = yield* ids.executionId
        const token = yield* tokens.issue({ run_id: runId, execution_id: executionId })
        const uid = run.item.environment_id
        const env = uid === null ? Option.none() : yield* environments.get(uid)
        // Its last editor now shapes this debug agent, as it shapes an execution at its claim.
        if (Option.isSome(env)) yield* store.addShapers(runId, [env.value.editor])
        const plan = yield* planRecordingSecretReads({
          run: run.item,
          team_uid: run.team_uid,
          execution_id: executionId,
          run_token: token,
          environment: Option.match(env, { onNone: () => null, onSome: (e) => e.item.config }),
          environment_missing: false,
          refusal: yield* secretsRefusalOf(store, identities, run),
          attachments: [],
          history: [],
          // A debug session's agent is not bound by the run's budget.
          descendants_committed: 0,
          transcript_bytes: yield* blobs.size(transcriptKey(runId))
        }, sources, audit, ids)
        if (plan.failure !== null) yield* Effect.logWarning(`debug session of run ${runId} without skill and MCP servers: ${plan.failure}`)
        const agent = yield* keep.sandbox.start(session.harnessCommand(plan.harness), session.agentEnv(runId, executionId, token))
        yield* agent.send(startMessage(plan, keep.sandbox, token, settings.apiBaseUrl, "debug", first)).pipe(Effect.ignore)
        const state = newExecutionState(executionId)
        const startedAt = yield* Clock.currentTimeMillis
        for (const message of first) addUserMessage(state, message, startedAt)
        const out = AgentSession.output(state, executions.output(runId, executionId), plan.transcript_bytes)
        const holding: AgentSession.Holding = { lost: false }
        const violated = yield* Deferred.make<void>()
        const pumping = yield* session.pump(agent, out, violated, holding).pipe(Effect.forkScoped)
        yield* Deferred.await(violated).pipe(Effect.zipRight(session.stopAgent(agent)), Effect.forkScoped)
        const delivering = yield* Effect.gen(function*() {
          for (const f of yield* store.takeFollowups(runId)) {
            addUserMessage(state, f.message, yield* Clock.currentTimeMillis)
            yield* agent.send(followupMessage(f.message, "debug")).pipe(Effect.ignore)
          }
          yield* session.flush(out)
        }).pipe(Effect.repeat(Schedule.spaced(Duration.millis(settings.watchMs))), Effect.ignore, Effect.forkScoped)
        yield* session.finished(agent, pumping, out)
        yield* Fiber.interrupt(delivering)
        endUserMessages(state, yield* Clock.currentTimeMillis)
        yield* session.flushLast(out, holding)
      }).pipe(
        Effect.scoped,
        Effect.catchAllCause((cause) => Effect.logWarning(`debug session of run ${runId} failed`, cause)),
        Effect.ensuring(Effect.sync(() => (keep.debugging = false)))
      )

    /** Ends the debug windows that are over, and starts debug agents for waiting follow-ups. */
    const tend = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      for (const [runId, keep] of retained) {
        const run = Option.getOrUndefined(yield* store.get(runId))
        const open = run !== undefined && isDebugWindowOpen(runSnapshot(run), now)
        if (!open) {
          if (keep.debugging) continue
          retained.delete(runId)
          yield* keep.sandbox.release
          if (run !== undefined && run.sandbox_retained) {
            yield* executions.advanceUnlessLost(runId, RunEvent.SandboxReleased(), yield* currentExecution(store, ids, run))
          }
          continue
        }
        if (keep.debugging) continue
        const waiting = yield* store.takeFollowups(runId)
        if (waiting.length === 0) continue
        keep.debugging = true
        yield* debugSession(runId, keep, waiting.map((f) => f.message)).pipe(Effect.forkIn(scope))
      }
    })

    /** Takes back the sandboxes of an earlier life: open debug windows are kept, the rest released. */
    const recover = Effect.gen(function*() {
      const leftovers = yield* executor.leftovers.pipe(
        Effect.catchAll((e) => Effect.logWarning("could not list leftover sandboxes", e).pipe(Effect.as([])))
      )
      const now = yield* Clock.currentTimeMillis
      for (const sandbox of leftovers) {
        const run = Option.getOrUndefined(yield* store.get(sandbox.run_id).pipe(Effect.orElseSucceed(() => Option.none())))
        // In a place servers share, a sandbox whose run its execution still leases may be another
        // server's (two with one name): the reaper releases it once its run no longer needs it.
        if (executor.shared !== undefined && run?.lease?.execution_id === sandbox.execution_id) continue
        if (run !== undefined && isDebugWindowOpen(runSnapshot(run), now) && !retained.has(run.item.run_id)) {
          retained.set(run.item.run_id, { sandbox, debugging: false })
        } else {
          yield* sandbox.release
        }
      }
      if (leftovers.length > 0) yield* Effect.logInfo(`found ${leftovers.length} sandboxes of an earlier run of the service`)
    })

    // Before anything is claimed (the local host needs this service): a sandbox found now is an earlier life's.
    yield* recover
    return { retain, tend } as const
  })
}) {}

/** The debug windows' loop: tending every `sweepMs`, supervised (Health.ts). */
export const loop: Layer.Layer<never, never, DebugWindows | DispatcherConfig | Health> = Layer.scopedDiscard(
  Effect.gen(function*() {
    const settings = yield* DispatcherConfig
    const windows = yield* DebugWindows
    yield* supervise("debug windows", windows.tend, settings.sweepMs).pipe(Effect.forkScoped)
  })
)
