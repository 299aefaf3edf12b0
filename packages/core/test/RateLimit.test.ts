import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { AUTH_FAILURES_PER_MINUTE, DELIVERIES_PER_MINUTE, makeLimiter, makeWeightedLimiter } from "../src/domain/RateLimit.js"

const T = 1_800_000_000_000

describe("makeLimiter", () => {
  it("allows 60 deliveries a minute per key, then answers how long to wait", () => {
    const limiter = makeLimiter(DELIVERIES_PER_MINUTE)
    for (let i = 0; i < 60; i++) expect(limiter.take("w1|10.0.0.1", T + i * 100)).toEqual({ allowed: true })
    expect(limiter.take("w1|10.0.0.1", T + 6_000)).toEqual({ allowed: false, retryAfterMs: 54_000 })
    // Another sender, or another webhook, has its own budget.
    expect(limiter.take("w1|10.0.0.2", T + 6_000)).toEqual({ allowed: true })
    expect(limiter.take("w2|10.0.0.1", T + 6_000)).toEqual({ allowed: true })
    // The first event leaves the window exactly one minute after it happened.
    expect(limiter.take("w1|10.0.0.1", T + 59_999).allowed).toBe(false)
    expect(limiter.take("w1|10.0.0.1", T + 60_000)).toEqual({ allowed: true })
  })

  it("counts authentication failures as a budget: check does not spend, record does", () => {
    const budget = makeLimiter(AUTH_FAILURES_PER_MINUTE)
    for (let i = 0; i < 10; i++) {
      expect(budget.check("w1|a", T + i).allowed).toBe(true)
      budget.record("w1|a", T + i)
    }
    expect(budget.check("w1|a", T + 10)).toEqual({ allowed: false, retryAfterMs: 60_000 - 10 })
    expect(budget.check("w1|a", T + 60_000).allowed).toBe(true)
  })

  it("prune forgets idle keys", () => {
    const limiter = makeLimiter({ max: 2, windowMs: 1_000 })
    limiter.take("a", T)
    limiter.take("b", T + 500)
    expect(limiter.prune(T + 999)).toBe(2)
    expect(limiter.prune(T + 1_000)).toBe(1)
    expect(limiter.prune(T + 1_500)).toBe(0)
  })

  it.prop(
    "never allows more than max in any window, and waiting retryAfterMs is always enough",
    [
      fc.integer({ min: 1, max: 5 }),
      fc.integer({ min: 10, max: 1_000 }),
      fc.array(fc.tuple(fc.integer({ min: 0, max: 300 }), fc.constantFrom("a", "b")), { maxLength: 200 })
    ],
    ([max, windowMs, steps]) => {
      const limiter = makeLimiter({ max, windowMs })
      const allowed: Record<string, Array<number>> = { a: [], b: [] }
      let now = T
      for (const [gap, key] of steps) {
        now += gap
        const decision = limiter.take(key, now)
        if (decision.allowed) {
          allowed[key]!.push(now)
          const inWindow = allowed[key]!.filter((t) => t > now - windowMs)
          expect(inWindow.length).toBeLessThanOrEqual(max)
        } else {
          expect(decision.retryAfterMs).toBeGreaterThan(0)
          expect(decision.retryAfterMs).toBeLessThanOrEqual(windowMs)
          expect(limiter.check(key, now + decision.retryAfterMs).allowed).toBe(true)
        }
      }
    }
  )

  it("takes several events at once, all or none (a batch of runs)", () => {
    const limiter = makeLimiter({ max: 5, windowMs: 60_000 })
    expect(limiter.take("team", T, 3)).toEqual({ allowed: true })
    expect(limiter.take("team", T + 1_000, 3)).toEqual({ allowed: false, retryAfterMs: 59_000 })
    // Nothing was counted for the refused batch: two single events still fit.
    expect(limiter.take("team", T + 1_000, 2)).toEqual({ allowed: true })
    expect(limiter.check("team", T + 2_000)).toEqual({ allowed: false, retryAfterMs: 58_000 })
    expect(limiter.check("team", T + 2_000, 6)).toEqual({ allowed: false, retryAfterMs: 60_000 })
  })

  it("refund forgets the newest events of a key", () => {
    const limiter = makeLimiter({ max: 2, windowMs: 60_000 })
    expect(limiter.take("team", T, 2)).toEqual({ allowed: true })
    limiter.refund("team")
    expect(limiter.take("team", T + 1_000)).toEqual({ allowed: true })
    expect(limiter.check("team", T + 2_000)).toEqual({ allowed: false, retryAfterMs: 58_000 })
    limiter.refund("team", 5)
    limiter.refund("nobody")
    expect(limiter.prune(T + 2_000)).toBe(0)
  })

  it.prop(
    "batches: never more than max in any window, and retryAfterMs is exactly how long to wait",
    [
      fc.integer({ min: 1, max: 5 }),
      fc.integer({ min: 10, max: 1_000 }),
      fc.array(fc.tuple(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 1, max: 4 })), { maxLength: 200 })
    ],
    ([max, windowMs, steps]) => {
      const limiter = makeLimiter({ max, windowMs })
      const allowed: Array<number> = []
      let now = T
      for (const [gap, count] of steps) {
        now += gap
        const decision = limiter.take("k", now, count)
        if (decision.allowed) {
          for (let i = 0; i < count; i++) allowed.push(now)
          expect(allowed.filter((t) => t > now - windowMs).length).toBeLessThanOrEqual(max)
        } else if (count <= max) {
          expect(decision.retryAfterMs).toBeGreaterThan(0)
          expect(decision.retryAfterMs).toBeLessThanOrEqual(windowMs)
          expect(limiter.check("k", now + decision.retryAfterMs, count).allowed).toBe(true)
          expect(limiter.check("k", now + decision.retryAfterMs - 1, count).allowed).toBe(false)
        } else {
          expect(decision).toEqual({ allowed: false, retryAfterMs: windowMs })
        }
      }
    }
  )
})

describe("makeWeightedLimiter", () => {
  it("bounds both the count and the weight of a key's events in the window, and says when there is room", () => {
    const limiter = makeWeightedLimiter({ maxCount: 3, maxWeight: 100, windowMs: 60_000 })
    expect(limiter.take("run", 0, 60)).toEqual({ allowed: true })
    expect(limiter.take("run", 1_000, 30)).toEqual({ allowed: true })
    // 60 + 30 + 20 > 100: room once the first event leaves the window.
    expect(limiter.take("run", 2_000, 20)).toEqual({ allowed: false, retryAfterMs: 58_000 })
    expect(limiter.take("run", 2_000, 10)).toEqual({ allowed: true })
    // The count is spent too: room once the first leaves.
    expect(limiter.take("run", 3_000, 0)).toEqual({ allowed: false, retryAfterMs: 57_000 })
    expect(limiter.take("other", 3_000, 100)).toEqual({ allowed: true })
    expect(limiter.take("run", 60_000, 40)).toEqual({ allowed: true })
    // Heavier than the whole budget: never; the whole window is the answer.
    expect(limiter.take("fresh", 0, 101)).toEqual({ allowed: false, retryAfterMs: 60_000 })
  })

  it("refund forgets the newest event; prune forgets idle keys", () => {
    const limiter = makeWeightedLimiter({ maxCount: 1, maxWeight: 10, windowMs: 1_000 })
    expect(limiter.take("a", 0, 5)).toEqual({ allowed: true })
    expect(limiter.take("a", 0, 5).allowed).toBe(false)
    limiter.refund("a")
    expect(limiter.take("a", 0, 5)).toEqual({ allowed: true })
    expect(limiter.prune(500)).toBe(1)
    expect(limiter.prune(1_000)).toBe(0)
  })

  it.prop(
    "never lets the events of any window exceed either bound",
    [fc.array(fc.tuple(fc.nat({ max: 5_000 }), fc.nat({ max: 40 })), { maxLength: 60 })],
    ([steps]) => {
      const limit = { maxCount: 5, maxWeight: 100, windowMs: 1_000 }
      const limiter = makeWeightedLimiter(limit)
      const taken: Array<{ at: number; weight: number }> = []
      let now = 0
      for (const [gap, weight] of steps) {
        now += gap
        if (limiter.take("k", now, weight).allowed) taken.push({ at: now, weight })
        const live = taken.filter((e) => e.at > now - limit.windowMs)
        expect(live.length).toBeLessThanOrEqual(limit.maxCount)
        expect(live.reduce((s, e) => s + e.weight, 0)).toBeLessThanOrEqual(limit.maxWeight)
      }
    }
  )
})
