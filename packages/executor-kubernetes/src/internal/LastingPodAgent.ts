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
import { Deferred, Duration, Effect, Exit, Option, type Scope, Stream } from "effect"
import { Readable } from "node:stream"
import { checkCommand, controlsOf, handOverVariables, newTag, type PodAgentOptions, podLoss, SCOPE_GRACE_MS, SIGKILL_EXIT, startAgent } from "./PodAgent.js"
import { statusOf } from "./Cluster.js"
import { open, runToEnd } from "./PodExec.js"
import {
  agentCommand,
  followLastingCommand,
  LASTING_GONE,
  killCommand,
  LASTING_UNSUPPORTED,
  launchLastingCommand,
  printed,
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
/** How long the exit waits for the output to be read to its end. */
const READ_WAIT = Duration.seconds(10)
/** How many times the rest of the output is read before it is given up (its file is not a plain file). */
const LAST_READS = 5

/**
 * What became of the pod when an exec failed: none while it runs, or while the API server does
 * not answer or answers that it cannot now (no status, 429, 5xx: the agent is not its
 * connection, and is waited for), else why it is lost or cannot be reached (401, 403: a
 * refusal that waiting does not change).
 */
const lossOrNone = (options: LastingPodAgentOptions): Effect.Effect<Option.Option<string>> =>
  podLoss(options.cluster, options.pod).pipe(Effect.catchAll((error) => {
    const status = statusOf(error.cause)
    return Effect.succeed(status === undefined || status === 429 || status >= 500 ? Option.none<string>() : Option.some(error.message))
  }))

/** Its exit status: what the waiting exec printed, or none when it must be waited for again. */
const exitOf = (options: LastingPodAgentOptions, agent: LeftAgent): Effect.Effect<Option.Option<number>, ExecutorError> =>
  Effect.gen(function*() {
    const { cluster, pod } = options
    const waited = yield* Effect.either(runToEnd(cluster, pod, waitLastingCommand(agent.tag, agent.runner)))
    const said = waited._tag === "Right" && waited.right.exitCode === 0 ? printed(waited.right.output, "status") : undefined
    if (said !== undefined) {
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
 * follow ends early, after a pause that grows while nothing comes and that its end cuts short),
 * then the rest once `exit` is done, read again until it is read whole (`LAST_READS` times at
 * most); nothing once `exit` failed (the pod is lost: the exit code says so). An exec that cannot
 * start is tried again while the pod runs.
 */
const outputOf = (
  options: LastingPodAgentOptions,
  agent: LeftAgent,
  from: number,
  exit: Deferred.Deferred<number, ExecutorError>,
  /** Done once the output was read whole; `reading` while a reader has it. */
  whole: Deferred.Deferred<void>,
  reader: { reading: number }
) =>
  Stream.suspend(() => {
    reader.reading += 1
    const { cluster, pod } = options
    let at = from
    let pauseMs = 0
    let lastReads = 0
    let read = false
    const counted = (stdout: Stream.Stream<Uint8Array, ExecutorError>) =>
      Stream.tap(stdout, (chunk) => Effect.sync(() => void (at += chunk.length)))
    const started = (command: ReadonlyArray<string>) =>
      Effect.flatMap(Effect.either(open(cluster, pod, command, { stdin: false })), (opened) =>
        opened._tag === "Right" ? Effect.succeed(Option.some(opened.right)) : Effect.flatMap(lossOrNone(options), Option.match({
          onNone: () => Effect.succeed(Option.none()),
          onSome: (message) => Effect.fail(new ExecutorError({ message }))
        })))
    /** One read, from `at`: a follow while the agent runs, else the rest. */
    const piece = Effect.gen(function*() {
      const ended = yield* Deferred.poll(exit)
      if (Option.isSome(ended) && (yield* Effect.either(ended.value))._tag === "Left") {
        read = true
        return Stream.empty
      }
      const last = Option.isSome(ended)
      if (last) lastReads += 1
      const process = yield* started(last ? readLastingCommand(agent.tag, at) : followLastingCommand(agent.tag, agent.runner, at))
      if (Option.isNone(process)) {
        // A rest that cannot be read is given up as one that fails, after as many tries.
        read = last && lastReads >= LAST_READS
        if (read) yield* Deferred.succeed(whole, undefined)
        return Stream.empty
      }
      if (!last) return counted(Stream.interruptWhen(process.value.stdout, Effect.ignore(Deferred.await(exit))))
      // Whole once a read of the rest ended well (or was tried enough).
      const check = Effect.flatMap(Effect.either(process.value.exitCode), (code) => {
        read = (code._tag === "Right" && code.right === 0) || lastReads >= LAST_READS
        return read ? Deferred.succeed(whole, undefined) : Effect.void
      })
      return Stream.concat(counted(process.value.stdout), Stream.drain(Stream.fromEffect(check)))
    })
    /** The next read, at once after one that brought something (or the first), else after a pause (none once the output is whole). */
    let before = -1
    const next = Effect.suspend((): Effect.Effect<Stream.Stream<Uint8Array, ExecutorError>, Option.Option<never>> => {
      if (read) return Effect.fail(Option.none())
      pauseMs = at > before ? 0 : Math.min(MOST_PAUSE_MS, Math.max(200, pauseMs * 2))
      before = at
      // The exit cuts short a pause before the first read of the rest, not one between such reads.
      const sleep = Effect.sleep(Duration.millis(lastReads > 0 ? Math.max(pauseMs, Duration.toMillis(AGAIN)) : pauseMs))
      const pause = lastReads > 0 ? sleep : Effect.raceFirst(sleep, Effect.ignore(Deferred.await(exit)))
      // The read's exec lives as long as its stream is read.
      return Effect.as(inRealTime(pause), Stream.unwrapScoped(piece))
    })
    return Stream.flatten(Stream.repeatEffectOption(next)).pipe(Stream.ensuring(Effect.sync(() => void (reader.reading -= 1))))
  })

/** The lasting agent, its stdout from byte `from`: stopped when the scope closes unless it was detached. */
const lastingAgent = (options: LastingPodAgentOptions, left: LeftAgent, from: number): Effect.Effect<LastingAgent, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { cluster, pod } = options
    const exit = yield* Deferred.make<number, ExecutorError>()
    yield* Effect.forkScoped(Deferred.complete(exit, inRealTime(exitCodeOf(options, left))))
    const whole = yield* Deferred.make<void>()
    const reader = { reading: 0 }
    // Once the output was read to its end too, while it is being read (at most `READ_WAIT`
    // more): the engine reads what is left for a short while only once the exit is known, and
    // the rest takes an exec. Interruptible wherever it is awaited: a stop in a finalizer bounds
    // its waits with timeouts.
    const exitCode = Effect.interruptible(Deferred.await(exit).pipe(
      Effect.tap(() =>
        reader.reading === 0 ? Effect.void : inRealTime(Effect.ignore(Effect.timeout(Deferred.await(whole), READ_WAIT)))
      )
    ))
    const gone = Effect.zipRight(Effect.ignore(exitCode), Effect.fail(new ExecutorError({ message: "the agent has exited" })))
    const sending = yield* Effect.makeSemaphore(1)
    // Whether a message may have been cut short on its way (its send interrupted or failed): the agent may have half of it.
    let torn = false
    const send = (message: unknown) =>
      sending.withPermits(1)(Effect.raceFirst(
        Effect.flatMap(
          runToEnd(cluster, pod, sendLastingCommand(left.tag), Readable.from([Buffer.from(`${JSON.stringify(message)}\n`)])).pipe(
            Effect.onExit((sent) => Effect.sync(() => void (torn ||= !(Exit.isSuccess(sent) && sent.value.exitCode === 0))))
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
    const agent: LastingAgent = { stdout: outputOf(options, left, from, exit, whole, reader), send, interrupt, terminate, exitCode, detach }
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
    const runner = Number(printed(launched.output, "runner"))
    if (launched.exitCode !== 0 || !Number.isSafeInteger(runner) || runner <= 0) {
      // It may run all the same: stopped as any agent is (nothing else of the sandbox's user runs).
      yield* runToEnd(cluster, pod, killCommand).pipe(Effect.ignore)
      return yield* new ExecutorError({ message: `cannot start the agent in pod ${pod} (exit code ${launched.exitCode}): ${launched.output.trim()}` })
    }
    return yield* lastingAgent(options, { tag, runner }, 0)
  })

/** The lasting agent that an earlier process left in the pod, its stdout from byte `offset`. */
export const adoptLastingAgent = (options: LastingPodAgentOptions, left: LeftAgent, offset: number) => lastingAgent(options, left, offset)
