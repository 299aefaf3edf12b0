/**
 * Server-Sent Events (`Sse.events`, on eventsource-parser): line endings and chunking (a CR LF
 * split across chunks is one line ending), fields, comments, ids, UTF-8; the bound on one event
 * (refused once the bytes fed pass it, whatever the chunks); and `followRun` failing with
 * `EventTooLarge`, without reconnecting, when a server sends an event over the default bound.
 */
import { FetchHttpClient } from "@effect/platform"
import { Harness } from "@agent-runs/core"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Either, Layer, Stream } from "effect"
import { AgentRunsClient, Sse } from "../src/index.js"
import { RUN, startServer } from "./server.js"

const encoder = new TextEncoder()

/** `text` as UTF-8 bytes cut into chunks of `size` bytes. */
const chunksOf = (text: string, size: number): Array<Uint8Array> => {
  const bytes = encoder.encode(text)
  const chunks: Array<Uint8Array> = []
  for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.subarray(i, i + size))
  return chunks
}

/** The events of `chunks`, or the failure. */
const parse = (chunks: Iterable<Uint8Array>, options?: Sse.SseOptions) =>
  Effect.runSync(Effect.either(Stream.runCollect(Sse.events(Stream.fromIterable(chunks), options)))).pipe(
    Either.map(Chunk.toArray)
  )

/** The events of `text` fed in chunks of `size` bytes (all at once by default). */
const events = (text: string, size = Number.MAX_SAFE_INTEGER, options?: Sse.SseOptions): Array<Sse.SseEvent> =>
  Either.getOrThrow(parse(chunksOf(text, size), options))

/** An event of `dataChars` 'x's as one-byte chunks, counting how many were taken. */
const oneByteAtATime = (dataChars: number) => {
  const text = `data: ${"x".repeat(dataChars)}\n\n`
  const taken = { bytes: 0 }
  const chunks = function*() {
    for (let i = 0; i < text.length; i++) {
      taken.bytes++
      yield Uint8Array.of(text.charCodeAt(i))
    }
  }
  return { taken, chunks: { [Symbol.iterator]: chunks } }
}

const MiB = 1024 * 1024

describe("Sse.events", () => {
  it("joins data lines with newlines; event defaults to message", () => {
    expect(events("data: {\ndata:  \"a\": 1\ndata: }\n\n")).toEqual([
      { id: undefined, event: "message", data: "{\n \"a\": 1\n}", retry: undefined }
    ])
  })

  it("takes LF, CRLF and CR line endings, split anywhere across chunks", () => {
    const text = "event: timeline\r\nid: 1\r\ndata: one\r\n\r\nid: 2\rdata: two\r\rid: 3\ndata: three\n\n"
    const expected = [
      { id: "1", event: "timeline", data: "one", retry: undefined },
      { id: "2", event: "message", data: "two", retry: undefined },
      { id: "3", event: "message", data: "three", retry: undefined }
    ]
    for (const size of [1, 2, 3, 5, 7, text.length]) expect(events(text, size)).toEqual(expected)
  })

  it("a CR LF split across chunks is one line ending, not an empty line (no false event boundary)", () => {
    const chunks = ["id: 7\r", "\ndata: one\r", "\ndata: two\r", "\n\r", "\n"].map((part) => encoder.encode(part))
    expect(Either.getOrThrow(parse(chunks))).toEqual([{ id: "7", event: "message", data: "one\ntwo", retry: undefined }])
  })

  it("keeps the last id for later events (as EventSource does), ignores ids with NULL, starts from the given id", () => {
    const text = "data: a\n\nid: 9\ndata: b\n\ndata: c\n\nid: x\u0000\ndata: d\n\n"
    expect(events(text, undefined, { lastEventId: "4" }).map((e) => e.id)).toEqual(["4", "9", "9", "9"])
  })

  it("skips comments, a BOM, unknown fields and events without data; reads retry", () => {
    expect(events("\uFEFF: open\n\nretry: 1500\nfoo: bar\nevent: ping\n\n:keep-alive\ndata\n\n", 1)).toEqual([
      { id: undefined, event: "message", data: "", retry: 1500 }
    ])
  })

  it("drops an event not ended by an empty line when the stream ends", () => {
    expect(events("data: complete\n\ndata: partial")).toEqual([
      { id: undefined, event: "message", data: "complete", retry: undefined }
    ])
  })

  it("decodes UTF-8 split across chunks", () => {
    expect(events("id: 1\ndata: héllo ✓\n\n", 1)).toEqual([{ id: "1", event: "message", data: "héllo ✓", retry: undefined }])
  })

  it("refuses a 10 MB event fed one byte at a time once about 1 MiB was fed (bound 1 MiB), without reading the rest", () => {
    const { chunks, taken } = oneByteAtATime(10_000_000)
    const result = parse(chunks, { maxEventChars: MiB })
    expect(Either.isLeft(result) && result.left).toMatchObject({ _tag: "EventTooLarge", maxChars: MiB })
    // Refused just past the bound: the source is read in chunks of 4,096, so at most one more.
    expect(taken.bytes).toBeGreaterThan(MiB)
    expect(taken.bytes).toBeLessThanOrEqual(MiB + 2 * 4096)
  })

  it("parses a 900 KB event fed one byte at a time (bound 1 MiB), and the events before a refused one", () => {
    const { chunks } = oneByteAtATime(900_000)
    const [event] = Either.getOrThrow(parse(chunks, { maxEventChars: MiB }))
    expect(event?.data.length).toBe(900_000)
    const text = `id: 1\ndata: small\n\ndata: ${"y".repeat(2000)}\n\n`
    const refused = parse(chunksOf(text, 100), { maxEventChars: 1000 })
    expect(Either.isLeft(refused)).toBe(true)
    const before = Effect.runSync(Stream.runCollect(Stream.either(Sse.events(Stream.fromIterable(chunksOf(text, 100)), { maxEventChars: 1000 }))))
    expect(Chunk.toArray(before).map((e) => Either.isRight(e) ? e.right.data : e.left._tag)).toEqual(["small", "EventTooLarge"])
  })

  it("the default bound takes the largest event the server sends: one agent output line in its envelope", () => {
    const line = "z".repeat(Harness.MAX_LINE_BYTES)
    const data = JSON.stringify({ op: "message", execution_id: RUN, step: 1, role: "assistant", block: { type: "text", text: line } })
    const [event] = events(`id: 1-1\nevent: conversation\ndata: ${data}\n\n`, 64 * 1024)
    expect(event?.data.length).toBe(data.length)
    expect(Sse.MAX_EVENT_CHARS).toBeGreaterThan(data.length)
  })

  it.scopedLive("followRun fails with EventTooLarge when the server sends an event over the bound, and does not reconnect", () =>
    Effect.gen(function*() {
      const server = yield* Effect.acquireRelease(
        Effect.promise(() =>
          startServer((_request, response) => {
            response.writeHead(200, { "content-type": "text/event-stream" })
            response.write(`: open\n\nevent: conversation\ndata: `)
            const piece = "w".repeat(MiB)
            // Never ends by itself: the client must stop reading.
            const write = () => {
              while (response.write(piece)) {
                if (response.destroyed) return
              }
              response.once("drain", write)
            }
            write()
          })
        ),
        (server) => Effect.promise(() => server.close())
      )
      const layer = AgentRunsClient.layer({ url: server.url, token: "ar_sse" }).pipe(Layer.provide(FetchHttpClient.layer))
      const client = yield* Effect.provide(AgentRunsClient.AgentRunsClient, layer)
      const failure = yield* Effect.flip(Stream.runCollect(client.followRun(RUN)))
      expect(failure).toMatchObject({ _tag: "EventTooLarge", maxChars: Sse.MAX_EVENT_CHARS })
      expect(failure.message).toContain(`more than ${Sse.MAX_EVENT_CHARS} characters`)
      expect(server.requests).toHaveLength(1)
    }))
})
