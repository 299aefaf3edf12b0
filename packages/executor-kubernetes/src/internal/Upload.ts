/**
 * A directory of the server copied into a pod's work directory: packed by the server's `tar` and
 * unpacked by the pod's (`tar -x` as the sandbox's user, over an exec's stdin), as `kubectl cp`
 * does. The image needs `tar` (busybox's will do).
 */
import { ExecutorError } from "@agent-runs/core/ports/Executor"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as Fs from "node:fs/promises"
import { PassThrough } from "node:stream"
import type { Cluster } from "./Cluster.js"
import { runToEnd } from "./PodExec.js"
import { unpackCommand } from "./Shell.js"

/** Copies what `dir` holds into the pod's work directory. */
export const uploadDirectory = (cluster: Cluster, pod: string, dir: string): Effect.Effect<void, ExecutorError> =>
  Effect.gen(function*() {
    const entries = yield* Effect.tryPromise({
      try: () => Fs.readdir(dir),
      catch: (cause) => new ExecutorError({ message: `cannot read the work directory made in ${dir}: ${String(cause)}`, cause })
    })
    if (entries.length === 0) return
    const packer = yield* Effect.try({
      try: () => spawn("tar", ["-c", "-f", "-", "-C", dir, "--", ...entries], { stdio: ["ignore", "pipe", "pipe"] }),
      catch: (cause) => new ExecutorError({ message: `cannot run tar on the server: ${String(cause)}`, cause })
    })
    // Read from now on: the output of a child that exits before anyone reads it is dropped.
    const archive = packer.stdout.pipe(new PassThrough())
    let packerError = ""
    packer.stderr.on("data", (chunk: Buffer) => (packerError = `${packerError}${chunk.toString("utf8")}`.slice(-2_000)))
    const packed = Effect.async<number, ExecutorError>((resume) => {
      packer.once("error", (cause) => resume(Effect.fail(new ExecutorError({ message: `cannot run tar on the server: ${cause.message}`, cause }))))
      packer.once("close", (code) => resume(Effect.succeed(code ?? 1)))
    })
    const [unpacked, packerCode] = yield* Effect.all([runToEnd(cluster, pod, unpackCommand, archive), packed], { concurrency: 2 }).pipe(
      Effect.onInterrupt(() => Effect.sync(() => packer.kill("SIGKILL")))
    )
    if (packerCode !== 0) {
      return yield* new ExecutorError({ message: `packing the work directory on the server failed (tar exited with ${packerCode}): ${packerError.trim()}` })
    }
    if (unpacked.exitCode !== 0) {
      return yield* new ExecutorError({
        message: `unpacking the work directory in pod ${pod} failed (tar exited with ${unpacked.exitCode}; the image needs tar): ${unpacked.output.trim()}`
      })
    }
  })
