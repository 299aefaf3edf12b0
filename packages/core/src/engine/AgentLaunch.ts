/**
 * How an execution runs its plan's harness, chosen once per plan (`AgentLaunches.of`): our own
 * `oz` protocol, or an agent CLI through its adapter (CliAgent.ts). The execution (Execution.ts)
 * then follows the launch without asking which one it has.
 *
 * - `oz`: the harness command (the environment's `config.harness`, else the default) runs as
 *   `/bin/sh -c "exec <command>"` in the sandbox and is sent its start message on stdin at once;
 *   its output is our protocol's lines; its outcome is what it reported and its exit code.
 * - An agent CLI: its adapter builds the command of each turn (it has its first message then, and
 *   takes the waiting follow-ups when a turn ends); its output is read with the adapter's decoder;
 *   its session files are saved at the end for a continuation to resume.
 * - A CLI harness without an adapter on this host, or whose auth secret is gone (the plan's
 *   `unconfigured`), has no launch: the run ends FAILED `integration_not_configured`.
 */
import { Effect, Option } from "effect"
import type { Scope } from "effect"
import { eventLines, outcomeOf, type AgentOutcome, type ExecutionState, type LineParser } from "../domain/Harness.js"
import type { McpDirectServer } from "../domain/McpServers.js"
import type { AgentHarness } from "../ports/AgentHarness.js"
import type { AgentProcess, ExecutorError, LastingAgent, Sandbox } from "../ports/Executor.js"
import * as CliAgent from "./CliAgent.js"
import type { ExecutionHostService } from "./ExecutionHost.js"
import type { ExecutionPlan, PlannedAgent } from "./ExecutionPlan.js"
import { startMessage } from "./StartMessage.js"

/** What starting an agent takes, whatever its harness. */
export interface LaunchInput {
  readonly plan: ExecutionPlan
  readonly sandbox: Sandbox
  /** The execution's state, which the output is reduced into. */
  readonly state: ExecutionState
  /** The agent's variables. */
  readonly env: Readonly<Record<string, string>>
  /** The follow-ups it starts with. */
  readonly followups: ReadonlyArray<string>
  /** Takes the follow-ups waiting now (an agent CLI asks when a turn ends). */
  readonly takeFollowups: Effect.Effect<ReadonlyArray<string>>
}

/** How one plan's agent is run. */
export interface AgentLaunch {
  /** Starts the agent, its first message given. */
  readonly start: (input: LaunchInput) => Effect.Effect<AgentProcess, ExecutorError, Scope.Scope>
  /**
   * Starts the agent with the sandbox's `startLasting` (given), its first message given: for an
   * agent that is one process from start to end (ours), which a process of the service may leave
   * running for the next. Absent: the launch's agent is driven turn by turn from here (a CLI's).
   */
  readonly startLasting?: (input: LaunchInput, starter: LastingStarter) => Effect.Effect<LastingAgent, ExecutorError, Scope.Scope>
  /** Reads the agent's output lines; undefined: our protocol's. */
  readonly parse: LineParser | undefined
  /** Keeps what a continuation resumes from, for a harness that has such state; a failure only costs it the resume. */
  readonly keep: Option.Option<(plan: ExecutionPlan, sandbox: Sandbox) => Effect.Effect<void>>
  /** How the run ends, from what the agent reported and its exit code. */
  readonly outcome: (state: ExecutionState, exitCode: number) => AgentOutcome
}

/** A sandbox's `startLasting`. */
export type LastingStarter = NonNullable<Sandbox["startLasting"]>

/** A plan's agent CLI. */
type CliAgentPlan = Exclude<PlannedAgent, { readonly type: "oz" }>

/** What the launches need of their host. */
export interface LaunchSettings {
  readonly host: Pick<ExecutionHostService, "agentState" | "saveAgentState">
  /** The `oz` agent's argv for a plan's harness command (null: the host's default). */
  readonly harnessCommand: (harness: string | null) => ReadonlyArray<string>
  /** The API's base URL, for the `oz` agent's start message. */
  readonly apiBaseUrl: string
  readonly harnesses: ReadonlyMap<string, AgentHarness>
}

/** The launches of a host: `of` chooses a plan's, or says why the plan cannot run here. */
export const make = (settings: LaunchSettings) => {
  const { host } = settings

  /** Starts our agent with `starter` and gives it its start message. */
  const startOz = <A extends AgentProcess>(
    starter: (command: ReadonlyArray<string>, env: Readonly<Record<string, string>>) => Effect.Effect<A, ExecutorError, Scope.Scope>,
    { env, followups, plan, sandbox }: LaunchInput
  ) =>
    starter(settings.harnessCommand(plan.harness), env).pipe(
      Effect.tap((agent) =>
        agent.send(startMessage(plan, sandbox, plan.run_token, settings.apiBaseUrl, "normal", followups)).pipe(Effect.ignore)
      )
    )

  const oz: AgentLaunch = {
    start: (input) => startOz(input.sandbox.start, input),
    startLasting: (input, starter) => startOz(starter, input),
    parse: undefined,
    keep: Option.none(),
    outcome: outcomeOf
  }

  /** A continuation's CLI session and its saved files, when both are there. */
  const resumeOf = (plan: ExecutionPlan, cli: AgentHarness) =>
    Effect.gen(function*() {
      if (plan.resume_session === null || cli.sessionState === undefined) return null
      const state = yield* host.agentState(plan.run_id, plan.execution_id).pipe(
        Effect.catchAll((e) => Effect.as(Effect.logWarning("execution: the agent's session files could not be read", e), Option.none()))
      )
      return Option.isSome(state) ? { session_id: plan.resume_session, state: state.value } : null
    })

  const cliLaunch = (cli: AgentHarness, agent: CliAgentPlan): AgentLaunch => ({
    start: ({ env, followups, plan, sandbox, state, takeFollowups }) =>
      Effect.flatMap(resumeOf(plan, cli), (resume) =>
        CliAgent.start({
          sandbox,
          harness: cli,
          turn: {
            base_prompt: plan.start.base_prompt,
            skill: plan.start.skill,
            model_id: agent.model_id,
            reasoning_level: agent.reasoning_level,
            mcp_servers: plan.start.mcp_servers as Readonly<Record<string, McpDirectServer>>,
            auth: agent.auth,
            attachments: sandbox.attachments
          },
          prompt: plan.start.prompt,
          history: plan.start.history,
          followups,
          resume,
          session: () => state.session?.session_id ?? null,
          env,
          takeFollowups
        })),
    parse: eventLines(cli.decoder()),
    keep: Option.some((plan, sandbox) =>
      CliAgent.archiveState(sandbox, cli).pipe(
        Effect.flatMap(Option.match({
          onNone: () => Effect.void,
          onSome: (state) => host.saveAgentState(plan.run_id, plan.execution_id, state)
        })),
        Effect.catchAll((e) => Effect.logWarning("execution: the agent's session files could not be kept", e))
      )),
    outcome: (state, exitCode) => CliAgent.outcomeOf(cli.type, state, exitCode)
  })

  /** The plan's launch, or why it cannot run on this host. */
  const of = (plan: ExecutionPlan): AgentLaunch | { readonly unconfigured: string } => {
    if (plan.unconfigured !== null) return { unconfigured: plan.unconfigured }
    const { agent } = plan
    if (agent.type === "oz") return oz
    const cli = settings.harnesses.get(agent.type)
    return cli === undefined
      ? { unconfigured: `this server cannot run the ${agent.type} harness: its adapter (@agent-runs/harness-${agent.type}) is not installed` }
      : cliLaunch(cli, agent)
  }

  return { of } as const
}
