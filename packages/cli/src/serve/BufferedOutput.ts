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

/** A writable that passes its chunks to `fd` in one write per turn of the event loop. */
class Batched extends Writable {
  private chunks: Array<Buffer> = []
  private scheduled = false

  constructor(private readonly target: NodeJS.WriteStream, private readonly fd: number) {
    super()
    process.once("exit", () => this.flushSync())
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

  private flushSync(): void {
    const out = this.take()
    if (out === undefined) return
    try {
      writeSync(this.fd, out)
    } catch {
      // the stream is gone: nothing left to tell
    }
  }
}

/** Effect's console with its `unsafe` (what loggers print through) writing in batches. */
export const BatchedConsoleLive: Layer.Layer<never> = Layer.unwrapEffect(
  Console.consoleWith((current) =>
    Effect.sync(() => {
      const unsafe = new NodeConsole({
        stdout: new Batched(process.stdout, 1),
        stderr: new Batched(process.stderr, 2),
        colorMode: process.stdout.isTTY === true
      })
      return Console.setConsole({ ...current, unsafe } as Console.Console)
    })
  )
)
