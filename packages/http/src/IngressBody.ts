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
 *   through `Readable.fromWeb`.
 * - A request whose stream fails or closes before its end (the sender went away) dies: nobody is
 *   left to answer.
 */
import type { HttpServerRequest } from "@effect/platform"
import type { Ingress } from "@agent-runs/core"
import { Effect } from "effect"
import { IncomingMessage } from "node:http"
import { Readable } from "node:stream"
import type { ReadableStream as WebReadableStream } from "node:stream/web"

/** How much of a refused body is read and dropped so that the sender sees the answer (beyond it: closed). */
export const DRAIN_BYTES = 1024 * 1024

/** How long a request may stay open after reading stopped before it is destroyed. */
export const READ_GRACE_MS = 5_000

/** Whether the body was read to its end: if not, the answer closes the connection. */
export interface Consumption {
  started: boolean
  complete: boolean
}

/** The request's body as a Node stream (a web `Request`'s through `Readable.fromWeb`); none when it has none. */
const readableOf = (request: HttpServerRequest.HttpServerRequest): Readable | undefined => {
  const source = request.source
  if (source instanceof IncomingMessage) return source
  const body = (source as { readonly body?: unknown }).body
  return body instanceof ReadableStream ? Readable.fromWeb(body as WebReadableStream) : undefined
}

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
    const readable = readableOf(request)
    if (readable === undefined) {
      consumed.complete = true
      return resume(Effect.succeed({ _tag: "Complete", bytes: new Uint8Array(0) }))
    }
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
    const onGone = (error?: unknown) => {
      stop()
      resume(Effect.die(error ?? new Error("the request closed before its body ended")))
    }
    const timer = setTimeout(() => stopEarly({ _tag: "TimedOut" }), timeoutMs)
    readable.on("data", onData).on("end", onEnd).on("error", onGone).on("close", onGone)
    return Effect.sync(() => {
      stop()
      destroyLater(readable)
    })
  })
