/**
 * Child processes: setup commands run to completion with the end of their output captured, and
 * agents whose stdout is read on demand. Every child runs in a process group of its own
 * (`detached: true`), so that stopping it signals everything it started.
 */
import { Executor } from "@agent-runs/core"
import { Deferred, Effect, Exit, Option, Stream } from "effect"
import { spawn } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import { constants } from "node:os"
import type { Readable } from "node:stream"
import type { User } from "./users.js"
import { OutputTail } from "@agent-runs/core/internal/OutputTail"

/** How much of a setup command's output is kept (its end). */
export const OUTPUT_TAIL_BYTES = 4096

const executorError = (message: string, cause?: unknown) =>
  new Executor.ExecutorError(cause === undefined ? { message } : { message, cause })

/** `128 + n` for a process killed by signal n, else its exit code. */
export const exitCodeOf = (code: number | null, signal: NodeJS.Signals | null): number => {
  if (code !== null) return code
  const number = signal === null ? undefined : constants.signals[signal]
  return 128 + (number ?? 0)
}

/** Sends `signal` to the process group `pgid`; false when no such group exists. */
export const signalGroup = (pgid: number, signal: NodeJS.Signals): boolean => {
  try {
    process.kill(-pgid, signal)
    return true
  } catch {
    return false
  }
}

/** How a command run to completion ended. */
export type Completion =
  | { readonly _tag: "Exited"; readonly code: number; readonly output: string }
  | { readonly _tag: "TimedOut"; readonly output: string }

/** How long to wait for the output pipes to close once the command has exited. */
const PIPE_CLOSE_GRACE_MS = 200

/**
 * Runs `file args` to completion with stdin closed, keeping the end of stdout and stderr together.
 * Past `timeoutMs` (a real-time timer) or on interruption its process group is killed. A command
 * that cannot be spawned is an ExecutorError.
 */
export const runToCompletion = (
  file: string,
  args: ReadonlyArray<string>,
  options: {
    readonly cwd: string
    readonly env: Readonly<Record<string, string>>
    readonly timeoutMs: number
    /** Runs it as this user (the service must be root); as the service's own user when absent. */
    readonly user?: User | undefined
  }
): Effect.Effect<Completion, Executor.ExecutorError> =>
  Effect.async<Completion, Executor.ExecutorError>((resume) => {
    let child: ChildProcess
    try {
      child = spawn(file, args, { cwd: options.cwd, env: options.env, stdio: ["ignore", "pipe", "pipe"], detached: true, ...options.user })
    } catch (cause) {
      resume(Effect.fail(executorError(`could not run ${file}`, cause)))
      return
    }
    const tail = new OutputTail(OUTPUT_TAIL_BYTES)
    child.stdout!.on("error", () => undefined)
    child.stderr!.on("error", () => undefined)
    child.stdout!.on("data", (chunk: Buffer) => tail.push(chunk))
    child.stderr!.on("data", (chunk: Buffer) => tail.push(chunk))
    let settled = false
    let timedOut = false
    let exitCode: number | undefined
    const kill = () => {
      if (child.pid !== undefined) signalGroup(child.pid, "SIGKILL")
    }
    const finish = () => {
      if (settled || exitCode === undefined) return
      settled = true
      clearTimeout(timer)
      clearTimeout(closeTimer)
      child.stdout!.destroy()
      child.stderr!.destroy()
      resume(Effect.succeed(
        timedOut ? { _tag: "TimedOut", output: tail.toString().trim() } : { _tag: "Exited", code: exitCode, output: tail.toString().trim() }
      ))
    }
    const timer = setTimeout(() => {
      timedOut = true
      kill()
    }, options.timeoutMs)
    let closeTimer: ReturnType<typeof setTimeout> | undefined
    child.on("error", (cause) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resume(Effect.fail(executorError(`could not run ${file}: ${cause.message}`, cause)))
    })
    child.on("exit", (code, signal) => {
      exitCode = exitCodeOf(code, signal)
      // Output still in the pipes arrives before they close; a background process that keeps them
      // open does not hold the setup up.
      closeTimer = setTimeout(finish, PIPE_CLOSE_GRACE_MS)
    })
    child.on("close", finish)
    return Effect.sync(() => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      clearTimeout(closeTimer)
      kill()
    })
  })

/** The next chunk of `readable` (none at its end), waiting for it without taking it early. */
const nextChunk = (readable: Readable): Effect.Effect<Option.Option<Uint8Array>, Executor.ExecutorError> =>
  Effect.async((resume) => {
    const take = (): boolean => {
      const chunk: Buffer | null = readable.read()
      if (chunk !== null) {
        resume(Effect.succeed(Option.some(chunk)))
        return true
      }
      if (readable.errored) {
        resume(Effect.fail(executorError("could not read the agent's stdout", readable.errored)))
        return true
      }
      if (readable.readableEnded || readable.destroyed) {
        resume(Effect.succeed(Option.none()))
        return true
      }
      return false
    }
    if (take()) return
    const cleanup = () => {
      readable.off("readable", onReadable)
      readable.off("end", onEnd)
      readable.off("close", onEnd)
      readable.off("error", onError)
    }
    const onReadable = () => {
      if (take()) cleanup()
    }
    const onEnd = () => {
      cleanup()
      if (!take()) resume(Effect.succeed(Option.none()))
    }
    const onError = (cause: Error) => {
      cleanup()
      resume(Effect.fail(executorError("could not read the agent's stdout", cause)))
    }
    readable.on("readable", onReadable)
    readable.on("end", onEnd)
    readable.on("close", onEnd)
    readable.on("error", onError)
    return Effect.sync(cleanup)
  })

/**
 * `readable` as a stream pulled on demand: what is not read yet waits in the stream's buffer and
 * then in the pipe, so a slow reader slows the writer down instead of filling memory.
 */
export const pullStream = (readable: Readable): Stream.Stream<Uint8Array, Executor.ExecutorError> =>
  Stream.repeatEffectOption(
    nextChunk(readable).pipe(
      Effect.mapError(Option.some),
      Effect.flatMap(Option.match({ onNone: () => Effect.fail(Option.none()), onSome: Effect.succeed }))
    )
  )

/** A running child: its pid (= process group), exit and the streams. */
export interface Spawned {
  readonly child: ChildProcess
  readonly pid: number
  /** Completed with the exit code (`128 + n` for signal n) when the process has exited. */
  readonly exited: Deferred.Deferred<number>
}

/**
 * Spawns `command` in a process group of its own with piped stdio; succeeds once the process runs,
 * fails with an ExecutorError when it cannot be spawned (ENOENT, EACCES, ...). Listeners are attached
 * at once, so nothing the process writes is lost before the caller reads it.
 */
export const spawnProcess = (
  command: ReadonlyArray<string>,
  options: {
    readonly cwd: string
    readonly env: Readonly<Record<string, string>>
    /** Runs it as this user (the service must be root); as the service's own user when absent. */
    readonly user?: User | undefined
  }
): Effect.Effect<Spawned, Executor.ExecutorError> =>
  Effect.flatMap(Deferred.make<number>(), (exited) =>
    Effect.async<Spawned, Executor.ExecutorError>((resume) => {
      const [file, ...args] = command
      if (file === undefined || file === "") {
        resume(Effect.fail(executorError("cannot start an empty command")))
        return
      }
      let child: ChildProcess
      try {
        child = spawn(file, args, { cwd: options.cwd, env: options.env, stdio: ["pipe", "pipe", "pipe"], detached: true, ...options.user })
      } catch (cause) {
        resume(Effect.fail(executorError(`could not start ${file}`, cause)))
        return
      }
      // EPIPE and the like on stdin surface through `send`; they must never crash the service.
      child.stdin!.on("error", () => undefined)
      child.on("exit", (code, signal) => {
        Deferred.unsafeDone(exited, Exit.succeed(exitCodeOf(code, signal)))
      })
      child.stdout!.on("error", () => undefined)
      child.stderr!.on("error", () => undefined)
      // A 'readable' listener for the whole life of stdout: without one, Node resumes (and so
      // discards) the unread output of a child that has exited.
      child.stdout!.on("readable", () => undefined)
      child.on("error", (cause) => {
        if (child.pid === undefined) resume(Effect.fail(executorError(`could not start ${file}: ${cause.message}`, cause)))
      })
      child.once("spawn", () => resume(Effect.succeed({ child, pid: child.pid!, exited })))
    })
  )
