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
import { checkCommand, controlsOf, handOverVariables, newTag, type PodAgentOptions, podLoss, SCOPE_GRACE_MS, SIGKILL_EXIT, startAgent } from "./PodAgent.js"
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
  /** Marks the agent (its tag and its runner's pid) as left for the next process (the executor's: a label and annotation of its Job). */
  readonly leave: (agent: LeftAgent) => Effect.Effect<void, ExecutorError>
}

/** A lasting agent as the pod knows it: its files' tag, and the pid of its runner (the shell that waits for it). */
export interface LeftAgent {
  readonly tag: string
  readonly runner: number
}

/** How long a lost wait, or a read that could not start, waits before it is tried again. */
const AGAIN = Duration.seconds(2)
/** The pause after a follow that ended (at most; doubled from 200 ms while follows end with nothing new). */
const MOST_PAUSE_MS = 5_000
/** How many times the rest of the output is read before it is given up (its file is not a plain file). */
const LAST_READS = 5

/**
 * What became of the pod when an exec failed: none while it runs, or cannot be read (the API
 * server may be briefly away: the agent is not its connection), else why it is lost.
 */
const lossOrNone = (options: LastingPodAgentOptions) => podLoss(options.cluster, options.pod).pipe(Effect.orElseSucceed(() => Option.none<string>()))

/** Its exit status: what the waiting exec printed, or none when it must be waited for again. */
const exitOf = (options: LastingPodAgentOptions, agent: LeftAgent): Effect.Effect<Option.Option<number>, ExecutorError> =>
  Effect.gen(function*() {
    const { cluster, pod } = options
    const waited = yield* Effect.either(runToEnd(cluster, pod, waitLastingCommand(agent.tag, agent.runner)))
    if (waited._tag === "Right" && waited.right.exitCode === 0) {
      const said = waited.right.output.trim()
      if (said === LASTING_GONE) return Option.some(SIGKILL_EXIT)
      if (/^\d{1,3}$/.test(said)) return Option.some(Number(said))
      return yield* new ExecutorError({ message: `the exit status of the agent in pod ${pod} is not a number: ${JSON.stringify(said.slice(0, 100))}` })
    }
    // The waiting shell was killed (with every process of the sandbox's user) or its connection lost.
    if (options.released()) return Option.some(SIGKILL_EXIT)
    const loss = yield* lossOrNone(options)
    if (Option.isSome(loss)) return yield* new ExecutorError({ message: loss.value })
    return Option.none()
  })

/** Waits for the agent's exit status for as long as its pod runs. */
const exitCodeOf = (options: LastingPodAgentOptions, agent: LeftAgent): Effect.Effect<number, ExecutorError> =>
  Effect.flatMap(exitOf(options, agent), Option.match({
    onSome: Effect.succeed,
    onNone: () => Effect.zipRight(Effect.sleep(AGAIN), Effect.suspend(() => exitCodeOf(options, agent)))
  }))

/**
 * What the agent writes from byte `from` on: follows while it runs (again from the count when a
 * follow ends early, after a pause that grows while nothing comes), then the rest once `exit` is
 * done, read again until it is read whole; nothing once `exit` failed (the pod is lost: the exit
 * code says so). An exec that cannot start is tried again while the pod runs.
 */
const outputOf = (options: LastingPodAgentOptions, agent: LeftAgent, from: number, exit: Deferred.Deferred<number, ExecutorError>) =>
  Stream.suspend(() => {
    const { cluster, pod } = options
    let at = from
    let pauseMs = 100
    let lastReads = 0
    const counted = (stdout: Stream.Stream<Uint8Array, ExecutorError>) =>
      Stream.tap(stdout, (chunk) => Effect.sync(() => void (at += chunk.length)))
    const started = (command: ReadonlyArray<string>) =>
      Effect.flatMap(Effect.either(open(cluster, pod, command, { stdin: false })), (opened) =>
        opened._tag === "Right" ? Effect.succeed(Option.some(opened.right)) : Effect.flatMap(lossOrNone(options), Option.match({
          onNone: () => Effect.succeed(Option.none()),
          onSome: (message) => Effect.fail(new ExecutorError({ message }))
        })))
    /** One read: its bytes, then whether the output is whole. */
    const piece = (done: { whole: boolean }) =>
      Stream.unwrapScoped(Effect.gen(function*() {
        const ended = yield* Deferred.poll(exit)
        if (Option.isSome(ended) && (yield* Effect.either(ended.value))._tag === "Left") {
          done.whole = true
          return Stream.empty
        }
        const last = Option.isSome(ended)
        const process = yield* started(last ? readLastingCommand(agent.tag, at) : followLastingCommand(agent.tag, agent.runner, at))
        if (Option.isNone(process)) return Stream.empty
        const stdout = last ? process.value.stdout : Stream.interruptWhen(process.value.stdout, Effect.ignore(Deferred.await(exit)))
        const check = Effect.suspend(() => {
          if (!last) return Effect.void
          lastReads += 1
          return Effect.map(Effect.either(process.value.exitCode), (code) => {
            done.whole = (code._tag === "Right" && code.right === 0) || lastReads >= LAST_READS
          })
        })
        return Stream.concat(counted(stdout), Stream.drain(Stream.fromEffect(check)))
      }))
    const pieces: Stream.Stream<Uint8Array, ExecutorError> = Stream.suspend(() => {
      const done = { whole: false }
      const before = at
      const pause = Stream.drain(Stream.fromEffect(Effect.suspend(() => {
        pauseMs = at > before ? 200 : Math.min(MOST_PAUSE_MS, pauseMs * 2)
        return inRealTime(Effect.sleep(Duration.millis(pauseMs)))
      })))
      return Stream.concat(piece(done), Stream.suspend(() => done.whole ? Stream.empty : Stream.concat(pause, pieces)))
    })
    return pieces
  })

/** The lasting agent, its stdout from byte `from`: stopped when the scope closes unless it was detached. */
const lastingAgent = (options: LastingPodAgentOptions, left: LeftAgent, from: number): Effect.Effect<LastingAgent, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { cluster, pod } = options
    const exit = yield* Deferred.make<number, ExecutorError>()
    yield* Effect.forkScoped(Deferred.complete(exit, inRealTime(exitCodeOf(options, left))))
    const exitCode = Deferred.await(exit)
    const gone = Effect.zipRight(Effect.ignore(exitCode), Effect.fail(new ExecutorError({ message: "the agent has exited" })))
    const sending = yield* Effect.makeSemaphore(1)
    // Whether a message was cut short on its way (its send interrupted): the agent may have half of it.
    let torn = false
    const send = (message: unknown) =>
      sending.withPermits(1)(Effect.raceFirst(
        Effect.flatMap(
          runToEnd(cluster, pod, sendLastingCommand(left.tag), Readable.from([Buffer.from(`${JSON.stringify(message)}\n`)])).pipe(
            Effect.onInterrupt(() => Effect.sync(() => void (torn = true)))
          ),
          (sent) => sent.exitCode === 0 ? Effect.void : Effect.fail(new ExecutorError({ message: `cannot write to the agent's stdin in pod ${pod}: ${sent.output.trim()}` }))
        ),
        gone
      ))
    let detached = false
    // Not while a message is on its way, nor after one was cut short: each is whole in the FIFO before the agent is left.
    const detach = sending.withPermits(1)(Effect.suspend(() =>
      torn
        ? Effect.fail(new ExecutorError({ message: "a message to the agent's stdin was cut short: it cannot be left" }))
        : Effect.zipRight(options.leave(left), Effect.sync(() => void (detached = true)))
    ))
    const { interrupt, terminate } = controlsOf({ cluster, pod, tag: left.tag, ended: Deferred.isDone(exit), exitCode })
    // Added after the wait was forked, so run before it is interrupted: a stop sees the exit.
    yield* Effect.addFinalizer(() => Effect.suspend(() => detached ? Effect.void : terminate(SCOPE_GRACE_MS)))
    const agent: LastingAgent = { stdout: outputOf(options, left, from, exit), send, interrupt, terminate, exitCode, detach }
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
      const detach = Effect.fail(new ExecutorError({ message: `the image of pod ${pod} has no mkfifo, tail or mv: its agent cannot be left running` }))
      return { ...agent, detach }
    }
    const runner = Number(launched.output.trim())
    if (launched.exitCode !== 0 || !Number.isSafeInteger(runner) || runner <= 0) {
      return yield* new ExecutorError({ message: `cannot start the agent in pod ${pod} (exit code ${launched.exitCode}): ${launched.output.trim()}` })
    }
    return yield* lastingAgent(options, { tag, runner }, 0)
  })

/** The lasting agent that an earlier process left in the pod, its stdout from byte `offset`. */
export const adoptLastingAgent = (options: LastingPodAgentOptions, left: LeftAgent, offset: number) => lastingAgent(options, left, offset)
