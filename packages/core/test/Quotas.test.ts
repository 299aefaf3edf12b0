import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { fittingCount, isOverBytes, utf8Bytes } from "../src/domain/Quotas.js"

describe("Quotas", () => {
  it.prop("utf8Bytes is the length of the UTF-8 encoding", [fc.string({ unit: "binary" })], ([text]) => {
    expect(utf8Bytes(text)).toBe(new TextEncoder().encode(text).length)
  })

  it.prop(
    "isOverBytes agrees with the encoded length",
    [fc.string({ unit: "binary", maxLength: 40 }), fc.integer({ min: 0, max: 120 })],
    ([text, limit]) => {
      expect(isOverBytes(text, limit)).toBe(new TextEncoder().encode(text).length > limit)
    }
  )

  it("fittingCount keeps items while the total stays within the limit, and always at least one", () => {
    const size = (n: number) => n
    // overhead 10, each item its size plus a separator
    expect(fittingCount([10, 10, 10], size, 10 + 11 + 11, 10)).toBe(2)
    expect(fittingCount([10, 10, 10], size, 10 + 33, 10)).toBe(3)
    expect(fittingCount([1_000, 1], size, 100, 10)).toBe(1)
    expect(fittingCount([], size, 100, 10)).toBe(0)
  })
})
