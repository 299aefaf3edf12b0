/**
 * Server-Sent Events: the events of a `text/event-stream` byte stream (UTF-8), parsed by
 * `eventsource-parser`, which follows the WHATWG interpretation rules (lines end with CRLF, LF or
 * CR, also when a CRLF is split across chunks; the `data` lines of one event are joined with
 * newlines; a line starting with `:` is a comment; an empty line dispatches the event, none when
 * it has no data; an event not ended by an empty line when the stream ends is dropped).
 *
 * Decisions:
 * - One event may hold at most `MAX_EVENT_CHARS` characters (32 Mi). The largest event the
 *   server sends is a conversation event carrying one line the agent printed, at most core's
 *   `Harness.MAX_LINE_BYTES` (16 MiB); twice that leaves room for the event's envelope and for
 *   JSON escapes. The parser counts what it holds as it arrives (the unfinished line and the data
 *   of the event not yet dispatched); past the bound the stream fails with `EventTooLarge`, so
 *   memory stays within the bound (plus one chunk) whatever the server sends.
 * - `id` is the last event id, as EventSource keeps it: an event without an `id` field has the
 *   id of the one before it, or the one the stream resumed from.
 * - A leading byte order mark is skipped (the UTF-8 decoder does it); unknown fields are ignored.
 */
import { Harness } from "@agent-runs/core"
import { Data, Either, Stream } from "effect"
import { createParser } from "eventsource-parser"

/** The most characters one event may hold (the unfinished line and the event's data). */
export const MAX_EVENT_CHARS = 2 * Harness.MAX_LINE_BYTES

/** One dispatched event. */
export interface SseEvent {
  /** The last event id when the event was dispatched (set by this event or an earlier one). */
  readonly id: string | undefined
  /** The `event` field, `message` when absent. */
  readonly event: string
  /** The `data` lines joined with `\n`. */
  readonly data: string
  /** The latest `retry` field (milliseconds), when the stream sent one. */
  readonly retry: number | undefined
}

/** An event larger than the bound: the stream stops there rather than hold it. */
export class EventTooLarge extends Data.TaggedError("EventTooLarge")<{
  readonly maxChars: number
  readonly message: string
}> {}

/** How to read a stream. */
export interface SseOptions {
  /** The id the stream resumes from (sent as `Last-Event-ID`): the id of events sent without one. */
  readonly lastEventId?: string | undefined
  /** The most characters one event may hold (`MAX_EVENT_CHARS`). */
  readonly maxEventChars?: number | undefined
}

/** A parser fed text as it arrives; each call answers the events the text completed, then the refusal if any. */
const makeParser = (options: SseOptions): (text: string) => Array<Either.Either<SseEvent, EventTooLarge>> => {
  const maxChars = options.maxEventChars ?? MAX_EVENT_CHARS
  let id = options.lastEventId
  let retry: number | undefined
  let completed: Array<Either.Either<SseEvent, EventTooLarge>> = []
  let refused = false
  const parser = createParser({
    maxBufferSize: maxChars,
    onEvent: (message) => {
      if (message.id !== undefined) id = message.id
      completed.push(Either.right({ id, event: message.event ?? "message", data: message.data, retry }))
    },
    onRetry: (ms) => {
      retry = ms
    },
    onError: (error) => {
      if (error.type !== "max-buffer-size-exceeded") return
      refused = true
      const message = `an event of the stream holds more than ${maxChars} characters, the most one event may hold`
      completed.push(Either.left(new EventTooLarge({ maxChars, message })))
    }
  })
  return (text) => {
    // The parser stops after a refusal; the stream fails at it (text already taken is dropped).
    if (refused) return []
    parser.feed(text)
    const answer = completed
    completed = []
    return answer
  }
}

/** The events of a byte stream of `text/event-stream` (UTF-8); fails with `EventTooLarge` past the bound. */
export const events = <E, R>(
  bytes: Stream.Stream<Uint8Array, E, R>,
  options: SseOptions = {}
): Stream.Stream<SseEvent, E | EventTooLarge, R> =>
  Stream.suspend(() =>
    bytes.pipe(
      Stream.decodeText(),
      Stream.mapConcat(makeParser(options)),
      // Each item is an Either: an event goes on, a refusal fails the stream (and nothing is fed after it).
      Stream.mapEffect((parsed) => parsed)
    )
  )
