import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { OutputTail } from "../src/internal/OutputTail.js"

describe("OutputTail", () => {
  it.prop("keeps exactly the last bytes pushed", [fc.array(fc.uint8Array({ maxLength: 50 })), fc.integer({ min: 1, max: 64 })], ([chunks, limit]) => {
    const tail = new OutputTail(limit)
    const letters = chunks.map((chunk) => chunk.map((b) => 97 + (b % 26)))
    for (const chunk of letters) tail.push(chunk)
    const all = letters.map((chunk) => String.fromCharCode(...chunk)).join("")
    expect(tail.toString()).toBe(all.slice(Math.max(0, all.length - limit)))
  })

  it("keeps the last bytes of lines", () => {
    const tail = new OutputTail(10)
    for (const word of ["first line\n", "second\n", "third\n"]) tail.push(new TextEncoder().encode(word))
    expect(tail.toString()).toBe("ond\nthird\n")
  })
})
