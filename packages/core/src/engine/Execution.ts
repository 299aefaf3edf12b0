/**
 * One claimed plan run to its end (docs/execution.md), the same on the server and on a self-hosted
 * worker; the execution loop (ExecutionLoop.ts) claims the plans and starts one of these each.
 *
 * 1. the lease is renewed every third of it while the execution lives (a renewal refused: the run
 *    was taken away; one that failed: tried again, the agent goes on);
 * 2. the environment is set up in a sandbox of the `Executor` (its start recorded first when there
 *    is one); a plan that cannot run fails its setup with its reason;
 * 3. the harness starts (AgentLaunch.ts: our `oz` protocol or an agent CLI's adapter, chosen once),
 *    is given its first message, and the agent's start is recorded (INPROGRESS);
 * 4. its output is pumped into the transcript and reduced into the conversation, artifacts and
 *    report (AgentSession.ts); waiting follow-ups are delivered to its stdin every `watchMs`, which
 *    is also when the execution notices that the run is no longer its own (cancelled, lease lost)
 *    and stops the agent (cancel message, SIGTERM, SIGKILL, each after the grace period);
 * 5. the outcome is recorded (SUCCEEDED, FAILED, BLOCKED), after the output's last save.
 *
 * Decisions:
 * - Every agent gets `AGENT_RUNS_RUN_ID`, `AGENT_RUNS_EXECUTION_ID`, `AGENT_RUNS_API_URL` and
 *   `AGENT_RUNS_RUN_TOKEN`. A harness that cannot run here (no adapter, its auth secret gone) ends
 *   the run FAILED `integration_not_configured` before a sandbox is made.
 * - A failure of the executor itself (it could not prepare or start) ends the run ERROR
 *   `internal_error`; a failure of the setup commands ends it FAILED `environment_setup_failed`.
 * - Storage failing (the host's `StorageError`) delays an execution's writes (retried with backoff
 *   for up to 10 minutes) and never stops its agent.
 */
import { Clock, Deferred, Duration, Effect, Either, Fiber, Option, Ref, Schedule } from "effect"
import type { Scope } from "effect"
import {
  addUserMessage,
  endUserMessages,
  type ExecutionState,
  followupMessage,
  newExecutionState,
  withBudget
} from "../domain/Harness.js"
import type { AgentOutcome } from "../domain/Harness.js"
import type { ExecutionEvent, Report } from "../domain/ExecutionEvent.js"
import { AgentHarnesses } from "../ports/AgentHarness.js"
import { Executor } from "../ports/Executor.js"
import type { Adoptable, AgentProcess, ExecutorError, LastingAgent, Sandbox } from "../ports/Executor.js"
import * as AdoptionNote from "../domain/AdoptionNote.js"
import { GitHost } from "../ports/GitHost.js"
import type { StorageError } from "../ports/Storage.js"
import * as AgentLaunch from "./AgentLaunch.js"
import * as AgentSession from "./AgentSession.js"
import { ExecutionHost, type Recorded, Lost } from "./ExecutionHost.js"
import type { ExecutionPlan } from "./ExecutionPlan.js"
import { Health, outage } from "./Health.js"
import { LiveExecutions } from "./LiveExecutions.js"
import { publishPullRequests } from "./PullRequests.js"
import { DispatcherConfig } from "./Settings.js"
import { agentAttributes, executionSpan, traceparentOf, usageAttributes } from "./ExecutionSpans.js"
import { costOf, type LiveBudget, startProblem } from "../domain/Budget.js"
import { effectiveMaxRuntimeMs, maxRuntimeMessage } from "../domain/MaxRuntime.js"

/** An execution under way: its plan, and how it records what happens. */
interface Running {
  readonly plan: ExecutionPlan
  /** The plan's budget as it goes: what the run's children hold is read again at each lease renewal. */
  readonly budget: LiveBudget
  readonly holding: AgentSession.Holding
  /** Records events of the run (with the agent's last report when given), retried while storage fails. */
  readonly record: (events: ReadonlyArray<ExecutionEvent>, report?: Report) => Effect.Effect<Recorded, Lost | StorageError>
  /** Recorded with the first event of the agent's own (or the setup's failure): the setup's start when there is no environment. */
  readonly firstEvents: ReadonlyArray<ExecutionEvent>
  /** Whether its agent was left running for the next process (its sandbox is then kept). */
  left: boolean
}

/** An agent being followed: its process, and the same as one that may be left for the next process. */
interface Following {
  readonly agent: AgentProcess
  readonly lasting: Option.Option<LastingAgent>
  readonly state: ExecutionState
  /** When the agent was launched (its maximum runtime counts from then). */
  readonly startedAt: number
  readonly out: AgentSession.Output
}

/** How long a leaving execution waits for its output's reader to stop between two chunks. */
const LEAVE_READ_MS = 5_000

/** How an agent ended: its outcome, and its last report when it was not sent yet. */
interface Ended {
  readonly outcome: AgentOutcome
  readonly report: Report | undefined
}

const SETUP_STARTED: ReadonlyArray<ExecutionEvent> = [{ _tag: "EnvironmentSetupStarted" }]

/** The event that ends a run with an agent's outcome. */
const outcomeEvent = (outcome: AgentOutcome): ExecutionEvent =>
  outcome._tag === "Succeeded"
    ? { _tag: "Succeed", ...(outcome.message === undefined ? {} : { message: outcome.message }) }
    : outcome._tag === "Blocked"
    ? { _tag: "Block", message: outcome.message }
    : { _tag: "Fail", error_code: outcome.error_code, message: outcome.message }

/** `execute` of the host and executor in context: runs one claimed plan to its end. */
/**
 * The loops an execution keeps while its agent works (lease renewal, watching for follow-ups,
 * flushing output) run a few times a second: their spans would swamp the run's trace.
 */
const untraced = <A, E, R>(loop: Effect.Effect<A, E, R>) => Effect.withTracerEnabled(loop, false)

export const make = Effect.gen(function*() {
  const settings = yield* DispatcherConfig
  const host = yield* ExecutionHost
  const executor = yield* Executor
  const health = yield* Health
  const live = yield* LiveExecutions
  const session = AgentSession.make(settings, health)
  const harnesses = Option.getOrElse(yield* Effect.serviceOption(AgentHarnesses), () => new Map())
  // The Git host the pull requests of runs are opened on (none: no team can be connected).
  const gitHost = yield* GitHost
  const launches = AgentLaunch.make({ host, harnesses, harnessCommand: session.harnessCommand, apiBaseUrl: settings.apiBaseUrl })

  /**
   * What the run's children hold of its budget, read again after a renewal (a run with a cost
   * budget): children the agent created while it runs count against what it may spend itself.
   */
  const heldByChildren = (plan: ExecutionPlan, budget: LiveBudget) =>
    budget.max_cost_usd === null
      ? Effect.void
      : Effect.map(host.childrenHold(plan.run_id, plan.execution_id), (held) => {
        if (held !== undefined) budget.spent_before = costOf(plan.usage) + held
      })

  /** Renews the lease while the scope lives: completes what it returns once the run was taken away. */
  const keepLease = (plan: ExecutionPlan, budget: LiveBudget) =>
    Effect.gen(function*() {
      const lost = yield* Deferred.make<void>()
      const renewals = outage(health, "execution: lease renewal (the agent goes on)")
      yield* host.renew(plan.run_id, plan.execution_id).pipe(
        Effect.zipRight(heldByChildren(plan, budget)),
        Effect.zipRight(renewals.succeeded),
        Effect.catchTag("StorageError", renewals.failed),
        Effect.repeat(Schedule.spaced(Duration.millis(Math.max(10, Math.floor(settings.leaseMs / 3))))),
        Effect.catchTag("Lost", () => Deferred.succeed(lost, undefined)),
        Effect.delay(Duration.millis(Math.floor(settings.leaseMs / 3))),
        untraced,
        Effect.forkScoped
      )
      return lost
    })

  /** Releases the sandbox when the scope closes, unless the execution left its agent for the next process. */
  const releasedUnlessLeft = (running: Running, sandbox: Sandbox) =>
    Effect.addFinalizer(() => Effect.suspend(() => running.left ? Effect.void : sandbox.release))

  /**
   * How the launch's agent starts in the sandbox: as one the execution may leave for the next
   * process when all can (`adoptAgents`, the launch, the sandbox, the host), else as any.
   */
  const starterOf = (launch: AgentLaunch.AgentLaunch, sandbox: Sandbox) => {
    const lasting = launch.startLasting
    const starter = sandbox.startLasting
    return settings.adoptAgents !== true || host.adoption === undefined || lasting === undefined || starter === undefined
      ? (input: AgentLaunch.LaunchInput) => Effect.map(launch.start(input), (agent) => ({ agent, lasting: Option.none<LastingAgent>() }))
      : (input: AgentLaunch.LaunchInput) => Effect.map(lasting(input, starter), (agent) => ({ agent, lasting: Option.some(agent) }))
  }

  /** The plan's sandbox, released with the scope; none when its setup failed (recorded). */
  const sandboxOf = (running: Running) =>
    Effect.gen(function*() {
      const { firstEvents, plan, record } = running
      const prepared = yield* executor.prepare(plan.sandbox).pipe(Effect.withSpan("run.setup"), Effect.either)
      if (Either.isRight(prepared)) {
        yield* releasedUnlessLeft(running, prepared.right)
        return Option.some(prepared.right)
      }
      const error = prepared.left
      if (error._tag === "ExecutorError") {
        yield* Effect.logError(`execution: the executor failed for run ${plan.run_id}: ${error.message}`)
        yield* record([{ _tag: "Error", error_code: "internal_error", message: `the executor failed: ${error.message}` }])
        return Option.none<Sandbox>()
      }
      const failed = yield* record([...firstEvents, {
        _tag: "EnvironmentSetupFailed",
        message: error.message,
        ...(plan.retention_ms > 0 ? { retention_ms: plan.retention_ms } : {})
      }]).pipe(Effect.tapError(() => error.sandbox.release))
      yield* failed.sandbox_retained ? host.retain(plan.run_id, error.sandbox) : error.sandbox.release
      return Option.none<Sandbox>()
    })

  /** Starts the agent with what the user said to it so far, and records its start. */
  const startAgent = (running: Running, launch: AgentLaunch.AgentLaunch, sandbox: Sandbox) =>
    Effect.gen(function*() {
      const { plan, record } = running
      const takeFollowups = host.followups(plan.run_id, plan.execution_id).pipe(Effect.orElseSucceed(() => []))
      const waiting = yield* takeFollowups
      // A run created to continue a saved conversation (its first execution, with history): its
      // prompt is the conversation's new message, handed over as a continuation's follow-up is.
      const continuesConversation = plan.says_prompt && plan.start.history.length > 0
      const followups = continuesConversation ? [plan.start.prompt, ...waiting] : waiting
      const state = withBudget(newExecutionState(plan.execution_id), running.budget)
      // What the user said to this agent: the prompt (the run's first execution), then the follow-ups it starts with.
      const startedAt = yield* Clock.currentTimeMillis
      if (plan.says_prompt && !continuesConversation) addUserMessage(state, plan.start.prompt, startedAt)
      for (const message of followups) addUserMessage(state, message, startedAt)
      const env = {
        ...plan.agent_env,
        ...session.agentEnv(plan.run_id, plan.execution_id, plan.run_token),
        ...traceparentOf(yield* Effect.option(Effect.currentSpan))
      }
      const { agent, lasting } = yield* starterOf(launch, sandbox)({ plan, sandbox, state, env, followups, takeFollowups }).pipe(
        Effect.catchTag("ExecutorError", (error) =>
          record([{ _tag: "Error", error_code: "internal_error", message: `the agent could not start: ${error.message}` }]).pipe(
            Effect.zipRight(Effect.fail(new Lost()))
          ))
      )
      // The agent works while its start is recorded; if the run moved on meanwhile (a cancel), the
      // execution ends and its scope stops the agent.
      yield* record([...running.firstEvents, { _tag: "EnvironmentSetupSucceeded" }, { _tag: "Start" }])
      return { agent, lasting, state, startedAt }
    })

  /**
   * Every `watchMs` while the scope lives: the waiting follow-ups are said to the agent; `stop` once
   * the run is no longer this execution's. While the host fails the agent goes on.
   */
  const watch = (plan: ExecutionPlan, state: ExecutionState, agent: AgentProcess, stop: Effect.Effect<void>) => {
    const watches = outage(health, "execution: watching the run (the agent goes on)")
    return host.followups(plan.run_id, plan.execution_id).pipe(
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
      untraced,
      Effect.forkScoped
    )
  }

  /**
   * Stops the agent once it ran for the run's maximum runtime (MaxRuntime.ts, within the host's
   * ceiling), counted from its launch: `stopped` is then set, and the run ends FAILED
   * `max_runtime_exceeded`. An agent that exited first is left alone. A host without a ceiling
   * (a worker of a server older than the setting) sets no limit.
   */
  const overtime = (plan: ExecutionPlan, agent: AgentProcess, startedAt: number) =>
    Effect.gen(function*() {
      const stopped = yield* Ref.make(false)
      const ceiling = settings.maxRuntimeSeconds
      const limitMs = ceiling === undefined ? Number.POSITIVE_INFINITY : effectiveMaxRuntimeMs(plan.max_runtime_seconds, ceiling)
      const elapsed = (yield* Clock.currentTimeMillis) - startedAt
      const overran = Effect.sleep(Duration.millis(Math.max(0, limitMs - elapsed))).pipe(Effect.as(true))
      const exited = agent.exitCode.pipe(Effect.as(false), Effect.orElseSucceed(() => false))
      const timer = yield* (Number.isFinite(limitMs) ? Effect.raceFirst(overran, exited) : Effect.never).pipe(
        Effect.flatMap((late) =>
          late
            ? Ref.set(stopped, true).pipe(
              Effect.zipRight(Effect.logWarning(`execution: run ${plan.run_id} passed its maximum runtime (${limitMs / 1000} s); stopping its agent`)),
              Effect.zipRight(session.stopAgent(agent))
            )
            : Effect.void
        ),
        Effect.forkScoped
      )
      return { limitMs, stopped, timer }
    })

  /** Writes the agent's last report now, when there is one; nothing is left to carry. */
  const sendNow = ({ holding, plan }: Running, report: Report | undefined) =>
    report === undefined
      ? Effect.succeed(undefined)
      : session.persistently(host.report(plan.run_id, plan.execution_id, report), holding).pipe(
        Effect.catchTag("Lost", () => Effect.void),
        Effect.as(undefined)
      )

  /**
   * A successful end once its pull requests are published (PullRequests.ts): FAILED
   * `integration_not_configured`, naming why, when they cannot be.
   */
  const withPullRequests = ({ holding, plan }: Running, sandbox: Sandbox, told: AgentOutcome) =>
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

  /**
   * Follows the agent until it exits, its output saved: its outcome and the report not sent yet
   * (written with the outcome), or none when it was stopped (the run moved on without this
   * execution, or its lease was lost).
   */
  const outcomeOf = (running: Running, launch: AgentLaunch.AgentLaunch, sandbox: Sandbox, lost: Deferred.Deferred<void>) =>
    Effect.gen(function*() {
      const { plan } = running
      const started = yield* startAgent(running, launch, sandbox)
      const out = AgentSession.output(started.state, host.output(plan.run_id, plan.execution_id), plan.transcript_bytes, {
        send: (report) => host.report(plan.run_id, plan.execution_id, report),
        usage: plan.usage
      })
      return yield* follow(running, launch, sandbox, lost, { ...started, out })
    }).pipe(Effect.withSpan("run.agent", { attributes: agentAttributes(running.plan) }))

  /**
   * Leaves the agent running for the next process (the loop is stopping: LiveExecutions.leave):
   * its output read so far saved with the report, the note kept (AdoptionNote.ts) and the lease
   * renewed for the next process, then the agent detached and its sandbox kept. Whether it was
   * left: not when the run moved on, the agent broke a limit or storage failed first (the loop
   * then stops it and hands the run over, as it does any agent).
   */
  const leave = (running: Running, following: Following, agent: LastingAgent, stopped: Ref.Ref<boolean>, fibers: {
    readonly pumping: Fiber.RuntimeFiber<void, StorageError>
    readonly loops: ReadonlyArray<Fiber.RuntimeFiber<unknown, unknown>>
  }) =>
    Effect.gen(function*() {
      const { holding, plan } = running
      const { out, state } = following
      if (host.adoption === undefined || (yield* Ref.get(stopped))) return false
      const reading = yield* Fiber.interrupt(fibers.pumping).pipe(Effect.timeoutOption(Duration.millis(LEAVE_READ_MS)))
      if (Option.isNone(reading)) return false
      yield* Effect.forEach(fibers.loops, Fiber.interrupt, { discard: true })
      if (state.violation !== undefined || state.exceeded !== undefined) return false
      yield* session.persistently(session.save(out), holding)
      const adoption = AgentSession.adoptionOf(out, following.startedAt)
      if (adoption === undefined || holding.lost) return false
      yield* session.persistently(host.adoption.keep(plan.run_id, plan.execution_id, AdoptionNote.write(adoption)), holding)
      yield* host.renew(plan.run_id, plan.execution_id)
      yield* Effect.uninterruptible(agent.detach.pipe(
        Effect.zipRight(Effect.sync(() => void (running.left = true))),
        Effect.zipRight(live.markLeft(plan.execution_id))
      ))
      yield* Effect.logInfo(`execution: run ${plan.run_id}'s agent is left running for the next process of the service`)
      return true
    }).pipe(
      Effect.catchAll((e) =>
        Effect.as(Effect.logWarning(`execution: run ${running.plan.run_id}'s agent could not be left for the next process; it is stopped`, e), false)
      )
    )

  /**
   * Follows the agent until it exits, its output saved: its outcome and the report not sent yet
   * (written with the outcome), or none when it was stopped (the run moved on without this
   * execution, or its lease was lost) or left for the next process.
   */
  const follow = (running: Running, launch: AgentLaunch.AgentLaunch, sandbox: Sandbox, lost: Deferred.Deferred<void>, following: Following) =>
    Effect.gen(function*() {
      const { holding, plan } = running
      const { agent, out, startedAt, state } = following
      const violated = yield* Deferred.make<void>()
      const overran = yield* overtime(plan, agent, startedAt)
      const pumping = yield* session.pump(agent, out, violated, holding, launch.parse).pipe(Effect.forkScoped)
      const flushing = yield* session.flush(out).pipe(
        Effect.repeat(Schedule.spaced(Duration.millis(settings.flushMs))),
        untraced,
        Effect.forkScoped
      )
      const stopped = yield* Ref.make(false)
      // Stops the agent of a run this execution no longer holds (cancelled, or its lease lost).
      const stop = Effect.gen(function*() {
        if (yield* Ref.getAndSet(stopped, true)) return
        holding.lost = true
        yield* session.stopAgent(agent)
      })
      const watching = yield* watch(plan, state, agent, stop)
      yield* Deferred.await(lost).pipe(Effect.zipRight(stop), Effect.forkScoped)
      // An agent that broke the protocol is stopped; its run fails (below) with the reason.
      yield* Deferred.await(violated).pipe(Effect.zipRight(session.stopAgent(agent)), Effect.forkScoped)

      // The agent's end, or the loop asking an agent that can to be left for the next process.
      const finishing = yield* Effect.fork(session.finished(agent, pumping, out))
      const leaving = Option.isSome(following.lasting)
        ? Effect.zipRight(live.holdLasting(plan.execution_id), live.leaving)
        : Effect.never
      const ended = yield* Effect.raceFirst(Effect.map(Fiber.join(finishing), Option.some), Effect.as(leaving, Option.none<number>()))
      if (Option.isNone(ended)) {
        yield* Fiber.interrupt(finishing)
        const loops = [overran.timer, watching, flushing]
        const left = Option.isSome(following.lasting) && (yield* leave(running, following, following.lasting.value, stopped, { pumping, loops }))
        yield* live.dropLasting(plan.execution_id)
        if (left) return Option.none<Ended>()
        // Not left: the loop stops the agent and hands the run over when it stops this execution.
        return yield* Effect.never
      }
      yield* live.dropLasting(plan.execution_id)
      const exitCode = ended.value
      yield* Fiber.interrupt(overran.timer)
      yield* Fiber.interrupt(watching)
      yield* Fiber.interrupt(flushing)
      endUserMessages(state, yield* Clock.currentTimeMillis)
      const unsent = yield* session.flushLast(out, holding)
      if (yield* Ref.get(stopped)) return Option.none<Ended>()
      // Stopped for its output or its budget first: that is the reason given.
      const limited = (yield* Ref.get(overran.stopped)) && state.violation === undefined && state.exceeded === undefined
      const told: AgentOutcome = limited
        ? { _tag: "Failed", error_code: "max_runtime_exceeded", message: maxRuntimeMessage(overran.limitMs) }
        : launch.outcome(state, exitCode)
      const publishes = told._tag === "Succeeded" && plan.pull_request !== null
      // The last report rides on the outcome's write, unless something that takes time (and may
      // fail, or see the run cancelled) comes first: then it is written now, as the output was.
      const carried = Option.isNone(launch.keep) && !publishes ? unsent : yield* sendNow(running, unsent)
      // What a continuation resumes from, kept before the run is seen ended.
      if (Option.isSome(launch.keep)) yield* launch.keep.value(plan, sandbox)
      const outcome = publishes ? yield* withPullRequests(running, sandbox, told) : told
      yield* Effect.annotateCurrentSpan(usageAttributes(state))
      return Option.some<Ended>({ outcome, report: carried })
    }).pipe(
      // However it ends (interrupted while leaving too), the loop's leave waits for it no more.
      Effect.ensuring(live.dropLasting(running.plan.execution_id))
    )

  /** The plan with the run's usage before the execution as `usage`, and its budget's spending so. */
  const withUsageBefore = (plan: ExecutionPlan, usage: ExecutionPlan["usage"]): ExecutionPlan => ({
    ...plan,
    usage,
    budget: { ...plan.budget, spent_before: plan.budget.spent_before - costOf(plan.usage) + costOf(usage) }
  })

  /** The record of an execution of the plan as it starts. */
  const runningOf = (plan: ExecutionPlan): Running => {
    const holding: AgentSession.Holding = { lost: false }
    const record = (events: ReadonlyArray<ExecutionEvent>, report?: Report) =>
      session.persistently(host.record(plan.run_id, plan.execution_id, events, report), holding)
    return { plan, budget: { ...plan.budget }, holding, record, firstEvents: plan.has_environment ? [] : SETUP_STARTED, left: false }
  }

  /** Runs the plan's agent in a sandbox, from the setup to its outcome recorded. */
  const run = (plan: ExecutionPlan) =>
    Effect.gen(function*() {
      const running = runningOf(plan)
      const { record } = running
      const lost = yield* keepLease(plan, running.budget)
      if (plan.has_environment) yield* record(SETUP_STARTED)
      if (plan.failure !== null) {
        return yield* record([...running.firstEvents, { _tag: "EnvironmentSetupFailed", message: plan.failure }])
      }
      const launch = launches.of(plan)
      if ("unconfigured" in launch) {
        return yield* record([...running.firstEvents, { _tag: "Fail", error_code: "integration_not_configured", message: launch.unconfigured }])
      }
      // A run with nothing left of its budget (a follow-up after it spent it all) starts no agent.
      const spent = startProblem(plan.budget)
      if (spent !== undefined) return yield* record([...running.firstEvents, { _tag: "Fail", error_code: "budget_exceeded", message: spent }])
      const sandbox = yield* sandboxOf(running)
      if (Option.isNone(sandbox)) return
      const ended = yield* outcomeOf(running, launch, sandbox.value, lost)
      if (Option.isNone(ended)) return
      const { outcome, report } = ended.value
      yield* record([outcomeEvent(outcome)], report)
    })

  /**
   * Goes on with an execution an earlier process of the service left running (its plan taken up
   * again, `AdoptionHost.resume`): its agent adopted from where that process stopped reading, its
   * state and what was saved of it as the note says, to its outcome recorded. When it cannot go on
   * (the note does not fit the run's transcript, the agent is out of reach), the agent is stopped
   * and the run handed back to the queue at its attempt.
   */
  const runAdopted = (plan: ExecutionPlan, note: Uint8Array, adoptable: Adoptable) =>
    Effect.gen(function*() {
      const adoption = AdoptionNote.read(note)
      // The run's usage now counts what this execution reported before: its base is the note's.
      const running = runningOf(adoption === undefined ? plan : withUsageBefore(plan, adoption.usage_before))
      const lost = yield* keepLease(running.plan, running.budget)
      const launch = launches.of(plan)
      // The transcript may hold more than the note says (a chunk written as the reader was
      // stopped): the same bytes come again from the agent, and are written again at their place.
      const agent = "unconfigured" in launch || adoption === undefined || adoption.transcript_bytes > plan.transcript_bytes
        ? Option.none<LastingAgent>()
        : yield* adoptable.adopt(adoption.offset).pipe(
          Effect.tapError((e) => Effect.logWarning(`execution: the agent of run ${plan.run_id} could not be adopted`, e)),
          Effect.option
        )
      yield* releasedUnlessLeft(running, adoptable.sandbox)
      if ("unconfigured" in launch || adoption === undefined || Option.isNone(agent)) {
        yield* Effect.logWarning(`execution: run ${plan.run_id} goes back to the queue: its agent left by an earlier process cannot go on here`)
        return yield* running.record([{ _tag: "HandOver" }])
      }
      const state = withBudget(adoption.state, running.budget)
      // Left again when this process stops, as the process that started it would (if it may).
      const lasting = settings.adoptAgents === true ? agent : Option.none<LastingAgent>()
      const following = { agent: agent.value, lasting, state, startedAt: adoption.started_at }
      const out = AgentSession.adoptedOutput(adoption, host.output(plan.run_id, plan.execution_id), (report) =>
        host.report(plan.run_id, plan.execution_id, report))
      yield* Effect.logInfo(`execution: run ${plan.run_id}'s agent, left running by an earlier process, is adopted`)
      const ended = yield* follow(running, launch, adoptable.sandbox, lost, { ...following, out }).pipe(
        Effect.withSpan("run.agent", { attributes: { ...agentAttributes(plan), "agent_runs.adopted": true } })
      )
      if (Option.isNone(ended)) return
      yield* running.record([outcomeEvent(ended.value.outcome)], ended.value.report)
    })

  /** An execution to its end; whatever fails is logged and ends the run ERROR. */
  const guarded = (plan: ExecutionPlan, execution: Effect.Effect<unknown, Lost | StorageError | ExecutorError, Scope.Scope>) =>
    execution.pipe(
      Effect.asVoid,
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
      Effect.annotateLogs({ run_id: plan.run_id, execution_id: plan.execution_id }),
      Effect.withSpan("run.execution", executionSpan(plan))
    )

  /** Runs one claimed plan to its end. */
  const execute = (plan: ExecutionPlan): Effect.Effect<void, never, Scope.Scope> => guarded(plan, run(plan))

  /** Goes on with an execution an earlier process left running (`runAdopted`) to its end. */
  const adopt = (plan: ExecutionPlan, note: Uint8Array, adoptable: Adoptable): Effect.Effect<void, never, Scope.Scope> =>
    guarded(plan, runAdopted(plan, note, adoptable))

  return { execute, adopt } as const
})
