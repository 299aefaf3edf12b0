/**
 * An agent started in a pod: its variables written over an exec's stdin into a file its wrapper
 * reads and removes (never argv, which the API server may log, nor the pod's spec), then the agent
 * itself over a second exec whose stdin, stdout and status are the agent's. Signals go through a
 * third exec that reads the agent's pid file and signals its process group (SIGKILL goes to every
 * process of the sandbox's user instead: the agent may rewrite its pid file).
 *
 * A connection that closes without an exit status: after `release` the agent was killed with its
 * pod (128 + 9); otherwise the error says what became of the pod (evicted, deleted, its node gone).
 */
import type { AgentProcess } from "@agent-runs/core/ports/Executor"
import { ExecutorError } from "@agent-runs/core/ports/Executor"
import { Duration, Effect, Option, type Scope } from "effect"
import { Readable } from "node:stream"
import { type Cluster, callOrGone } from "./Cluster.js"
import { open, runToEnd } from "./PodExec.js"
import { inRealTime } from "./WallClock.js"
import { agentCommand, exportsOf, isVariableName, killCommand, signalCommand, writeEnvCommand } from "./Shell.js"

/** How long a stop waits after SIGKILL before it gives up on the agent (and logs it). */
const KILL_WAIT_MS = 10_000
/** Grace of an agent still running when the scope of `start` closes. */
export const SCOPE_GRACE_MS = 2_000
/** The exit code of an agent killed by SIGKILL. */
export const SIGKILL_EXIT = 128 + 9

export interface PodAgentOptions {
  readonly cluster: Cluster
  readonly pod: string
  readonly command: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
  /** Whether the sandbox was released (its pod deleted on purpose). */
  readonly released: () => boolean
}

/**
 * What became of the pod once its agent's exec ended badly: none while it still runs (the agent's
 * own failure), else why it is lost (deleted, evicted, its node gone).
 */
export const lossOf = (cluster: Cluster, pod: string): Effect.Effect<Option.Option<string>> =>
  podLoss(cluster, pod).pipe(Effect.orElseSucceed(() => Option.some(`the connection to the agent's pod ${pod} was lost`)))

/** What became of the pod, as `lossOf`, but failing when the pod cannot be read (what became of it is not known). */
export const podLoss = (cluster: Cluster, pod: string): Effect.Effect<Option.Option<string>, ExecutorError> =>
  callOrGone(`read pod ${pod}`, () => cluster.core.readNamespacedPod({ name: pod, namespace: cluster.namespace })).pipe(
    Effect.map(Option.match({
      onNone: () => Option.some(`the agent's pod ${pod} is gone (deleted, evicted or its node lost)`),
      onSome: (found) => {
        const status = found.status
        if (status?.phase === "Running" && found.metadata?.deletionTimestamp === undefined) return Option.none()
        const why = [status?.reason, status?.message].filter((part) => part !== undefined && part !== "").join(": ")
        return Option.some(`the agent's pod ${pod} was lost (${status?.phase ?? "in an unknown phase"}${why === "" ? "" : `, ${why}`})`)
      }
    }))
  )

/** A new agent's tag: the names of its files in the pod's control directory (Shell.ts). */
export const newTag = (): string => `agent-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`

/** Refuses an empty command and a variable's name the shell would not take. */
export const checkCommand = (command: ReadonlyArray<string>, env: Readonly<Record<string, string>>) =>
  Effect.gen(function*() {
    if (command.length === 0) return yield* new ExecutorError({ message: "cannot start an empty command" })
    const invalid = Object.keys(env).find((name) => !isVariableName(name))
    if (invalid !== undefined) return yield* new ExecutorError({ message: `${JSON.stringify(invalid)} cannot be the name of a variable` })
  })

/** Writes the agent `tag`'s variables into its file in the pod (over an exec's stdin), when it has any. */
export const handOverVariables = (cluster: Cluster, pod: string, tag: string, env: Readonly<Record<string, string>>) =>
  Effect.gen(function*() {
    if (Object.keys(env).length === 0) return
    const written = yield* runToEnd(cluster, pod, writeEnvCommand(tag), Readable.from([Buffer.from(exportsOf(env))]))
    if (written.exitCode !== 0) {
      return yield* new ExecutorError({ message: `cannot hand the agent its variables in pod ${pod}: ${written.output.trim()}` })
    }
  })

/**
 * How the agent `tag` is stopped: `interrupt` (SIGINT), `terminate` (SIGTERM, then after
 * `graceMs` SIGKILL to every process of the sandbox's user), given whether it has ended and its
 * exit code.
 */
export const controlsOf = (options: {
  readonly cluster: Cluster
  readonly pod: string
  readonly tag: string
  readonly ended: Effect.Effect<boolean>
  readonly exitCode: Effect.Effect<number, ExecutorError>
}): { readonly interrupt: Effect.Effect<void>; readonly terminate: AgentProcess["terminate"] } => {
  const { cluster, ended, exitCode, pod, tag } = options
  const signal = (name: "INT" | "TERM") => runToEnd(cluster, pod, signalCommand(tag, name)).pipe(Effect.ignore)
  const kill = runToEnd(cluster, pod, killCommand).pipe(Effect.ignore)
  const terminate = (graceMs: number) =>
    Effect.gen(function*() {
      if (yield* ended) return
      yield* signal("TERM")
      if (Option.isSome(yield* Effect.option(Effect.timeout(exitCode, Duration.millis(graceMs))))) return
      yield* kill
      const killed = yield* Effect.option(Effect.timeout(exitCode, Duration.millis(KILL_WAIT_MS)))
      if (Option.isNone(killed)) yield* Effect.logWarning(`the agent in pod ${pod} did not end ${KILL_WAIT_MS} ms after SIGKILL`)
    }).pipe(Effect.ignore, inRealTime)
  const interrupt = Effect.gen(function*() {
    if (!(yield* ended)) yield* signal("INT")
  }).pipe(inRealTime)
  return { interrupt, terminate }
}

/** Starts the agent; it is stopped (with a short grace) when the scope closes if it still runs. */
export const startAgent = (options: PodAgentOptions): Effect.Effect<AgentProcess, ExecutorError, Scope.Scope> =>
  Effect.gen(function*() {
    const { cluster, pod } = options
    yield* checkCommand(options.command, options.env)
    const tag = newTag()
    yield* handOverVariables(cluster, pod, tag, options.env)
    const process = yield* open(cluster, pod, agentCommand(tag, options.command), { stdin: true })
    const stdin = process.stdin!
    stdin.on("error", () => undefined)
    // A process killed with its pod: after a release, as by SIGKILL; otherwise the pod's loss is
    // the error, whether the connection closed or the process was killed with its container.
    const lost = (code: number) =>
      Effect.flatMap(lossOf(cluster, pod), Option.match({
        onNone: () => code < 0 ? Effect.fail(new ExecutorError({ message: `the connection to the agent's pod ${pod} was lost` })) : Effect.succeed(code),
        onSome: (message) => Effect.fail(new ExecutorError({ message }))
      }))
    // Not memoized: a wait cut short by a timeout must not be remembered as the outcome.
    const exitCode = process.exitCode.pipe(
      Effect.catchTag("Lost", () => options.released() ? Effect.succeed(SIGKILL_EXIT) : lost(-1)),
      Effect.flatMap((code) => code === 0 || options.released() ? Effect.succeed(code) : lost(code))
    )
    const send = (message: unknown) =>
      Effect.async<void, ExecutorError>((resume) => {
        stdin.write(`${JSON.stringify(message)}\n`, (cause) =>
          resume(cause ? Effect.fail(new ExecutorError({ message: `cannot write to the agent's stdin: ${cause.message}`, cause })) : Effect.void))
      })
    const { interrupt, terminate } = controlsOf({ cluster, pod, tag, ended: process.ended, exitCode })
    yield* Effect.addFinalizer(() => terminate(SCOPE_GRACE_MS))
    const agent: AgentProcess = { stdout: process.stdout, send, interrupt, terminate, exitCode }
    return agent
  })
