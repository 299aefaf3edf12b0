import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { Demultiplexer } from "../src/internal/Demux.js"

const frame = (stream: number, payload: Uint8Array): Buffer => {
  const header = Buffer.alloc(8)
  header[0] = stream
  header.writeUInt32BE(payload.length, 4)
  return Buffer.concat([header, payload])
}

describe("Demultiplexer", () => {
  it.prop("frames cut anywhere come back as the same stdout and stderr bytes", [
    fc.array(fc.tuple(fc.constantFrom(1, 2), fc.uint8Array({ maxLength: 300 })), { maxLength: 20 }),
    fc.array(fc.integer({ min: 1, max: 50 }), { minLength: 1, maxLength: 10 })
  ], ([frames, cuts]) => {
    const wire = Buffer.concat(frames.map(([stream, payload]) => frame(stream, payload)))
    const demux = new Demultiplexer()
    const out: Array<Uint8Array> = []
    const err: Array<Uint8Array> = []
    let offset = 0
    for (let i = 0; offset < wire.length; i++) {
      const size = cuts[i % cuts.length]!
      for (const piece of demux.push(wire.subarray(offset, offset + size))) (piece.stream === 1 ? out : err).push(piece.bytes)
      offset += size
    }
    const expected = (stream: number) => Buffer.concat(frames.filter(([s]) => s === stream).map(([, p]) => p))
    expect(Buffer.concat(out).equals(expected(1))).toBe(true)
    expect(Buffer.concat(err).equals(expected(2))).toBe(true)
  })
})
