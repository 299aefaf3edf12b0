/**
 * The dashboard's event stream follower (app/sse.ts) on a fake connection: each `open` answers a
 * scripted `Response` whose body is cut, closed or errored where the test says. Line endings
 * split across chunks, resuming with `Last-Event-ID` after a drop (no event lost or twice), the
 * `retry` field and its cap, giving up, the API's errors, the abort, and the bound on one event.
 */
import { describe, expect, it } from "vitest"
import {
  DEFAULT_RETRY_MS,
  EventTooLarge,
  followEvents,
  MAX_RECONNECTS,
  MAX_RETRY_MS,
  MIN_RETRY_MS,
  reconnectDelay
} from "../app/sse.js"

const encoder = new TextEncoder()

/** How one scripted body ends after its chunks: closed, or failing as a dropped connection does. */
type Ending = "close" | "drop"

/** A body of `chunks` (text, as UTF-8), then its ending; `pulled` counts the chunks read. */
const body = (chunks: Iterable<string | Uint8Array>, ending: Ending = "close") => {
  const iterator = chunks[Symbol.iterator]()
  const counter = { pulled: 0 }
  const stream = new ReadableStream<Uint8Array>({
    pull: (controller) => {
      const next = iterator.next()
      if (next.done) {
        if (ending === "close") controller.close()
        else controller.error(new TypeError("network error"))
        return
      }
      counter.pulled++
      controller.enqueue(typeof next.value === "string" ? encoder.encode(next.value) : next.value)
    }
  })
  return { response: new Response(stream, { headers: { "content-type": "text/event-stream" } }), counter }
}

/** A connection answering `answers` in turn (a Response, or an error to reject with), recording what it was asked. */
const fakeConnection = (answers: Array<Response | Error>) => {
  const opened: Array<string | undefined> = []
  const waited: Array<number> = []
  return {
    opened,
    waited,
    connection: {
      open: (lastEventId: string | undefined) => {
        opened.push(lastEventId)
        const answer = answers.shift()
        if (answer === undefined) return Promise.reject(new Error("no more answers scripted"))
        return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer)
      },
      dropped: (error: unknown) => error instanceof TypeError,
      wait: (ms: number, signal: AbortSignal) => {
        waited.push(ms)
        return signal.aborted ? Promise.reject(signal.reason) : Promise.resolve()
      }
    }
  }
}

/** Follows with the fake connection; answers the events seen and how following ended. */
const follow = async (answers: Array<Response | Error>, maxEventChars?: number, signal = new AbortController().signal) => {
  const fake = fakeConnection(answers)
  const seen: Array<[string, string]> = []
  const outcome = await followEvents(fake.connection, (event, data) => seen.push([event, data]), signal, maxEventChars).then(
    () => "ended" as const,
    (error: unknown) => error
  )
  return { ...fake, seen, outcome }
}

const event = (id: string, data: string) => `id: ${id}\nevent: timeline\ndata: ${data}\n\n`
const END_DATA = JSON.stringify({ state: "SUCCEEDED" })
const END = `event: end\ndata: ${END_DATA}\n\n`

const MiB = 1024 * 1024

/** An event of `dataChars` 'x's, then `end`, in chunks of one byte. */
const oneByteAtATime = function*(dataChars: number) {
  for (const byte of encoder.encode("event: conversation\ndata: ")) yield Uint8Array.of(byte)
  for (let i = 0; i < dataChars; i++) yield Uint8Array.of(120)
  yield encoder.encode(`\n\n${END}`)
}

describe("reconnectDelay", () => {
  it("keeps the stream's `retry` between a floor and a cap: `retry: 0` does not reconnect in a tight loop", () => {
    expect(reconnectDelay(0, 1)).toBe(MIN_RETRY_MS)
    expect(reconnectDelay(2_000, 3)).toBe(2_000)
    expect(reconnectDelay(10_000_000, 1)).toBe(MAX_RETRY_MS)
    expect(reconnectDelay(undefined, 2)).toBe(2 * DEFAULT_RETRY_MS)
  })
})

describe("followEvents", () => {
  it("a CR LF split across chunks is one line ending, not an event boundary", async () => {
    const chunks = ["id: 1-0\r", "\nevent: timeline\r\ndata: one\r", "\ndata: two\r\n\r", "\nevent: end\r\ndata: {}\r\n\r\n"]
    const { outcome, seen } = await follow([body(chunks).response])
    expect(outcome).toBe("ended")
    expect(seen).toEqual([["timeline", "one\ntwo"], ["end", "{}"]])
  })

  it("resumes after a drop and after a close before `end` with Last-Event-ID: no event lost, none twice", async () => {
    const { opened, outcome, seen, waited } = await follow([
      // Drops in the middle of the third event.
      body([": open\n\nretry: 700\n", event("1-0", "a"), event("2-0", "b"), "id: 2-1\nevent: conv"], "drop").response,
      // Closes cleanly, but before `end`.
      body([": open\n\n", event("2-1", "c"), event("3-1", "d")], "close").response,
      body([": open\n\n", event("4-1", "e"), END]).response
    ])
    expect(outcome).toBe("ended")
    expect(seen.map(([name, data]) => `${name}:${data}`)).toEqual([
      "timeline:a",
      "timeline:b",
      "timeline:c",
      "timeline:d",
      "timeline:e",
      `end:${END_DATA}`
    ])
    expect(opened).toEqual([undefined, "2-0", "3-1"])
    // The stream's `retry` is the delay.
    expect(waited).toEqual([700, 700])
  })

  it("without `retry`, waits 1 s doubling while reconnections bring no event, then gives up with the cause", async () => {
    const unreachable = () => new TypeError("the service cannot be reached")
    const answers = [body([event("1-0", "a")], "drop").response, ...Array.from({ length: MAX_RECONNECTS }, unreachable)]
    const { opened, outcome, seen, waited } = await follow(answers)
    expect(seen).toEqual([["timeline", "a"]])
    expect(outcome).toBeInstanceOf(Error)
    expect((outcome as Error).message).toBe(
      `the live stream dropped, and ${MAX_RECONNECTS} reconnections in a row brought no event: the service cannot be reached`
    )
    expect(opened).toEqual([undefined, ...Array.from({ length: MAX_RECONNECTS }, () => "1-0")])
    expect(waited).toEqual(Array.from({ length: MAX_RECONNECTS }, (_, i) => DEFAULT_RETRY_MS * 2 ** i))
  })

  it("caps the `retry` the stream asks for", async () => {
    const { outcome, waited } = await follow([
      body(["retry: 3600000\n\n", event("1-0", "a")], "drop").response,
      body([END]).response
    ])
    expect(outcome).toBe("ended")
    expect(waited).toEqual([MAX_RETRY_MS])
  })

  it("an answer of the API (not a dropped connection) ends following with it, without reconnecting", async () => {
    const refused = new Error("run not found")
    const { opened, outcome } = await follow([body([event("1-0", "a")], "close").response, refused])
    expect(outcome).toBe(refused)
    expect(opened).toEqual([undefined, "1-0"])
  })

  it("stops waiting and reconnecting once the signal aborts", async () => {
    const controller = new AbortController()
    const fake = fakeConnection([body([event("1-0", "a")], "drop").response])
    const failure = await followEvents(fake.connection, () => controller.abort(), controller.signal).catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(DOMException)
    expect((failure as DOMException).name).toBe("AbortError")
    expect(fake.opened).toEqual([undefined])
  })

  it("refuses a 10 MB event fed one byte at a time once about 1 MiB was read (bound 1 MiB), without reconnecting", async () => {
    const huge = body(oneByteAtATime(10_000_000))
    const refused = await follow([huge.response], MiB)
    expect(refused.outcome).toBeInstanceOf(EventTooLarge)
    expect((refused.outcome as EventTooLarge).message).toBe(
      `an event of the live stream holds more than ${MiB} characters, the most one event may hold`
    )
    expect(huge.counter.pulled).toBeGreaterThan(MiB)
    expect(huge.counter.pulled).toBeLessThan(MiB + 64)
    expect(refused.opened).toHaveLength(1)
  })

  it("parses a 900 KB event fed one byte at a time (bound 1 MiB)", async () => {
    const large = await follow([body(oneByteAtATime(900_000)).response], MiB)
    expect(large.outcome).toBe("ended")
    expect(large.seen.map(([name, data]) => [name, data.length])).toEqual([["conversation", 900_000], ["end", END_DATA.length]])
  })
})
