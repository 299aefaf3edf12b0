import { describe, expect, it } from "@effect/vitest"
import { similarity, trigrams } from "../src/domain/Trigram.js"

// The expected values are PostgreSQL 15's pg_trgm answers to the same calls
// (`similarity(a, b)::float8`, `show_trgm(t)`); the storage conformance suite checks the two agree
// on generated runs.
describe("Trigram: pg_trgm's similarity", () => {
  it("trigrams: lowercased words of letters and digits, two spaces before and one after", () => {
    expect([...trigrams("Fix it!")].sort()).toEqual(["  f", "  i", " fi", " it", "fix", "it ", "ix "])
    expect(trigrams("!!! _ 😀").size).toBe(0)
  })

  it("similarity = common / union of the trigram sets, in single precision", () => {
    expect(similarity("flakey test", "fix the flaky test")).toBe(0.44999998807907104)
    expect(similarity("deplyo servce", "deploy the service")).toBe(0.375)
    expect(similarity("a_b", "b a")).toBe(1)
    expect(similarity("ärger", "Ärgernis")).toBe(0.5)
    expect(similarity("", "x")).toBe(0)
  })
})
