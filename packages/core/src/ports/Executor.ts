/**
 * Port: where agents run. An executor prepares a sandbox for an execution (repositories, setup
 * commands, attachments), starts the agent harness in it, and hands back its raw stdout; the core
 * turns those bytes into harness events, so every executor behaves alike. Implemented by the
 * process and Docker executors and the self-hosted worker bridge.
 */
import type { Effect, Scope, Stream } from "effect"
import { Context, Data } from "effect"
import type { ExecutionId, RunId } from "../Ids.js"

/** What a sandbox is made of. */
export interface SandboxSpec {
  readonly run_id: RunId
  readonly execution_id: ExecutionId
  readonly docker_image: string | null
  readonly repos: ReadonlyArray<{ readonly owner: string; readonly repo: string }>
  readonly setup_commands: ReadonlyArray<string>
  readonly attachments: ReadonlyArray<{ readonly name: string; readonly media_type: string; readonly bytes: Uint8Array }>
  readonly env: Readonly<Record<string, string>>
}

/** A setup step failed; the sandbox may be kept for a debug session. */
export class SetupFailed extends Data.TaggedError("SetupFailed")<{
  readonly message: string
  readonly sandbox: Sandbox | null
}> {}

/** The executor could not do what was asked (engine unreachable, process could not spawn). */
export class ExecutorError extends Data.TaggedError("ExecutorError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

/** A running agent process. */
export interface AgentProcess {
  /** Everything the agent writes to stdout: the raw transcript. */
  readonly stdout: Stream.Stream<Uint8Array, ExecutorError>
  /** Sends one JSON line to the agent's stdin. */
  readonly send: (message: unknown) => Effect.Effect<void, ExecutorError>
  /** Stops the agent: SIGTERM, then SIGKILL once `graceMs` have passed. */
  readonly terminate: (graceMs: number) => Effect.Effect<void>
  /** The exit code, once the agent has exited. */
  readonly exitCode: Effect.Effect<number, ExecutorError>
}

/** A prepared sandbox: a work directory or a container. */
export interface Sandbox {
  readonly id: string
  /** Starts the harness command in the sandbox; the process is stopped when the scope closes. */
  readonly start: (command: ReadonlyArray<string>) => Effect.Effect<AgentProcess, ExecutorError, Scope.Scope>
  /** Removes the sandbox. */
  readonly release: Effect.Effect<void>
}

export class Executor extends Context.Tag("@agent-runs/core/Executor")<Executor, {
  /** Prepares a sandbox: repositories, attachments, setup commands. */
  readonly prepare: (spec: SandboxSpec) => Effect.Effect<Sandbox, SetupFailed | ExecutorError>
  /** Sandboxes left over from before a restart, by the execution they belong to. */
  readonly leftovers: Effect.Effect<ReadonlyArray<{ readonly execution_id: ExecutionId; readonly sandbox: Sandbox }>, ExecutorError>
}>() {}
