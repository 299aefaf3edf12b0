/**
 * A Server-Sent Events parser (the WHATWG "text/event-stream" interpretation rules): lines end
 * with CRLF, LF or CR (also when a CRLF is split across chunks); `data` lines of one event are
 * joined with newlines; a line starting with `:` is a comment; `id` sets the last event id (kept
 * for the following events, as EventSource does; an id containing NULL is ignored); `retry` sets
 * the reconnection time; an empty line dispatches the event (none when it has no data). A leading
 * UTF-8 byte order mark is skipped.
 */
import { Option, Stream } from "effect"

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

/** What the parser produces: events, and comments (`: keep-alive`), without the leading colon and space. */
export type SseItem =
  | { readonly _tag: "Event"; readonly event: SseEvent }
  | { readonly _tag: "Comment"; readonly text: string }

/** An incremental parser: feed it text as it arrives, then `end` it. */
export interface SseParser {
  /** Parses a chunk of text; answers the events and comments it completes. */
  readonly push: (chunk: string) => Array<SseItem>
  /** The end of the stream: a partial line is taken as a line, an event not ended by an empty line is dropped. */
  readonly end: () => Array<SseItem>
  /** The last event id seen so far. */
  readonly lastEventId: () => string | undefined
}

/** A parser; `lastEventId` is the id to start from (e.g. when resuming). */
export const makeParser = (lastEventId?: string): SseParser => {
  let buffer = ""
  let started = false
  let pendingCr = false
  let data: Array<string> = []
  let eventType = ""
  let id = lastEventId
  let retry: number | undefined

  const line = (text: string, out: Array<SseItem>): void => {
    if (text === "") {
      if (data.length > 0) {
        out.push({ _tag: "Event", event: { id, event: eventType === "" ? "message" : eventType, data: data.join("\n"), retry } })
      }
      data = []
      eventType = ""
      return
    }
    if (text.startsWith(":")) {
      out.push({ _tag: "Comment", text: text.slice(text.startsWith(": ") ? 2 : 1) })
      return
    }
    const colon = text.indexOf(":")
    const field = colon === -1 ? text : text.slice(0, colon)
    let value = colon === -1 ? "" : text.slice(colon + 1)
    if (value.startsWith(" ")) value = value.slice(1)
    switch (field) {
      case "data":
        data.push(value)
        break
      case "event":
        eventType = value
        break
      case "id":
        if (!value.includes("\u0000")) id = value
        break
      case "retry":
        if (/^\d+$/.test(value)) retry = Number(value)
        break
    }
  }

  const push = (chunk: string): Array<SseItem> => {
    const out: Array<SseItem> = []
    let text = chunk
    if (!started && text.length > 0) {
      started = true
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
    }
    if (pendingCr && text.startsWith("\n")) text = text.slice(1)
    pendingCr = false
    buffer += text
    let start = 0
    for (let i = 0; i < buffer.length; i++) {
      const c = buffer.charCodeAt(i)
      if (c !== 10 && c !== 13) continue
      line(buffer.slice(start, i), out)
      if (c === 13) {
        if (i + 1 === buffer.length) pendingCr = true
        else if (buffer.charCodeAt(i + 1) === 10) i++
      }
      start = i + 1
    }
    buffer = buffer.slice(start)
    return out
  }

  const end = (): Array<SseItem> => {
    const out: Array<SseItem> = []
    if (buffer !== "") line(buffer, out)
    buffer = ""
    return out
  }

  return { push, end, lastEventId: () => id }
}

/** The events and comments of a byte stream of `text/event-stream` (UTF-8). */
export const items = <E, R>(bytes: Stream.Stream<Uint8Array, E, R>, lastEventId?: string): Stream.Stream<SseItem, E, R> =>
  Stream.suspend(() => {
    const parser = makeParser(lastEventId)
    return bytes.pipe(
      Stream.decodeText(),
      Stream.mapConcat(parser.push),
      Stream.concat(Stream.suspend(() => Stream.fromIterable(parser.end())))
    )
  })

/** The events of a byte stream of `text/event-stream` (comments dropped). */
export const events = <E, R>(bytes: Stream.Stream<Uint8Array, E, R>, lastEventId?: string): Stream.Stream<SseEvent, E, R> =>
  Stream.filterMap(items(bytes, lastEventId), (item) => item._tag === "Event" ? Option.some(item.event) : Option.none())
