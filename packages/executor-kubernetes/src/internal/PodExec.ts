/**
 * Processes in a pod through the API server's `exec` (a WebSocket, `@kubernetes/client-node`'s
 * `Exec`): stdout as a stream with back-pressure (the socket pauses while the reader lags), the end
 * of stderr kept, stdin open for writing, and the exit code from the status the API server sends
 * last. A socket that closes without a status is `Lost`: the pod went away, or the connection did.
 */
import { Exec, type V1Status } from "@kubernetes/client-node"
import { OutputTail } from "@agent-runs/core/internal/OutputTail"
import { ExecutorError } from "@agent-runs/core/ports/Executor"
import { Data, Deferred, Duration, Effect, Exit, type Scope, Stream } from "effect"
import { PassThrough, Readable, Writable } from "node:stream"
import { CONTAINER } from "../Manifests.js"
import { type Cluster, clusterError } from "./Cluster.js"
import { inRealTime } from "./WallClock.js"

/** What the executor uses of an exec's WebSocket (`ws`'s, which `@kubernetes/client-node` makes). */
interface Socket {
  /** Bytes given to `send` and not yet written to the network. */
  readonly bufferedAmount: number
  pause(): void
  resume(): void
  close(): void
  on(event: "close" | "error", listener: () => void): unknown
}

/** The exec's connection closed before the API server said how the process ended. */
export class Lost extends Data.TaggedError("Lost")<{ readonly message: string }> {}

const TAIL_BYTES = 4_000
/** How much stdout waits for its reader before the socket is paused. */
const STDOUT_BUFFER_BYTES = 1024 * 1024
/** How much stdin may wait to be sent before a writer waits (the client sends without back-pressure). */
const STDIN_BUFFER_BYTES = 1024 * 1024

/** The exit code in the status of an exec; a status that names none is the API server's refusal. */
export const exitCodeOf = (status: V1Status): number | ExecutorError => {
  if (status.status === "Success") return 0
  const cause = status.details?.causes?.find((c) => c.reason === "ExitCode")
  const code = Number(cause?.message)
  if (cause !== undefined && Number.isInteger(code)) return code
  return new ExecutorError({ message: `the pod's exec failed: ${status.reason ?? "Failure"}: ${status.message ?? "no message"}` })
}

/** A process started in a pod. */
export interface PodProcess {
  readonly stdout: Stream.Stream<Uint8Array, ExecutorError>
  /** Its stdin (absent when started without); ending it closes the process's stdin. */
  readonly stdin: PassThrough | undefined
  /**
   * Writes to its stdin, then waits while more than a megabyte waits to be sent: what is written
   * faster than the pod takes it does not pile up in the server's memory.
   */
  readonly write: (chunk: Uint8Array) => Effect.Effect<void>
  /** The end of what it wrote to stderr. */
  readonly stderr: OutputTail
  readonly exitCode: Effect.Effect<number, ExecutorError | Lost>
  /** Whether it has ended (or its connection has). */
  readonly ended: Effect.Effect<boolean>
}

/** Starts `command` in the pod's sandbox container; the connection is closed with the scope. */
export const open = (
  cluster: Cluster,
  pod: string,
  command: ReadonlyArray<string>,
  options: { readonly stdin: boolean }
): Effect.Effect<PodProcess, ExecutorError, Scope.Scope> =>
  Effect.gen(function*() {
    const exit = yield* Deferred.make<number, ExecutorError | Lost>()
    const out = new PassThrough({ highWaterMark: STDOUT_BUFFER_BYTES })
    const stderr = new OutputTail(TAIL_BYTES)
    // The socket, once connected: paused while stdout waits for its reader.
    const connection: { socket?: Socket } = {}
    const sink = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        if (!out.write(chunk)) {
          connection.socket?.pause()
          out.once("drain", () => connection.socket?.resume())
        }
        callback()
      },
      final(callback) {
        out.end()
        callback()
      }
    })
    const errors = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        stderr.push(chunk)
        callback()
      }
    })
    const stdin = options.stdin ? new PassThrough() : undefined
    const onStatus = (status: V1Status) => {
      const code = exitCodeOf(status)
      Deferred.unsafeDone(exit, typeof code === "number" ? Exit.succeed(code) : Exit.fail(code))
    }
    const socket = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () =>
          new Exec(cluster.config).exec(cluster.namespace, pod, CONTAINER, [...command], sink, errors, stdin ?? null, false, onStatus) as Promise<unknown> as Promise<Socket>,
        catch: (cause) => clusterError(`exec in pod ${pod}`, cause)
      }),
      (ws) => Effect.sync(() => ws.close())
    )
    connection.socket = socket
    socket.on("error", () => undefined)
    socket.on("close", () => {
      Deferred.unsafeDone(exit, Exit.fail(new Lost({ message: `the connection to pod ${pod} closed before its process ended` })))
      if (!sink.writableEnded) sink.end()
    })
    // Through a web stream: cancelling its reader ends a pending read at once, so a reader that is
    // interrupted (a timeout) never waits for output that may not come (an async iterator would).
    const stdout = Stream.fromReadableStream(
      () => Readable.toWeb(out) as ReadableStream<Uint8Array>,
      (cause) => clusterError(`read from pod ${pod}`, cause)
    ).pipe(Stream.map((chunk) => new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength)))
    const waiting = () => (stdin?.readableLength ?? 0) + socket.bufferedAmount > STDIN_BUFFER_BYTES
    const write = (chunk: Uint8Array) =>
      Effect.gen(function*() {
        stdin?.write(chunk)
        while (waiting() && !(yield* Deferred.isDone(exit))) yield* Effect.sleep(Duration.millis(5))
      }).pipe(inRealTime)
    return { stdout, stdin, write, stderr, exitCode: Deferred.await(exit), ended: Deferred.isDone(exit) }
  })

/** Runs `command` in the pod to its end, `input` on its stdin: its exit code and the end of its output. */
export const runToEnd = (
  cluster: Cluster,
  pod: string,
  command: ReadonlyArray<string>,
  input?: Readable
): Effect.Effect<{ readonly exitCode: number; readonly output: string }, ExecutorError> =>
  Effect.scoped(Effect.gen(function*() {
    const process = yield* open(cluster, pod, command, { stdin: input !== undefined })
    if (input !== undefined) {
      yield* Stream.fromAsyncIterable(input as AsyncIterable<Uint8Array>, (cause) => cause).pipe(
        Stream.runForEach(process.write),
        Effect.ignore,
        Effect.ensuring(Effect.sync(() => process.stdin?.end())),
        Effect.forkScoped
      )
    }
    const output = new OutputTail(TAIL_BYTES)
    yield* Stream.runForEach(process.stdout, (chunk) => Effect.sync(() => output.push(chunk)))
    const exitCode = yield* process.exitCode.pipe(
      Effect.catchTag("Lost", (lost) => Effect.fail(new ExecutorError({ message: lost.message })))
    )
    output.push(new TextEncoder().encode(process.stderr.toString()))
    return { exitCode, output: output.toString() }
  }))
