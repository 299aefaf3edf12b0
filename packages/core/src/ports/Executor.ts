/**
 * Port: where agents run. An executor prepares a sandbox for an execution (repositories, setup
 * commands, attachments), starts the agent harness in it, and hands back its raw stdout; the core
 * turns those bytes into harness events, so every executor behaves alike. Implemented by the
 * process and Docker executors (and, with issue 7, the self-hosted worker bridge).
 *
 * The contract every implementation keeps (the executor conformance suite checks it):
 * - `prepare` makes the sandbox, clones each repository `owner/repo` of the run's team
 *   (`team_uid`: a team uses only its own repositories, never another team's of the same name) into
 *   `<workdir>/<repo>`, writes each attachment into `<workdir>/attachments/<name>`, then runs the
 *   setup commands one by one with `/bin/sh -c` in the work directory with `env` set, stopping at
 *   the first that exits non-zero: `SetupFailed` whose message names the command, its exit code
 *   and the end of its output, with the sandbox kept (the caller releases it or keeps it for a
 *   debug session). A repository that does not exist is a `SetupFailed` too.
 * - `start` runs a command (argv) in the work directory with the sandbox's `env` plus the given
 *   variables; several commands may run one after the other in one sandbox (a debug agent after a
 *   failed setup). Its stdin takes JSON lines; its stdout is the raw transcript; its stderr is not
 *   part of the transcript (executors may log it).
 * - A process that exited by a signal reports `128 + signal number` as its exit code.
 * - `release` stops whatever still runs in the sandbox and removes it; idempotent.
 * - Sandboxes carry their run and execution ids (labels, a marker file), so that `leftovers`
 *   finds those of an earlier life of the service after a crash or restart, and `shared` (an
 *   executor whose place other servers share) those of any server.
 */
import type { Effect, Scope, Stream } from "effect"
import { Context, Data } from "effect"
import type { Redacted } from "effect"
import type { ExecutionId, RunId, TeamUid } from "../domain/Ids.js"

/** What a sandbox is made of. */
export interface SandboxSpec {
  readonly run_id: RunId
  readonly execution_id: ExecutionId
  /** The run's team: the repositories are this team's (a local executor's `<reposDir>/<team_uid>/<owner>/<repo>`). */
  readonly team_uid: TeamUid
  /** The Docker image (the Docker executor's default when null; the process executor ignores it). */
  readonly docker_image: string | null
  /**
   * The repositories to clone into `<workdir>/<repo>`: the team's local ones, or, with `remote`,
   * the Git host's (a team connected to GitHub), through the executor's mirror cache.
   */
  readonly repos: ReadonlyArray<SandboxRepository>
  readonly setup_commands: ReadonlyArray<string>
  readonly attachments: ReadonlyArray<{ readonly name: string; readonly media_type: string; readonly bytes: Uint8Array }>
  /** Environment variables of the setup commands and of every process started in the sandbox. */
  readonly env: Readonly<Record<string, string>>
}

/** A repository on a Git host: its URL (no credential in it) and the token to read it with. */
export interface RepoRemote {
  readonly url: string
  readonly token: Redacted.Redacted<string>
  /** The run's branch: the clone starts from it when the host has it (a follow-up), else from the default branch. */
  readonly branch?: string | undefined
}

/** A repository of a sandbox. */
export interface SandboxRepository {
  readonly owner: string
  readonly repo: string
  /** The branch, tag or commit its clone starts from; the default branch when absent. */
  readonly ref?: string | undefined
  /** Where it comes from when not the team's local repositories: a Git host. */
  readonly remote?: RepoRemote | undefined
}

/** An attachment as the agent sees it: `path` is where the file is inside the sandbox. */
export interface SandboxAttachment {
  readonly name: string
  readonly media_type: string
  readonly path: string
}

/** A setup step failed; the sandbox is kept for a debug session (the caller releases it). */
export class SetupFailed extends Data.TaggedError("SetupFailed")<{
  readonly message: string
  readonly sandbox: Sandbox
}> {}

/** The executor could not do what was asked (engine unreachable, process could not spawn). */
export class ExecutorError extends Data.TaggedError("ExecutorError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

/** A running agent process. */
export interface AgentProcess {
  /** Everything the agent writes to stdout, as it comes: the raw transcript. Ends when stdout closes. */
  readonly stdout: Stream.Stream<Uint8Array, ExecutorError>
  /** Writes one JSON line (`JSON.stringify(message)` and a newline) to the agent's stdin. */
  readonly send: (message: unknown) => Effect.Effect<void, ExecutorError>
  /**
   * Asks the agent to stop what it is doing, as Ctrl-C would (SIGINT to its process group); it may
   * go on. Optional: without it, a stop goes straight to `terminate`.
   */
  readonly interrupt?: Effect.Effect<void>
  /**
   * Stops the agent: SIGTERM, then SIGKILL once `graceMs` have passed; done when it has exited, or
   * when an executor's own bound on the wait after SIGKILL has passed (a process stuck in the
   * kernel), which it logs: a stop never hangs.
   */
  readonly terminate: (graceMs: number) => Effect.Effect<void>
  /** Waits for the agent to exit: its exit code (`128 + n` when killed by signal n). */
  readonly exitCode: Effect.Effect<number, ExecutorError>
}

/**
 * An agent that can outlive the process of the service that started it (`Sandbox.startLasting`),
 * for a deploy to hand it to the next process (docs/deployment.md#adopting-agents-across-a-restart).
 */
export interface LastingAgent extends AgentProcess {
  /**
   * Leaves the agent running: the scope of its start no longer stops it, nor does the sandbox's
   * release by this process happen (the caller skips it), and the next process of the service finds
   * it in `Executor.adoptable`. What it writes meanwhile waits for that process; nothing is lost.
   */
  readonly detach: Effect.Effect<void, ExecutorError>
}

/** An agent that an earlier process of the service left running (`LastingAgent.detach`), in its sandbox. */
export interface Adoptable {
  readonly sandbox: Sandbox
  /**
   * Takes the agent for this process before it is adopted, where several processes may find it
   * (a cluster's namespace): whether this one got it (another may have first). Absent: it is
   * this process's alone (its own place, as Docker's root).
   */
  readonly take?: Effect.Effect<boolean, ExecutorError>
  /**
   * The agent again, its stdout from byte `offset` of all it wrote, its stdin open; stopped when
   * the scope closes unless detached again. Once adopted it is no longer `adoptable`.
   */
  readonly adopt: (offset: number) => Effect.Effect<LastingAgent, ExecutorError, Scope.Scope>
}

/** A prepared sandbox: a work directory or a container. */
export interface Sandbox {
  /** The work directory or the container id. */
  readonly id: string
  readonly run_id: RunId
  /** The execution it was prepared for. */
  readonly execution_id: ExecutionId
  readonly attachments: ReadonlyArray<SandboxAttachment>
  /**
   * Starts `command` (argv) in the sandbox with `env` added to the sandbox's variables; the process
   * is terminated (with a short grace) when the scope closes if it still runs.
   */
  readonly start: (
    command: ReadonlyArray<string>,
    env: Readonly<Record<string, string>>
  ) => Effect.Effect<AgentProcess, ExecutorError, Scope.Scope>
  /**
   * Starts `command` as `start` does, as an agent that can outlive this process of the service
   * (`LastingAgent.detach`): its stdin and stdout do not go through a connection of this process.
   * Absent: the executor's agents end with it (its own processes, an exec's streams).
   */
  readonly startLasting?: (
    command: ReadonlyArray<string>,
    env: Readonly<Record<string, string>>
  ) => Effect.Effect<LastingAgent, ExecutorError, Scope.Scope>
  /** Stops what runs in the sandbox and removes it; idempotent. */
  readonly release: Effect.Effect<void>
  /**
   * Pushes what is committed in the sandbox's clone of `repository` (one with a remote) to its
   * host as `branch`, with the remote's token, from outside the sandbox (nothing of the agent's
   * runs with the credential): whether there was anything beyond the branch the clone started
   * from. Absent: the executor cannot push (its runs cannot open pull requests).
   */
  readonly publish?: (repository: SandboxRepository, branch: string) => Effect.Effect<PublishResult, ExecutorError | PublishFailed>
}

/** What a push did. */
export interface PublishResult {
  readonly pushed: boolean
  /** The commit pushed (or that was already there). */
  readonly head: string
  /** The branch a pull request of it targets: the branch its clone started from; the host's default when absent. */
  readonly base?: string | undefined
}

/** The host refused the push, or it could not be made: the message names why (the host's answer). */
export class PublishFailed extends Data.TaggedError("PublishFailed")<{
  readonly message: string
}> {}

export class Executor extends Context.Tag("@agent-runs/core/Executor")<Executor, {
  /** Prepares a sandbox: repositories, attachments, setup commands. */
  readonly prepare: (spec: SandboxSpec) => Effect.Effect<Sandbox, SetupFailed | ExecutorError>
  /**
   * The sandboxes this executor finds from an earlier life of the service (after a restart), but
   * those of `adoptable` agents.
   */
  readonly leftovers: Effect.Effect<ReadonlyArray<Sandbox>, ExecutorError>
  /**
   * The agents an earlier life of the service left running for this one (`LastingAgent.detach`),
   * or, where processes share a place, for any of them (each then `take`n by one alone). Absent
   * for an executor without `Sandbox.startLasting`.
   */
  readonly adoptable?: Effect.Effect<ReadonlyArray<Adoptable>, ExecutorError>
  /**
   * Every sandbox in the place this executor shares with other servers (a cluster's namespace),
   * whichever server made it: what the sandbox reaper (engine/SandboxReaper.ts) looks through for
   * those whose run ended, moved on or is unknown (a replica that died, a restart that forgot).
   * Absent for an executor whose sandboxes are this server's alone.
   */
  readonly shared?: Effect.Effect<ReadonlyArray<Sandbox>, ExecutorError>
}>() {}
