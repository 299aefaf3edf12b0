/**
 * Reading a webhook delivery's body (docs/webhooks.md): at most a limit kept, some more read and
 * dropped so that a sender still writing sees the answer, and a timeout, all in one callback-driven
 * effect on the request's Node stream with one timer.
 *
 * Decisions:
 * - Past the limit, up to DRAIN_BYTES more are read and dropped; past that, reading stops.
 * - Stopping (past DRAIN_BYTES, at the timeout, or interrupted) never destroys the request: that
 *   would reset the connection before the answer is written. The stream is left flowing (what
 *   arrives is dropped) and the answer closes the connection (`Connection: close`, see `complete`).
 *   A request still open READ_GRACE_MS after reading stopped is destroyed, so a sender that never
 *   reads the answer cannot hold the connection.
 * - A request from a web handler (`Request`, see packages/server's `mount`) is read the same way,
 *   through `Readable.fromWeb`. A source of any other kind, or a body already read, is a defect
 *   (never taken for an empty body).
 * - A request whose stream fails or closes before its end (the sender went away) is interrupted:
 *   nobody is left to answer, and nothing is logged as a failure. Errors of the stream after reading
 *   stopped are ignored (a web body's stream would otherwise throw them at the process).
 */
import type { HttpServerRequest } from "@effect/platform"
import type { Ingress } from "@agent-runs/core"
import { Effect } from "effect"
import { Readable } from "node:stream"
import type { ReadableStream as WebReadableStream } from "node:stream/web"

/** How much of a refused body is read and dropped so that the sender sees the answer (beyond it: closed). */
const DRAIN_BYTES = 1024 * 1024

/** How long a request may stay open after reading stopped before it is destroyed. */
const READ_GRACE_MS = 5_000

/** Whether the body was read to its end: if not, the answer closes the connection. */
export interface Consumption {
  started: boolean
  complete: boolean
}

/** The request's body as a Node stream (a web `Request`'s through `Readable.fromWeb`); none when it has none. */
const readableOf = (request: HttpServerRequest.HttpServerRequest): Readable | undefined => {
  const source = request.source
  if (source instanceof Readable) {
    if (source.readableEnded) throw new Error("the request's body was read before the ingress read it")
    return source
  }
  if (source instanceof Request) return source.body === null ? undefined : Readable.fromWeb(source.body as WebReadableStream)
  throw new Error("the ingress reads bodies of Node requests and web Requests only")
}

const ignore = () => {}

/** Destroys a request still open READ_GRACE_MS after reading stopped early. */
const destroyLater = (readable: Readable) => {
  if (readable.closed) return
  const timer = setTimeout(() => readable.destroy(), READ_GRACE_MS)
  timer.unref()
  readable.once("close", () => clearTimeout(timer))
}

const concat = (chunks: ReadonlyArray<Uint8Array>, size: number): Uint8Array =>
  chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)

/**
 * Reads a body, keeping at most `limit` bytes and dropping up to DRAIN_BYTES more; stops waiting
 * `timeoutMs` after it started. Records in `consumed` whether it was read to its end.
 */
export const readBody = (
  request: HttpServerRequest.HttpServerRequest,
  consumed: Consumption,
  limit: number,
  timeoutMs: number
): Effect.Effect<Ingress.BodyRead> =>
  Effect.async<Ingress.BodyRead>((resume) => {
    consumed.started = true
    let readable: Readable | undefined
    try {
      readable = readableOf(request)
    } catch (defect) {
      return resume(Effect.die(defect))
    }
    if (readable === undefined) {
      consumed.complete = true
      return resume(Effect.succeed({ _tag: "Complete", bytes: new Uint8Array(0) }))
    }
    // Errors after reading stopped go nowhere (see the decisions above).
    readable.on("error", ignore)
    const chunks: Array<Uint8Array> = []
    let size = 0
    const stop = () => {
      clearTimeout(timer)
      readable.off("data", onData).off("end", onEnd).off("error", onGone).off("close", onGone)
    }
    const stopEarly = (read: Ingress.BodyRead) => {
      stop()
      destroyLater(readable)
      resume(Effect.succeed(read))
    }
    const onData = (chunk: Uint8Array) => {
      if (size + chunk.length <= limit) chunks.push(chunk)
      size += chunk.length
      if (size > limit + DRAIN_BYTES) stopEarly({ _tag: "TooLarge", sizeBytes: size })
    }
    const onEnd = () => {
      stop()
      consumed.complete = true
      resume(Effect.succeed(size > limit ? { _tag: "TooLarge", sizeBytes: size } : { _tag: "Complete", bytes: concat(chunks, size) }))
    }
    const onGone = () => {
      stop()
      resume(Effect.interrupt)
    }
    const timer = setTimeout(() => stopEarly({ _tag: "TimedOut" }), timeoutMs)
    readable.on("data", onData).on("end", onEnd).on("error", onGone).on("close", onGone).resume()
    return Effect.sync(() => {
      stop()
      destroyLater(readable)
    })
  })
