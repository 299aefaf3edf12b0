import { describe, expect, it } from "@effect/vitest"
import { DateTime, Duration } from "effect"
import * as TokenExpiry from "../src/TokenExpiry.js"

const source = { whose: "the token of profile \"default\"", remedy: "run agent-runs login again" }
const expiresAt = DateTime.unsafeMake("2026-12-01T10:00:00.000Z")
const before = (duration: Duration.DurationInput) => DateTime.subtractDuration(expiresAt, duration)

describe("TokenExpiry.warning", () => {
  it("warns within 7 days of the expiry, naming the time without milliseconds and what to do", () => {
    expect(TokenExpiry.warning(source, expiresAt, before(Duration.days(3)))).toBe(
      "warning: the token of profile \"default\" expires on 2026-12-01T10:00:00Z; run agent-runs login again"
    )
    expect(TokenExpiry.warning(source, expiresAt, before(Duration.days(7)))).toMatch(/ expires on /)
  })

  it("says nothing further than 7 days away", () => {
    expect(TokenExpiry.warning(source, expiresAt, before(Duration.sum(Duration.days(7), Duration.seconds(1))))).toBeUndefined()
    expect(TokenExpiry.warning(source, expiresAt, before(Duration.days(30)))).toBeUndefined()
  })

  it("says the token expired once the time has come", () => {
    expect(TokenExpiry.warning(source, expiresAt, expiresAt)).toBe(
      "warning: the token of profile \"default\" expired on 2026-12-01T10:00:00Z; run agent-runs login again"
    )
    expect(TokenExpiry.warning(source, expiresAt, DateTime.addDuration(expiresAt, Duration.days(40)))).toMatch(/ expired on /)
  })
})
