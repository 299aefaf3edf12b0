/**
 * The server's log output, written in batches: the log lines of one turn of the event loop go to
 * stdout (or stderr) in one write instead of one write each. The pretty format prints an entry as
 * several lines (its fields under it), each a blocking write to a pipe or file, which cost a busy
 * server about a tenth of a webhook delivery (docs/performance.md). Lines keep their order; what
 * is buffered is written before the process exits.
 */
import { Console, Effect, Layer } from "effect"
import { Console as NodeConsole } from "node:console"
import { writeSync } from "node:fs"
import { Writable } from "node:stream"

/** Where batches go: a stream for the batches of a turn, a file descriptor for what is left at exit. */
export interface BatchTarget {
  readonly write: (chunk: Buffer) => unknown
  readonly fd: number
}

/** A writable that passes its chunks to `target` in one write per turn of the event loop. */
export class Batched extends Writable {
  private chunks: Array<Buffer> = []
  private scheduled = false
  private readonly onExit = () => this.flushSync()

  constructor(private readonly target: BatchTarget) {
    super()
    process.once("exit", this.onExit)
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.chunks.push(chunk)
    if (!this.scheduled) {
      this.scheduled = true
      setImmediate(() => this.flush())
    }
    callback()
  }

  private take(): Buffer | undefined {
    this.scheduled = false
    if (this.chunks.length === 0) return undefined
    const out = Buffer.concat(this.chunks)
    this.chunks = []
    return out
  }

  private flush(): void {
    const out = this.take()
    if (out !== undefined) this.target.write(out)
  }

  /** Writes what is buffered and no longer waits for the process's exit: its console is done with. */
  detach(): void {
    process.removeListener("exit", this.onExit)
    this.flush()
  }

  /** Writes what is buffered at once, synchronously (the process is exiting). */
  flushSync(): void {
    const out = this.take()
    if (out === undefined) return
    try {
      writeSync(this.target.fd, out)
    } catch {
      // the stream is gone: nothing left to tell
    }
  }
}

/**
 * Effect's console with its `unsafe` (what loggers print through) writing in batches, for the
 * layer's scope: what is buffered when it closes is written then.
 */
export const BatchedConsoleLive: Layer.Layer<never> = Layer.unwrapScoped(
  Console.consoleWith((current) =>
    Effect.acquireRelease(
      Effect.sync(() => ({
        stdout: new Batched({ write: (chunk) => process.stdout.write(chunk), fd: 1 }),
        stderr: new Batched({ write: (chunk) => process.stderr.write(chunk), fd: 2 })
      })),
      ({ stderr, stdout }) => Effect.sync(() => [stdout, stderr].forEach((stream) => stream.detach()))
    ).pipe(
      Effect.map(({ stderr, stdout }) => {
        const unsafe = new NodeConsole({ stdout, stderr, colorMode: process.stdout.isTTY === true })
        return Console.setConsole({ ...current, unsafe } as Console.Console)
      })
    )
  )
)
