/**
 * Following a Server-Sent Events stream of the API until its `end` event, over any way of opening
 * it (`eventStream.ts` opens it with `fetch` and the tab's token). Nothing here touches the page,
 * so it runs in Node too (its tests give it a fake connection).
 *
 * Decisions:
 * - Parsing is `eventsource-parser`'s (the WHATWG rules; a CR LF split across chunks is one line
 *   ending), with a bound: one event may hold at most `MAX_EVENT_CHARS` characters (32 Mi), the
 *   client's bound (`Sse.MAX_EVENT_CHARS` of `@agent-runs/client`): twice the longest line an agent
 *   may print (16 MiB), which the server sends as one conversation event. The parser counts what it
 *   holds (the unfinished line, the event's data) as it arrives; past the bound following fails
 *   with `EventTooLarge`, at once, rather than hold more (reconnecting would meet the same event).
 * - A stream that drops before `end` (a network error, a close) is opened again with
 *   `Last-Event-ID`: the id of the last event received, so the server sends exactly the events
 *   after it. The delay is the stream's `retry` field when it sent one, else 1 s doubling at each
 *   attempt without an event; never more than 30 s. After `MAX_RECONNECTS` attempts in a row
 *   without an event, or an answer of the API that is not a success (401, 403, 404, 429, …),
 *   following fails with that error.
 */
import { createParser } from "eventsource-parser"

/** The most characters one event may hold (see above). */
export const MAX_EVENT_CHARS = 32 * 1024 * 1024
/** The reconnection delay when the stream sent no `retry`, before doubling. */
export const DEFAULT_RETRY_MS = 1_000
/** The longest reconnection delay, whatever the stream's `retry` says. */
export const MAX_RETRY_MS = 30_000
/** The shortest, whatever the stream's `retry` says (`retry: 0` would reconnect in a tight loop). */
export const MIN_RETRY_MS = 500
/** How many reconnections in a row may bring no event before following gives up. */
export const MAX_RECONNECTS = 5

/** How to reach the stream. */
export interface Connection {
  /** Opens it, after `lastEventId` when there is one (sent as `Last-Event-ID`); rejects when it cannot. */
  readonly open: (lastEventId: string | undefined) => Promise<Response>
  /** Whether a rejection of `open` is the connection's (try again) rather than the API's answer. */
  readonly dropped: (error: unknown) => boolean
  /** Resolves after `ms`; rejects as soon as `signal` aborts. */
  readonly wait: (ms: number, signal: AbortSignal) => Promise<void>
}

/** An event over the bound: following stops there. */
export class EventTooLarge extends Error {
  constructor(readonly maxChars: number) {
    super(`an event of the live stream holds more than ${maxChars} characters, the most one event may hold`)
    this.name = "EventTooLarge"
  }
}

/** What following knows across connections. */
interface Position {
  lastEventId: string | undefined
  retryMs: number | undefined
}

/** How one connection ended: with the `end` event, or dropped (after how many events, and why). */
type Outcome =
  | { readonly ended: true }
  | { readonly ended: false; readonly events: number; readonly error: unknown }

/** Waits `ms`, or rejects with the signal's reason once it aborts. */
export const wait = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", abort)
      resolve()
    }, ms)
    const abort = () => {
      clearTimeout(timer)
      reject(signal.reason)
    }
    signal.addEventListener("abort", abort, { once: true })
  })

/** The delay before reconnection number `attempt` (1, 2, …) since the last event. */
export const reconnectDelay = (retryMs: number | undefined, attempt: number): number =>
  Math.min(Math.max(retryMs ?? DEFAULT_RETRY_MS * 2 ** (attempt - 1), MIN_RETRY_MS), MAX_RETRY_MS)

/**
 * Follows the stream until its `end` event, telling `onEvent` each event's name and data (`end`
 * included), reconnecting after drops (see above). Rejects with the API's error, `EventTooLarge`,
 * the last drop's cause after too many quiet reconnections, or the abort once `signal` aborts.
 */
export const followEvents = async (
  connection: Connection,
  onEvent: (event: string, data: string) => void,
  signal: AbortSignal,
  maxEventChars: number = MAX_EVENT_CHARS
): Promise<void> => {
  const position: Position = { lastEventId: undefined, retryMs: undefined }
  /** Reconnections since the last event. */
  let attempts = 0
  for (;;) {
    const outcome = await readOnce(connection, position, onEvent, signal, maxEventChars)
    if (outcome.ended) return
    if (outcome.events > 0) attempts = 0
    if (attempts === MAX_RECONNECTS) {
      const why = outcome.error instanceof Error ? `: ${outcome.error.message}` : ""
      throw new Error(`the live stream dropped, and ${attempts} reconnections in a row brought no event${why}`, {
        cause: outcome.error
      })
    }
    attempts++
    await connection.wait(reconnectDelay(position.retryMs, attempts), signal)
  }
}

/** One connection: opens the stream after the position and reads it until `end` or a drop. */
const readOnce = async (
  connection: Connection,
  position: Position,
  onEvent: (event: string, data: string) => void,
  signal: AbortSignal,
  maxEventChars: number
): Promise<Outcome> => {
  let response: Response
  try {
    response = await connection.open(position.lastEventId)
  } catch (error) {
    if (signal.aborted) throw signal.reason
    if (!connection.dropped(error)) throw error
    return { ended: false, events: 0, error }
  }
  if (response.body === null) return { ended: false, events: 0, error: new Error("the stream had no body") }
  const reader = response.body.getReader()
  const parse = makeParser(position, onEvent, maxEventChars)
  try {
    for (;;) {
      let chunk: Awaited<ReturnType<typeof reader.read>>
      try {
        chunk = await reader.read()
      } catch (error) {
        if (signal.aborted) throw signal.reason
        return { ended: false, events: parse.events(), error }
      }
      if (chunk.done) return { ended: false, events: parse.events(), error: new Error("the server closed the stream") }
      if (parse.feed(chunk.value)) return { ended: true }
    }
  } finally {
    reader.cancel().catch(() => undefined)
  }
}

/**
 * A bounded parser of one connection's bytes: `feed` answers whether the `end` event came, throws
 * `EventTooLarge` past the bound; the ids and `retry` it reads go to `position`.
 */
const makeParser = (position: Position, onEvent: (event: string, data: string) => void, maxEventChars: number) => {
  const decoder = new TextDecoder()
  let events = 0
  let ended = false
  let tooLarge = false
  const parser = createParser({
    maxBufferSize: maxEventChars,
    onEvent: (message) => {
      if (ended) return
      events++
      if (message.id !== undefined) position.lastEventId = message.id
      const name = message.event ?? "message"
      if (name === "end") ended = true
      onEvent(name, message.data)
    },
    onRetry: (ms) => {
      position.retryMs = ms
    },
    onError: (error) => {
      if (error.type === "max-buffer-size-exceeded") tooLarge = true
    }
  })
  return {
    feed: (bytes: Uint8Array): boolean => {
      parser.feed(decoder.decode(bytes, { stream: true }))
      if (tooLarge) throw new EventTooLarge(maxEventChars)
      return ended
    },
    events: () => events
  }
}
