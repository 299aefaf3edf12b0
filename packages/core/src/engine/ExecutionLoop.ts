/**
 * The execution loop (docs/execution.md), the same on the server and on a self-hosted worker: while
 * it has free slots it claims runs from its `ExecutionHost` (woken by the host's wake-ups, polling
 * as a fallback), and runs each claimed plan to its end:
 *
 * 1. the lease is renewed every third of it while the execution lives (a renewal refused: the run
 *    was taken away; one that failed: tried again, the agent goes on);
 * 2. the environment is set up in a sandbox of the `Executor` (its start recorded first when there
 *    is one); a plan that cannot run fails its setup with its reason;
 * 3. the harness starts, gets its start message, and the agent's start is recorded (INPROGRESS);
 * 4. its output is pumped into the transcript and reduced into the conversation, artifacts and
 *    report (AgentSession.ts); waiting follow-ups are delivered to its stdin every `watchMs`, which
 *    is also when the loop notices that the run is no longer its own (cancelled, lease lost) and
 *    stops the agent (cancel message, SIGTERM, SIGKILL, each after the grace period);
 * 5. the outcome is recorded (SUCCEEDED, FAILED, BLOCKED), after the output's last save.
 *
 * Decisions:
 * - The `oz` harness command is a shell command: the environment's `config.harness`, else the
 *   default, run as `/bin/sh -c "exec <command>"` in the sandbox with `AGENT_RUNS_RUN_ID`,
 *   `AGENT_RUNS_EXECUTION_ID`, `AGENT_RUNS_API_URL` and `AGENT_RUNS_RUN_TOKEN` set (the start
 *   message carries the same `api`). An agent CLI (`plan.agent`) runs through its adapter
 *   (`AgentHarnesses`, CliAgent.ts) with the same variables and no start message; its output is
 *   read with the adapter's decoder. One whose auth secret is gone, or without an adapter here,
 *   ends the run FAILED `integration_not_configured` before a sandbox is made.
 * - A failure of the executor itself (it could not prepare or start) ends the run ERROR
 *   `internal_error`; a failure of the setup commands ends it FAILED `environment_setup_failed`.
 * - Storage failing (the host's `StorageError`) delays an execution's writes (retried with backoff
 *   for up to 10 minutes) and never stops its agent.
 *
 * The loop depends on the ports only (host, executor, ids, health): no service, no storage.
 */
import { Clock, Deferred, Duration, Effect, Either, Fiber, Layer, Option, Ref, Schedule, Stream } from "effect"
import type { Scope } from "effect"
import { addUserMessage, endUserMessages, eventLines, followupMessage, newExecutionState, outcomeOf } from "../domain/Harness.js"
import type { McpDirectServer } from "../domain/McpServers.js"
import { type AgentHarness, AgentHarnesses } from "../ports/AgentHarness.js"
import * as CliAgent from "./CliAgent.js"
import type { AgentOutcome, StartMessage } from "../domain/Harness.js"
import { Health, outage, supervise } from "./Health.js"
import { Ids } from "../domain/Ids.js"
import { Executor } from "../ports/Executor.js"
import { GitHost } from "../ports/GitHost.js"
import type { Sandbox } from "../ports/Executor.js"
import type { StorageError } from "../ports/Storage.js"
import * as AgentSession from "./AgentSession.js"
import type { ExecutionEvent } from "../domain/ExecutionEvent.js"
import { ExecutionHost, Lost } from "./ExecutionHost.js"
import { LiveExecutions } from "./LiveExecutions.js"
import { publishPullRequests } from "./PullRequests.js"
import type { ExecutionPlan } from "./ExecutionPlan.js"
import { DispatcherConfig } from "./Settings.js"

/** The start message of a plan's agent. */
export const startMessage = (
  plan: Pick<ExecutionPlan, "run_id" | "execution_id" | "start">,
  sandbox: Sandbox,
  token: string,
  apiBaseUrl: string,
  mode: "normal" | "debug",
  followups: ReadonlyArray<string>
): StartMessage => ({
  type: "start",
  run_id: plan.run_id,
  execution_id: plan.execution_id,
  mode,
  ...plan.start,
  attachments: sandbox.attachments,
  followups,
  api: { base_url: apiBaseUrl, run_token: token }
})

/**
 * Claims in flight at once at most, while runs wait (see `claimRound`). Each claim waits for a few
 * turns of the event loop (storage, the transcript's size), and a server busy with hundreds of runs
 * takes seconds a turn: with 4 claims in flight it claimed one or two runs a second (issue 34).
 */
export const CLAIMERS = 16

/** The loop's parts for the scope given: `claimSome` claims and starts runs while slots are free. */
export const make = (scope: Scope.Scope) => Effect.gen(function*() {
  const settings = yield* DispatcherConfig
  const host = yield* ExecutionHost
  const executor = yield* Executor
  const ids = yield* Ids
  const health = yield* Health
  const live = yield* LiveExecutions
  const session = AgentSession.make(settings, health)
  const harnesses = Option.getOrElse(yield* Effect.serviceOption(AgentHarnesses), () => new Map())
  // The Git host the pull requests of runs are opened on (none: no team can be connected).
  const gitHost = yield* GitHost
  /** Executions under way. */
  let running = 0
  /** Whether a claim round waits for its turn (see `wake`). */
  let roundWaiting = false
  /** One claim round at a time (its claims go side by side, see `claimRound`). */
  const claiming = yield* Effect.makeSemaphore(1)

  /** A continuation's CLI session and its saved files, when both are there. */
  const resumeOf = (plan: ExecutionPlan, cli: AgentHarness) =>
    Effect.gen(function*() {
      if (plan.resume_session === null || cli.sessionState === undefined) return null
      const state = yield* host.agentState(plan.run_id).pipe(
        Effect.catchAll((e) => Effect.as(Effect.logWarning("execution: the agent's session files could not be read", e), Option.none()))
      )
      return Option.isSome(state) ? { session_id: plan.resume_session, state: state.value } : null
    })

  /** Saves the CLI's session files of an execution; a failure only costs the next one its resume. */
  const keepAgentState = (plan: ExecutionPlan, sandbox: Sandbox, cli: AgentHarness) =>
    CliAgent.archiveState(sandbox, cli).pipe(
      Effect.flatMap(Option.match({
        onNone: () => Effect.void,
        onSome: (state) => host.saveAgentState(plan.run_id, plan.execution_id, state)
      })),
      Effect.catchAll((e) => Effect.logWarning("execution: the agent's session files could not be kept", e))
    )

  /**
   * A successful end once its pull requests are published (PullRequests.ts): FAILED
   * `integration_not_configured`, naming why, when they cannot be.
   */
  const withPullRequests = (plan: ExecutionPlan, sandbox: Sandbox, told: AgentOutcome, holding: AgentSession.Holding) =>
    publishPullRequests({
      plan,
      sandbox,
      host: gitHost,
      title: plan.start.title,
      prompt: plan.start.prompt,
      addArtifact: (artifact) => session.persistently(host.output(plan.run_id, plan.execution_id).addArtifact(artifact), holding)
    }).pipe(
      Effect.map(Option.match({
        onNone: (): AgentOutcome => told,
        onSome: (message): AgentOutcome => ({ _tag: "Failed", error_code: "integration_not_configured", message })
      }))
    )

  /** Runs one claimed plan to its end. */
  const execute = (plan: ExecutionPlan): Effect.Effect<void, never, Scope.Scope> =>
    Effect.gen(function*() {
      const { execution_id: executionId, run_id: runId } = plan
      const holding: AgentSession.Holding = { lost: false }
      const record = (...events: ReadonlyArray<ExecutionEvent>) => session.persistently(host.record(runId, executionId, events), holding)
      const lost = yield* Deferred.make<void>()
      const renewals = outage(health, "execution: lease renewal (the agent goes on)")
      yield* host.renew(runId, executionId).pipe(
        Effect.zipRight(renewals.succeeded),
        Effect.catchTag("StorageError", renewals.failed),
        Effect.repeat(Schedule.spaced(Duration.millis(Math.max(10, Math.floor(settings.leaseMs / 3))))),
        Effect.catchTag("Lost", () => Deferred.succeed(lost, undefined)),
        Effect.delay(Duration.millis(Math.floor(settings.leaseMs / 3))),
        Effect.forkScoped
      )

      // With nothing to set up, the setup's start is recorded together with the agent's start.
      const setupStarted: ReadonlyArray<ExecutionEvent> = [{ _tag: "EnvironmentSetupStarted" }]
      const firstEvents = plan.has_environment ? [] : setupStarted
      if (plan.has_environment) yield* record(...setupStarted)
      if (plan.failure !== null) {
        yield* record(...firstEvents, { _tag: "EnvironmentSetupFailed", message: plan.failure })
        return
      }
      const cli = plan.agent.type === "oz" ? undefined : harnesses.get(plan.agent.type)
      const unconfigured = plan.unconfigured ?? (plan.agent.type !== "oz" && cli === undefined
        ? `this server cannot run the ${plan.agent.type} harness: its adapter (@agent-runs/harness-${plan.agent.type}) is not installed`
        : null)
      if (unconfigured !== null) {
        yield* record(...firstEvents, { _tag: "Fail", error_code: "integration_not_configured", message: unconfigured })
        return
      }
      const prepared = yield* executor.prepare(plan.sandbox).pipe(Effect.either)
      if (Either.isLeft(prepared)) {
        const error = prepared.left
        if (error._tag === "ExecutorError") {
          yield* Effect.logError(`execution: the executor failed for run ${runId}: ${error.message}`)
          yield* record({ _tag: "Error", error_code: "internal_error", message: `the executor failed: ${error.message}` })
          return
        }
        const failed = yield* record(...firstEvents, {
          _tag: "EnvironmentSetupFailed",
          message: error.message,
          ...(plan.retention_ms > 0 ? { retention_ms: plan.retention_ms } : {})
        }).pipe(Effect.tapError(() => error.sandbox.release))
        yield* failed.sandbox_retained ? host.retain(runId, error.sandbox) : error.sandbox.release
        return
      }
      const sandbox = prepared.right
      yield* Effect.addFinalizer(() => sandbox.release)

      const waiting = yield* host.followups(runId, executionId).pipe(Effect.orElseSucceed(() => []))
      // A run created to continue a saved conversation (its first execution, with history): its
      // prompt is the conversation's new message, handed over as a continuation's follow-up is.
      const continuesConversation = plan.says_prompt && plan.start.history.length > 0
      const followups = continuesConversation ? [plan.start.prompt, ...waiting] : waiting
      const state = newExecutionState(executionId)
      // What the user said to this agent: the prompt (the run's first execution), then the follow-ups it starts with.
      const startedAt = yield* Clock.currentTimeMillis
      if (plan.says_prompt && !continuesConversation) addUserMessage(state, plan.start.prompt, startedAt)
      for (const message of followups) addUserMessage(state, message, startedAt)
      const env = { ...plan.agent_env, ...session.agentEnv(runId, executionId, plan.run_token) }
      const agent = yield* (cli === undefined || plan.agent.type === "oz"
        ? sandbox.start(session.harnessCommand(plan.harness), env)
        : CliAgent.start({
          sandbox,
          harness: cli,
          turn: {
            base_prompt: plan.start.base_prompt,
            skill: plan.start.skill,
            model_id: plan.agent.model_id,
            reasoning_level: plan.agent.reasoning_level,
            mcp_servers: plan.start.mcp_servers as Readonly<Record<string, McpDirectServer>>,
            auth: plan.agent.auth,
            attachments: sandbox.attachments
          },
          prompt: plan.start.prompt,
          history: plan.start.history,
          followups,
          resume: yield* resumeOf(plan, cli),
          session: () => state.session?.session_id ?? null,
          env,
          takeFollowups: host.followups(runId, executionId).pipe(Effect.orElseSucceed(() => []))
        })).pipe(
          Effect.catchTag("ExecutorError", (error) =>
            record({ _tag: "Error", error_code: "internal_error", message: `the agent could not start: ${error.message}` }).pipe(
              Effect.zipRight(Effect.fail(new Lost()))
            ))
        )
      // The agent starts working while its start is recorded; if the run moved on meanwhile (a
      // cancel), the execution ends and its scope stops the agent. An agent CLI has its first
      // message already (CliAgent.ts).
      if (cli === undefined) {
        yield* agent.send(startMessage(plan, sandbox, plan.run_token, settings.apiBaseUrl, "normal", followups)).pipe(Effect.ignore)
      }
      yield* record(...firstEvents, { _tag: "EnvironmentSetupSucceeded" }, { _tag: "Start" })

      const out = AgentSession.output(state, host.output(runId, executionId), plan.transcript_bytes, {
        send: (report) => host.report(runId, executionId, report),
        usage: plan.usage
      })
      const violated = yield* Deferred.make<void>()
      const parse = cli === undefined ? undefined : eventLines(cli.decoder())
      const pumping = yield* session.pump(agent, out, violated, holding, parse).pipe(Effect.forkScoped)
      const flushing = yield* session.flush(out).pipe(Effect.repeat(Schedule.spaced(Duration.millis(settings.flushMs))), Effect.forkScoped)
      const stopped = yield* Ref.make(false)
      // Stops the agent of a run this execution no longer holds (cancelled, or its lease lost).
      const stop = Effect.gen(function*() {
        if (yield* Ref.getAndSet(stopped, true)) return
        holding.lost = true
        yield* session.stopAgent(agent)
      })
      // Follow-ups delivered; a run no longer held stops the agent. While the host fails the agent goes on.
      const watches = outage(health, "execution: watching the run (the agent goes on)")
      const watching = yield* host.followups(runId, executionId).pipe(
        Effect.flatMap((messages) =>
          Effect.forEach(messages, (m) =>
            Clock.currentTimeMillis.pipe(
              // Said before the agent can answer it.
              Effect.map((at) => addUserMessage(state, m, at)),
              Effect.zipRight(agent.send(followupMessage(m, "normal"))),
              Effect.ignore
            ))
        ),
        Effect.zipRight(watches.succeeded),
        Effect.catchTag("StorageError", watches.failed),
        Effect.repeat(Schedule.spaced(Duration.millis(settings.watchMs))),
        Effect.catchAll(() => stop),
        Effect.forkScoped
      )
      yield* Deferred.await(lost).pipe(Effect.zipRight(stop), Effect.forkScoped)
      // An agent that broke the protocol is stopped; its run fails (below) with the reason.
      yield* Deferred.await(violated).pipe(Effect.zipRight(session.stopAgent(agent)), Effect.forkScoped)

      const exitCode = yield* session.finished(agent, pumping, out)
      yield* Fiber.interrupt(watching)
      yield* Fiber.interrupt(flushing)
      endUserMessages(state, yield* Clock.currentTimeMillis)
      yield* session.flushLast(out, holding)
      if (yield* Ref.get(stopped)) return
      // The CLI's session files, for a continuation to resume (before the run is seen ended).
      if (cli !== undefined) yield* keepAgentState(plan, sandbox, cli)
      const told = cli === undefined ? outcomeOf(state, exitCode) : CliAgent.outcomeOf(cli.type, state, exitCode)
      const outcome = told._tag === "Succeeded" && plan.pull_request !== null ? yield* withPullRequests(plan, sandbox, told, holding) : told
      yield* record(
        outcome._tag === "Succeeded"
          ? { _tag: "Succeed", ...(outcome.message === undefined ? {} : { message: outcome.message }) }
          : outcome._tag === "Blocked"
          ? { _tag: "Block", message: outcome.message }
          : { _tag: "Fail", error_code: outcome.error_code, message: outcome.message }
      )
    }).pipe(
      Effect.catchTag("Lost", () => Effect.logDebug(`execution: run ${plan.run_id} moved on without this execution`)),
      Effect.catchAllCause((cause) =>
        Effect.logError(`execution: execution of run ${plan.run_id} failed`, cause).pipe(
          Effect.zipRight(
            host.record(plan.run_id, plan.execution_id, [
              { _tag: "Error", error_code: "internal_error", message: "the service failed while running the agent" }
            ]).pipe(Effect.ignore)
          )
        )
      ),
      Effect.annotateLogs({ run_id: plan.run_id, execution_id: plan.execution_id })
    )

  /** Claims one run and starts it in a slot the caller keeps free for it: whether there was one. */
  const claimOne: Effect.Effect<boolean, StorageError> = Effect.gen(function*() {
    // Live from before the claim: the sweep must not take the run while its plan is made.
    const executionId = yield* ids.executionId
    yield* live.add(executionId)
    const claimed = yield* host.claim(executionId).pipe(Effect.onError(() => live.remove(executionId)))
    if (claimed._tag === "None") {
      yield* live.remove(executionId)
      return false
    }
    running += 1
    yield* execute(claimed.value).pipe(
      Effect.scoped,
      // A slot is free again: look for more work at once (interruptible: a finalizer is not,
      // and what it forks would inherit that).
      Effect.ensuring(Effect.suspend(() => {
        running -= 1
        return live.remove(executionId).pipe(Effect.zipRight(wake))
      })),
      Effect.forkIn(scope)
    )
    return true
  })

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

  return { claimSome, claimQuietly, wake, active } as const
})

/**
 * The loop for the scope of the layer: claiming on every wake-up and every `pollMs`, supervised
 * (Health.ts): a failing iteration is reported and retried, never the end of the loop.
 */
export const layer: Layer.Layer<never, never, DispatcherConfig | ExecutionHost | Executor | Ids | Health | LiveExecutions> = Layer.scopedDiscard(
  Effect.gen(function*() {
    const settings = yield* DispatcherConfig
    const host = yield* ExecutionHost
    const loop = yield* make(yield* Effect.scope)
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
