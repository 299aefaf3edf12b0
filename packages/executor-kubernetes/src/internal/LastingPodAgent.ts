/**
 * A lasting agent in a pod (`Sandbox.startLasting`): one that outlives the server's process, so
 * that a deploy can leave it running and the next process adopt it. An exec's streams die with its
 * connection, so the agent is not an exec's process: a launching exec starts it in the background
 * over files of the pod (Shell.ts `launchLastingCommand`): its stdin a FIFO, its stdout a file,
 * its exit status a file written once it ends. The server talks to it through short execs:
 *
 * - stdout: `tail -f` of the file from a byte offset, counted as it comes, until the agent has
 *   ended; then the rest of the file from the count. A follow that ends early (its connection
 *   lost, its `tail` killed) is started again from the count: nothing is lost or said twice.
 * - stdin: each message over an exec appending it to the FIFO, one at a time, each whole before
 *   the next (and before a detach).
 * - exit: an exec that waits for the status file (or for the agent's process to be gone without
 *   one: killed), started again while the pod still runs when its connection is lost.
 * - detach: the executor's `leave` marks the sandbox's Job (an annotation the next process looks
 *   for); the agent runs on, writing to its file.
 *
 * An image without `mkfifo` or `tail` cannot have lasting agents: the agent is started as any
 * (PodAgent.ts), and leaving it fails, so the engine hands its run over at a deploy instead.
 */
import type { AgentProcess, LastingAgent } from "@agent-runs/core/ports/Executor"
import { ExecutorError } from "@agent-runs/core/ports/Executor"
import { Deferred, Duration, Effect, Option, type Scope, Stream } from "effect"
import { Readable } from "node:stream"
import { checkCommand, controlsOf, handOverVariables, lossOf, newTag, type PodAgentOptions, SCOPE_GRACE_MS, SIGKILL_EXIT, startAgent } from "./PodAgent.js"
import { open, runToEnd } from "./PodExec.js"
import {
  agentCommand,
  followLastingCommand,
  LASTING_GONE,
  LASTING_UNSUPPORTED,
  launchLastingCommand,
  readLastingCommand,
  sendLastingCommand,
  waitLastingCommand
} from "./Shell.js"
import { inRealTime } from "./WallClock.js"

export interface LastingPodAgentOptions {
  readonly cluster: PodAgentOptions["cluster"]
  readonly pod: string
  /** Whether the sandbox was released (its pod deleted on purpose). */
  readonly released: () => boolean
  /** Marks the agent `tag` as left for the next process (the executor's: an annotation of its Job). */
  readonly leave: (tag: string) => Effect.Effect<void, ExecutorError>
}

/** How long a lost wait or an ended follow waits before it starts again. */
const AGAIN = Duration.seconds(1)

/** Its exit status: what the waiting exec printed, or none when it must be waited for again. */
const exitOf = (options: LastingPodAgentOptions, tag: string): Effect.Effect<Option.Option<number>, ExecutorError> =>
  Effect.gen(function*() {
    const { cluster, pod } = options
    const waited = yield* Effect.either(runToEnd(cluster, pod, waitLastingCommand(tag)))
    if (waited._tag === "Right" && waited.right.exitCode === 0) {
      const said = waited.right.output.trim()
      if (said === LASTING_GONE) return Option.some(SIGKILL_EXIT)
      if (/^\d{1,3}$/.test(said)) return Option.some(Number(said))
      return yield* new ExecutorError({ message: `the exit status of the agent in pod ${pod} is not a number: ${JSON.stringify(said.slice(0, 100))}` })
    }
    // The waiting shell was killed (with every process of the sandbox's user) or its connection lost.
    if (options.released()) return Option.some(SIGKILL_EXIT)
    const loss = yield* lossOf(cluster, pod)
    if (Option.isSome(loss)) return yield* new ExecutorError({ message: loss.value })
    return Option.none()
  })

/** Waits for the agent's exit status for as long as its pod runs. */
const exitCodeOf = (options: LastingPodAgentOptions, tag: string): Effect.Effect<number, ExecutorError> =>
  Effect.flatMap(exitOf(options, tag), Option.match({
    onSome: Effect.succeed,
    onNone: () => Effect.zipRight(Effect.sleep(AGAIN), Effect.suspend(() => exitCodeOf(options, tag)))
  }))

/**
 * What the agent writes from byte `from` on: follows while it runs (again from the count when a
 * follow ends early), then the rest once `exit` is done, unless it failed (the pod is lost: the
 * exit code says so).
 */
const outputOf = (options: LastingPodAgentOptions, tag: string, from: number, exit: Deferred.Deferred<number, ExecutorError>) =>
  Stream.suspend(() => {
    const { cluster, pod } = options
    let at = from
    const counted = (stdout: Stream.Stream<Uint8Array, ExecutorError>) =>
      Stream.tap(stdout, (chunk) => Effect.sync(() => void (at += chunk.length)))
    const pieces: Stream.Stream<Uint8Array, ExecutorError> = Stream.suspend(() => {
      let last = false
      const piece = Stream.unwrapScoped(Effect.gen(function*() {
        const ended = yield* Deferred.poll(exit)
        last = Option.isSome(ended)
        if (Option.isSome(ended)) {
          if ((yield* Effect.either(ended.value))._tag === "Left") return Stream.empty
          return counted((yield* open(cluster, pod, readLastingCommand(tag, at), { stdin: false })).stdout)
        }
        const follow = yield* open(cluster, pod, followLastingCommand(tag, at), { stdin: false })
        return counted(Stream.interruptWhen(follow.stdout, Effect.ignore(Deferred.await(exit))))
      }))
      const pause = Stream.drain(Stream.fromEffect(inRealTime(Effect.sleep(Duration.millis(200)))))
      return Stream.concat(piece, Stream.suspend(() => last ? Stream.empty : Stream.concat(pause, pieces)))
    })
    return pieces
  })

/** The lasting agent `tag`, its stdout from byte `from`: stopped when the scope closes unless it was detached. */
const lastingAgent = (options: LastingPodAgentOptions, tag: string, from: number): Effect.Effect<LastingAgent, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { cluster, pod } = options
    const exit = yield* Deferred.make<number, ExecutorError>()
    yield* Effect.forkScoped(Deferred.complete(exit, inRealTime(exitCodeOf(options, tag))))
    const exitCode = Deferred.await(exit)
    const gone = Effect.zipRight(Effect.ignore(exitCode), Effect.fail(new ExecutorError({ message: "the agent has exited" })))
    const sending = yield* Effect.makeSemaphore(1)
    const send = (message: unknown) =>
      sending.withPermits(1)(Effect.raceFirst(
        Effect.flatMap(
          runToEnd(cluster, pod, sendLastingCommand(tag), Readable.from([Buffer.from(`${JSON.stringify(message)}\n`)])),
          (sent) => sent.exitCode === 0 ? Effect.void : Effect.fail(new ExecutorError({ message: `cannot write to the agent's stdin in pod ${pod}: ${sent.output.trim()}` }))
        ),
        gone
      ))
    let detached = false
    // Not while a message is on its way: each is whole in the FIFO before the agent is left.
    const detach = sending.withPermits(1)(Effect.zipRight(options.leave(tag), Effect.sync(() => void (detached = true))))
    const { interrupt, terminate } = controlsOf({ cluster, pod, tag, ended: Deferred.isDone(exit), exitCode })
    // Added after the wait was forked, so run before it is interrupted: a stop sees the exit.
    yield* Effect.addFinalizer(() => Effect.suspend(() => detached ? Effect.void : terminate(SCOPE_GRACE_MS)))
    const agent: LastingAgent = { stdout: outputOf(options, tag, from, exit), send, interrupt, terminate, exitCode, detach }
    return agent
  })

/**
 * Starts `command` as a lasting agent, its variables `env` handed over as any agent's; on an image
 * that cannot have one, as any agent (PodAgent.ts) that cannot be left.
 */
export const startLastingAgent = (
  options: LastingPodAgentOptions & { readonly command: ReadonlyArray<string>; readonly env: Readonly<Record<string, string>> }
): Effect.Effect<LastingAgent, ExecutorError, Scope.Scope> =>
  Effect.gen(function*() {
    const { cluster, pod } = options
    yield* checkCommand(options.command, options.env)
    const tag = newTag()
    yield* handOverVariables(cluster, pod, tag, options.env)
    const launched = yield* runToEnd(cluster, pod, launchLastingCommand(tag, agentCommand(tag, options.command)))
    if (launched.exitCode === LASTING_UNSUPPORTED) {
      const agent: AgentProcess = yield* startAgent(options)
      const detach = Effect.fail(new ExecutorError({ message: `the image of pod ${pod} has no mkfifo or tail: its agent cannot be left running` }))
      return { ...agent, detach }
    }
    if (launched.exitCode !== 0) {
      return yield* new ExecutorError({ message: `cannot start the agent in pod ${pod} (exit code ${launched.exitCode}): ${launched.output.trim()}` })
    }
    return yield* lastingAgent(options, tag, 0)
  })

/** The lasting agent `tag` that an earlier process left in the pod, its stdout from byte `offset`. */
export const adoptLastingAgent = (options: LastingPodAgentOptions, tag: string, offset: number) => lastingAgent(options, tag, offset)
