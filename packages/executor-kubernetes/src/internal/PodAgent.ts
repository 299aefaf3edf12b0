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
const SCOPE_GRACE_MS = 2_000
const SIGKILL_EXIT = 128 + 9

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
const lossOf = (cluster: Cluster, pod: string): Effect.Effect<Option.Option<string>> =>
  callOrGone(`read pod ${pod}`, () => cluster.core.readNamespacedPod({ name: pod, namespace: cluster.namespace })).pipe(
    Effect.map(Option.match({
      onNone: () => Option.some(`the agent's pod ${pod} is gone (deleted, evicted or its node lost)`),
      onSome: (found) => {
        const status = found.status
        if (status?.phase === "Running" && found.metadata?.deletionTimestamp === undefined) return Option.none()
        const why = [status?.reason, status?.message].filter((part) => part !== undefined && part !== "").join(": ")
        return Option.some(`the agent's pod ${pod} was lost (${status?.phase ?? "in an unknown phase"}${why === "" ? "" : `, ${why}`})`)
      }
    })),
    Effect.orElseSucceed(() => Option.some(`the connection to the agent's pod ${pod} was lost`))
  )

/** Starts the agent; it is stopped (with a short grace) when the scope closes if it still runs. */
export const startAgent = (options: PodAgentOptions): Effect.Effect<AgentProcess, ExecutorError, Scope.Scope> =>
  Effect.gen(function*() {
    const { cluster, pod } = options
    if (options.command.length === 0) return yield* new ExecutorError({ message: "cannot start an empty command" })
    const invalid = Object.keys(options.env).find((name) => !isVariableName(name))
    if (invalid !== undefined) return yield* new ExecutorError({ message: `${JSON.stringify(invalid)} cannot be the name of a variable` })
    const tag = `agent-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`
    if (Object.keys(options.env).length > 0) {
      const written = yield* runToEnd(cluster, pod, writeEnvCommand(tag), Readable.from([Buffer.from(exportsOf(options.env))]))
      if (written.exitCode !== 0) {
        return yield* new ExecutorError({ message: `cannot hand the agent its variables in pod ${pod}: ${written.output.trim()}` })
      }
    }
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
    const signal = (name: "INT" | "TERM") => runToEnd(cluster, pod, signalCommand(tag, name)).pipe(Effect.ignore)
    const kill = runToEnd(cluster, pod, killCommand).pipe(Effect.ignore)
    const terminate = (graceMs: number) =>
      Effect.gen(function*() {
        if (yield* process.ended) return
        yield* signal("TERM")
        if (Option.isSome(yield* Effect.option(Effect.timeout(exitCode, Duration.millis(graceMs))))) return
        yield* kill
        const killed = yield* Effect.option(Effect.timeout(exitCode, Duration.millis(KILL_WAIT_MS)))
        if (Option.isNone(killed)) yield* Effect.logWarning(`the agent in pod ${pod} did not end ${KILL_WAIT_MS} ms after SIGKILL`)
      }).pipe(Effect.ignore, inRealTime)
    const interrupt = Effect.gen(function*() {
      if (!(yield* process.ended)) yield* signal("INT")
    }).pipe(inRealTime)
    yield* Effect.addFinalizer(() => terminate(SCOPE_GRACE_MS))
    const agent: AgentProcess = { stdout: process.stdout, send, interrupt, terminate, exitCode }
    return agent
  })
