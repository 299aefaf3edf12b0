/**
 * An agent CLI (ports/AgentHarness.ts) as the one agent process of an execution: each turn is a
 * process of the CLI started in the sandbox as its adapter says, their outputs one stream (the
 * run's transcript). The execution loop drives it like any agent: it reads its output, sends it
 * follow-ups and the cancel message, and waits for its end.
 *
 * - Turns: the first runs the first message; a follow-up received meanwhile (or waiting when the
 *   turn ends) runs as the next turn, resuming the CLI's session (the one its output reported). The
 *   CLI is done when a turn ends with nothing waiting, or fails (its exit code is the agent's).
 * - Each turn's files are written into the agent's home first, by a small shell command that
 *   decodes them from base64 on its stdin (every sandbox has `/bin/sh`, `head`, `tr` and
 *   `base64`); the command then runs with `HOME`, the XDG directories and `TMPDIR` in that home,
 *   so the CLI keeps its state, settings and temporary files there (some write reports to the
 *   temporary directory, readable by all users of a shared `/tmp`) and reads nothing of the host's.
 * - Cancel: the CLI's own interrupt (SIGINT, as Ctrl-C) on the cancel message; the loop then
 *   terminates it (SIGTERM, SIGKILL) once the grace period has passed. No turn starts after it.
 * - A continued run (a new execution in a new sandbox) resumes the CLI's session: the session files
 *   the last execution left (`archiveState`, the adapter's `sessionState` paths, kept by the host)
 *   are restored into the new agent's home first, and the adapter's `afterRestore` finds the
 *   session among them. Without them (not kept, too large, a restore that failed, the session's
 *   files gone, a CLI without `sessionState`) it starts a new session whose first message tells
 *   the task and the conversation so far.
 */
import { Deferred, Duration, Effect, Either, Encoding, Fiber, Option, Queue, Stream, Take } from "effect"
import type { Scope } from "effect"
import type { AgentOutcome, ExecutionState, HistoryMessage } from "../domain/Harness.js"
import { outcomeOf as agentOutcomeOf } from "../domain/Harness.js"
import type { CliHarnessType } from "../domain/HarnessSelection.js"
import { AGENT_HOME } from "../ports/AgentHarness.js"
import type { AgentHarness, HarnessLaunch, HarnessTurn, SessionState } from "../ports/AgentHarness.js"
import { concatBytes } from "../internal/Bytes.js"
import { type AgentProcess, ExecutorError, type Sandbox } from "../ports/Executor.js"

/** How long the output of a turn that exited is still read. */
const DRAIN_MS = 2_000

/** Starts the command of a launch with the agent's home: `sh -c SCRIPT agent STDIN COMMAND…`. */
const LAUNCH_SCRIPT = [
  `export HOME="$(pwd)/${AGENT_HOME}"`,
  `export XDG_CONFIG_HOME="$HOME/.config" XDG_DATA_HOME="$HOME/.local/share" XDG_STATE_HOME="$HOME/.local/state" XDG_CACHE_HOME="$HOME/.cache"`,
  `export TMPDIR="$HOME/.tmp"`,
  `mkdir -p "$TMPDIR"`,
  `s="$1"; shift`,
  `if [ -n "$s" ]; then exec "$@" < "$HOME/$s"; else exec "$@" < /dev/null; fi`
].join("\n")

/**
 * The helper scripts find their tools on a fixed PATH: the environment's variables (which may set
 * PATH) and the sandbox's files are the run's, and must not replace `head` or `tar` under them.
 */
const SAFE_PATH = "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/** How long a helper command may take (writing a file, restoring or archiving session files). */
const HELPER_TIMEOUT_MS = 120_000

/** Writes one file into the agent's home from a base64 line on stdin: `sh -c SCRIPT write PATH`. */
const WRITE_SCRIPT = [
  SAFE_PATH,
  "umask 077",
  `f="$(pwd)/${AGENT_HOME}/$1"`,
  // Whatever is there (a FIFO, a symlink the agent left) is replaced, never written through.
  `mkdir -p "$(dirname "$f")" && rm -rf "$f" && head -n 1 | tr -d '"' | base64 -d > "$f"`
].join("\n")

/** Exports the agent's home as the launch script does. */
const HOME_EXPORT = LAUNCH_SCRIPT.split("\n").slice(0, 4).join("\n")

/**
 * Restores session files: `sh -c SCRIPT restore LINES AFTER SESSION`, the gzipped tar in base64 on
 * stdin (LINES JSON strings), then the harness's script to run after a restore, given the session
 * (exit code 3: the session cannot be resumed from the restored files). That script runs the CLI
 * as a turn would, so with the sandbox's PATH (where the CLI is found), not the helper's.
 */
const RESTORE_SCRIPT = [
  HOME_EXPORT,
  `p="$PATH"`,
  SAFE_PATH,
  `head -n "$1" | tr -d '"' | base64 -d | tar -xzf - -C "$HOME" || exit 1`,
  `PATH="$p" /bin/sh -c "$2" after-restore "$3" || exit 3`
].join("\n")

/** A session id the restore passes to the harness's script (which may put it in a file name or a query). */
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$/

/** Archives the session paths that exist (`sh -c SCRIPT archive PATH…`): a gzipped tar, in base64, on stdout. */
const ARCHIVE_SCRIPT = [
  SAFE_PATH,
  `cd "$(pwd)/${AGENT_HOME}" 2>/dev/null || exit 0`,
  `for p in "$@"; do shift; [ -e "$p" ] && set -- "$@" "$p"; done`,
  `[ $# -gt 0 ] || exit 0`,
  `tar -czf - "$@" | base64`
].join("\n")

/** The most session state kept for a continuation (larger: the continuation starts a new session). */
export const MAX_AGENT_STATE_BYTES = 16 * 1024 * 1024

/** The argv that starts a launch. */
export const launchCommand = (launch: HarnessLaunch): Array<string> => [
  "/bin/sh",
  "-c",
  LAUNCH_SCRIPT,
  "agent",
  launch.stdin ?? "",
  ...launch.command
]

const safePath = (path: string) =>
  path !== "" && !path.startsWith("/") && path.split("/").every((part) => part !== "" && part !== "." && part !== "..")

/** Writes a launch's files into the agent's home. */
const writeFiles = (sandbox: Sandbox, files: HarnessLaunch["files"]) =>
  Effect.forEach(files, (file) =>
    Effect.scoped(Effect.gen(function*() {
      if (!safePath(file.path)) return yield* new ExecutorError({ message: `the harness asked for a file outside the agent's home: ${file.path}` })
      const writer = yield* sandbox.start(["/bin/sh", "-c", WRITE_SCRIPT, "write", file.path], {})
      yield* writer.stdout.pipe(Stream.runDrain, Effect.ignore, Effect.forkScoped)
      yield* writer.send(Encoding.encodeBase64(file.content))
      const code = yield* writer.exitCode.pipe(
        Effect.timeoutFail({
          duration: Duration.millis(HELPER_TIMEOUT_MS),
          onTimeout: () => new ExecutorError({ message: `writing ${file.path} into the agent's home did not finish` })
        })
      )
      if (code !== 0) return yield* new ExecutorError({ message: `could not write ${file.path} into the agent's home (exit code ${code})` })
    })), { discard: true })

/** Runs a helper command in the sandbox to its end: its stdout (at most `limit` bytes) and exit code. */
const runHelper = (sandbox: Sandbox, argv: ReadonlyArray<string>, lines: ReadonlyArray<string>, limit: number) =>
  Effect.scoped(Effect.gen(function*() {
    const helper = yield* sandbox.start(argv, {})
    let size = 0
    const chunks: Array<Uint8Array> = []
    const reading = yield* helper.stdout.pipe(
      Stream.runForEach((chunk) => Effect.suspend(() => {
        size += chunk.length
        if (size <= limit) chunks.push(chunk)
        // Too much: the helper is stopped, and no more is read.
        return size > limit ? helper.terminate(1_000).pipe(Effect.zipRight(Effect.interrupt)) : Effect.void
      })),
      Effect.ignore,
      Effect.fork
    )
    for (const line of lines) yield* helper.send(line)
    // Past its time, the helper is stopped when the scope closes.
    const code = yield* helper.exitCode.pipe(
      Effect.timeoutFail({
        duration: Duration.millis(HELPER_TIMEOUT_MS),
        onTimeout: () => new ExecutorError({ message: `a helper command of the agent did not finish within ${HELPER_TIMEOUT_MS / 1000} s` })
      })
    )
    yield* Fiber.join(reading).pipe(Effect.timeoutOption(Duration.millis(DRAIN_MS)))
    return { code, output: size <= limit ? chunks : undefined }
  }))

/** Restores a CLI's session files into the agent's home of a new sandbox, ready to resume `session`. */
const restoreState = (sandbox: Sandbox, state: SessionState, bytes: Uint8Array, session: string) =>
  Effect.gen(function*() {
    if (!SESSION_ID.test(session)) return yield* new ExecutorError({ message: `the session id ${JSON.stringify(session)} cannot be resumed` })
    const text = Encoding.encodeBase64(bytes)
    const lines: Array<string> = []
    for (let i = 0; i < text.length; i += 65_536) lines.push(text.slice(i, i + 65_536))
    const { code } = yield* runHelper(
      sandbox,
      ["/bin/sh", "-c", RESTORE_SCRIPT, "restore", String(lines.length), state.afterRestore ?? ":", session],
      lines,
      0
    )
    if (code === 3) {
      return yield* new ExecutorError({ message: `the session ${session} cannot be resumed from the agent's restored session files (not among them, or the adapter's afterRestore failed)` })
    }
    if (code !== 0) return yield* new ExecutorError({ message: `restoring the agent's session files failed (exit code ${code})` })
  })

/** The CLI's session files in the sandbox now (a gzipped tar), if any and not too large. */
export const archiveState = (sandbox: Sandbox, harness: AgentHarness): Effect.Effect<Option.Option<Uint8Array>, ExecutorError> =>
  Effect.gen(function*() {
    const state = harness.sessionState
    if (state === undefined) return Option.none()
    const { code, output } = yield* runHelper(
      sandbox,
      ["/bin/sh", "-c", ARCHIVE_SCRIPT, "archive", ...state.paths],
      [],
      Math.ceil(MAX_AGENT_STATE_BYTES * 4 / 3) + 1024 * 1024
    )
    if (code !== 0 || output === undefined) return Option.none()
    const text = new TextDecoder().decode(concatBytes(output)).replace(/\s+/g, "")
    if (text === "") return Option.none()
    return yield* Either.match(Encoding.decodeBase64(text), {
      onLeft: () => Effect.fail(new ExecutorError({ message: "the agent's session archive is not valid base64" })),
      onRight: (archive) => Effect.succeed(Option.some(archive))
    })
  })

/**
 * How an agent CLI's execution ended: as for any agent (Harness.outcomeOf), but an exit the CLI
 * said nothing about is told so that the message says what to fix.
 */
export const outcomeOf = (type: CliHarnessType, state: ExecutionState, exitCode: number): AgentOutcome => {
  const outcome = agentOutcomeOf(state, exitCode)
  if (outcome._tag !== "Failed" || state.outcome !== undefined || state.violation !== undefined || state.exceeded !== undefined) return outcome
  const message = exitCode === 127
    ? `the ${type} CLI was not found in the sandbox (exit code 127): run on the agent image (docs/execution.md), or install the CLI where the sandbox's PATH finds it`
    : exitCode === 126
    ? `the ${type} CLI could not be executed in the sandbox (exit code 126): check that its command is executable by the sandbox's user`
    : exitCode > 128
    ? `the ${type} CLI was killed by signal ${exitCode - 128} without reporting a result (see the run's transcript)`
    : `the ${type} CLI exited with code ${exitCode} without reporting a result (see the run's transcript)`
  return { _tag: "Failed", error_code: "agent_failed", message }
}

/** The earlier conversation of a run, as text for a CLI that starts a new session in a continuation. */
export const historyText = (history: ReadonlyArray<HistoryMessage>): string =>
  history
    .flatMap((m) =>
      m.content.flatMap((block) =>
        block.type === "text" && block.text.trim() !== "" ? [`${m.role === "user" ? "User" : "Assistant"}: ${block.text.trim()}`] : []
      )
    )
    .join("\n\n")

/** The first message of an execution: the prompt, or in a continuation the earlier conversation and what is new. */
export const firstMessage = (
  prompt: string,
  history: ReadonlyArray<HistoryMessage>,
  followups: ReadonlyArray<string>
): { readonly message: string; readonly queued: ReadonlyArray<string> } => {
  if (history.length === 0) return { message: prompt, queued: followups }
  const earlier = historyText(history)
  const now = followups.filter((m) => m.trim() !== "").join("\n\n")
  return {
    message: [
      "This continues an earlier conversation of this task.",
      `The task: ${prompt}`,
      ...(earlier === "" ? [] : ["What was said so far:", earlier]),
      now === "" ? "Continue the task from where it stopped." : `The new message: ${now}`
    ].join("\n\n"),
    queued: []
  }
}

export interface CliAgentOptions {
  readonly sandbox: Sandbox
  readonly harness: AgentHarness
  /** What every turn carries besides its message and session. */
  readonly turn: Omit<HarnessTurn, "message" | "session_id">
  readonly prompt: string
  /** The conversation of the run's earlier executions (a continuation). */
  readonly history: ReadonlyArray<HistoryMessage>
  /** Follow-ups waiting at the start. */
  readonly followups: ReadonlyArray<string>
  /** In a continuation: the CLI's session of the earlier executions and its saved files. */
  readonly resume: { readonly session_id: string; readonly state: Uint8Array } | null
  /** The CLI session the output reported so far (the execution's state); null before it did. */
  readonly session: () => string | null
  /** Variables of every process (the agent's, from the loop). */
  readonly env: Readonly<Record<string, string>>
  /** Takes the follow-ups waiting now (asked when a turn ends). */
  readonly takeFollowups: Effect.Effect<ReadonlyArray<string>>
}

/** Starts the CLI's first turn; the agent lives until its last turn ends or the scope closes. */
export const start = (options: CliAgentOptions): Effect.Effect<AgentProcess, ExecutorError, Scope.Scope> =>
  Effect.gen(function*() {
    const { harness, sandbox } = options
    const output = yield* Queue.bounded<Take.Take<Uint8Array, ExecutorError>>(16)
    const exited = yield* Deferred.make<number, ExecutorError>()
    // A continuation resumes the CLI's session when its files could be restored; else it starts
    // a new session told the conversation so far.
    const resumed = options.resume !== null && harness.sessionState !== undefined
      ? yield* restoreState(sandbox, harness.sessionState, options.resume.state, options.resume.session_id).pipe(
        Effect.as(options.resume.session_id),
        Effect.catchAll((e) => Effect.as(Effect.logWarning(`agent CLI: ${e.message}; starting a new session`), null))
      )
      : null
    const first = resumed === null
      ? firstMessage(options.prompt, options.history, options.followups)
      : {
        message: options.followups.filter((m) => m.trim() !== "").join("\n\n") || "Continue the task from where it stopped.",
        queued: []
      }
    const waiting: Array<string> = [...first.queued]
    let current: AgentProcess | undefined
    let stopping = false

    const launchTurn = (message: string) =>
      Effect.gen(function*() {
        const launch = harness.launch({ ...options.turn, message, session_id: options.session() ?? resumed })
        yield* writeFiles(sandbox, launch.files)
        return yield* sandbox.start(launchCommand(launch), { ...options.env, ...launch.env })
      })

    /** Runs one turn to its end: its exit code. */
    const turn = (process: AgentProcess) =>
      Effect.gen(function*() {
        current = process
        const forwarding = yield* process.stdout.pipe(
          Stream.runForEach((chunk) => Queue.offer(output, Take.of(chunk))),
          Effect.catchAll((e) => Queue.offer(output, Take.fail(e))),
          Effect.fork
        )
        const code = yield* process.exitCode.pipe(Effect.orElseSucceed(() => 1))
        const drained = yield* Fiber.join(forwarding).pipe(Effect.timeoutOption(Duration.millis(DRAIN_MS)))
        if (Option.isNone(drained)) yield* Fiber.interrupt(forwarding)
        return code
      })

    const started = yield* launchTurn(first.message)
    yield* Effect.gen(function*() {
      let code = yield* turn(started)
      while (code === 0 && !stopping) {
        waiting.push(...(yield* options.takeFollowups))
        if (waiting.length === 0 || stopping) break
        const message = waiting.splice(0, waiting.length).join("\n\n")
        code = yield* Effect.scoped(Effect.flatMap(launchTurn(message), turn))
      }
      return code
    }).pipe(
      Effect.exit,
      // The exit first: the end of the output waits for a reader, which may have gone.
      Effect.flatMap((exit) => Deferred.complete(exited, exit).pipe(Effect.zipRight(Queue.offer(output, Take.end)))),
      Effect.forkScoped
    )

    const agent: AgentProcess = {
      stdout: Stream.fromQueue(output).pipe(Stream.flattenTake),
      send: (message) =>
        Effect.sync(() => {
          const m = message as { readonly type?: unknown; readonly message?: unknown }
          if (m.type === "followup" && typeof m.message === "string") waiting.push(m.message)
          if (m.type === "cancel") stopping = true
        }).pipe(Effect.zipRight(Effect.suspend(() => (stopping && current?.interrupt !== undefined ? current.interrupt : Effect.void)))),
      interrupt: Effect.suspend(() => current?.interrupt ?? Effect.void),
      terminate: (graceMs) =>
        Effect.suspend(() => {
          stopping = true
          return current === undefined ? Effect.void : current.terminate(graceMs)
        }).pipe(Effect.zipRight(Deferred.await(exited).pipe(Effect.ignore))),
      exitCode: Deferred.await(exited)
    }
    return agent
  })
