/** The Server-Sent Events parser: line endings, chunking, fields, comments, ids. */
import { Chunk, Effect, Stream } from "effect"
import { describe, expect, it } from "vitest"
import { Sse } from "../src/index.js"

/** Every item of `text` fed in chunks of `size` characters. */
const parse = (text: string, size = text.length, lastEventId?: string): Array<Sse.SseItem> => {
  const parser = Sse.makeParser(lastEventId)
  const out: Array<Sse.SseItem> = []
  for (let i = 0; i < text.length; i += size) out.push(...parser.push(text.slice(i, i + size)))
  out.push(...parser.end())
  return out
}
const events = (text: string, size?: number, lastEventId?: string) =>
  parse(text, size, lastEventId).flatMap((item) => (item._tag === "Event" ? [item.event] : []))

describe("Sse.makeParser", () => {
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

  it("keeps the last id for later events (as EventSource does), ignores ids with NULL, starts from the given id", () => {
    expect(events("data: a\n\nid: 9\ndata: b\n\ndata: c\n\nid: x\u0000\ndata: d\n\n", undefined, "4").map((e) => e.id)).toEqual([
      "4",
      "9",
      "9",
      "9"
    ])
  })

  it("reports comments, reads retry, skips a BOM, unknown fields and events without data", () => {
    const items = parse("\uFEFF: open\n\nretry: 1500\nfoo: bar\nevent: ping\n\n:keep-alive\ndata\n\n")
    expect(items).toEqual([
      { _tag: "Comment", text: "open" },
      { _tag: "Comment", text: "keep-alive" },
      { _tag: "Event", event: { id: undefined, event: "message", data: "", retry: 1500 } }
    ])
  })

  it("drops an event not ended by an empty line when the stream ends", () => {
    expect(events("data: complete\n\ndata: partial")).toEqual([
      { id: undefined, event: "message", data: "complete", retry: undefined }
    ])
  })

  it("Sse.events decodes a byte stream (UTF-8 split across chunks)", async () => {
    const bytes = new TextEncoder().encode("id: 1\ndata: héllo ✓\n\n")
    const chunks = Array.from(bytes, (b) => Uint8Array.of(b))
    const out = await Effect.runPromise(Stream.runCollect(Sse.events(Stream.fromIterable(chunks))))
    expect(Chunk.toArray(out)).toEqual([{ id: "1", event: "message", data: "héllo ✓", retry: undefined }])
  })
})
