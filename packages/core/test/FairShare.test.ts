/**
 * Fair share (FairShare.ts): teams queueing without end get claims in proportion to their weights,
 * within a claim or two; a team that had nothing waiting banks no credit; ties stay first come,
 * first served.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { afterClaim, type Contender, nextTeam, shareAfter } from "../src/domain/FairShare.js"
import type { TeamUid } from "../src/domain/Ids.js"

const team = (i: number) => `team-${i}` as TeamUid

interface Pool {
  vtime: number
  readonly next: Map<TeamUid, number>
}

/** One claim among `waiting` (team → weight, oldest run); the team claimed from. */
const claimOnce = (pool: Pool, waiting: ReadonlyArray<{ team: TeamUid; weight: number; oldest: number }>): TeamUid => {
  const contenders: Array<Contender> = waiting.map((w) => ({ ...w, next: pool.next.get(w.team) ?? 0 }))
  const chosen = nextTeam(contenders, pool.vtime)!
  const after = afterClaim(chosen, pool.vtime)
  pool.vtime = after.vtime
  pool.next.set(chosen.team, after.next)
  return chosen.team
}

/** How many of `claims` claims each of `weights` teams gets, all queueing without end. */
const shares = (pool: Pool, weights: ReadonlyArray<number>, claims: number): Array<number> => {
  const counts = weights.map(() => 0)
  const waiting = weights.map((weight, i) => ({ team: team(i), weight, oldest: i }))
  for (let n = 0; n < claims; n++) counts[Number(claimOnce(pool, waiting).slice(5))]! += 1
  return counts
}

const newPool = (): Pool => ({ vtime: 0, next: new Map() })

describe("fair share", () => {
  it.prop(
    "two teams queueing without end: each gets claims in proportion to its weight, within one claim",
    [fc.integer({ min: 1, max: 100 }), fc.integer({ min: 1, max: 100 }), fc.integer({ min: 1, max: 2000 })],
    ([a, b, claims]) => {
      const counts = shares(newPool(), [a, b], claims)
      expect(counts[0]! + counts[1]!).toBe(claims)
      counts.forEach((count, i) => expect(Math.abs(count - (claims * [a, b][i]!) / (a + b))).toBeLessThanOrEqual(1))
    }
  )

  // Start-time fair queueing's bound: between any two teams queueing without end, the claims per
  // unit of weight differ by at most one claim of each. (Against the ideal share alone, a heavy
  // team can trail by more at the start, when every team's first claim is due at once and the
  // older runs go first: with weights 1, 1, 1, 1, 5 the first four claims go to the light teams.)
  it.prop(
    "any number of teams: between any two, claims per unit of weight within one claim of each",
    [fc.array(fc.integer({ min: 1, max: 100 }), { minLength: 1, maxLength: 6 }), fc.integer({ min: 1, max: 2000 })],
    ([weights, claims]) => {
      const counts = shares(newPool(), weights, claims)
      expect(counts.reduce((s, c) => s + c, 0)).toBe(claims)
      weights.forEach((wi, i) =>
        weights.forEach((wj, j) =>
          expect(Math.abs(counts[i]! / wi - counts[j]! / wj)).toBeLessThanOrEqual(1 / wi + 1 / wj + 1e-9)
        )
      )
    },
    { fastCheck: { numRuns: 1000 } }
  )

  it.prop(
    "a team that had nothing waiting banks no credit: once back, it shares from then on",
    [fc.integer({ min: 1, max: 100 }), fc.integer({ min: 1, max: 500 }), fc.integer({ min: 2, max: 200 })],
    ([weight, alone, claims]) => {
      const pool = newPool()
      // Team 1 claims alone for a while; team 0 (weight 1) had nothing waiting.
      for (let n = 0; n < alone; n++) claimOnce(pool, [{ team: team(1), weight, oldest: 1 }])
      const counts = shares(pool, [1, weight], claims)
      expect(Math.abs(counts[0]! - claims / (1 + weight))).toBeLessThanOrEqual(1)
    }
  )

  it("with equal starts, the team whose oldest run is oldest goes first (first come, first served)", () => {
    const waiting = [
      { team: team(0), weight: 1, oldest: 20, next: 0 },
      { team: team(1), weight: 1, oldest: 10, next: 0 }
    ]
    expect(nextTeam(waiting, 0)?.team).toBe(team(1))
    expect(nextTeam([], 0)).toBeUndefined()
  })

  it("a claim while one team waits alone moves nothing; among two it moves the clock and the team's next start", () => {
    const alone = { team: team(0), weight: 2, oldest: 0, next: 3 }
    expect(shareAfter([alone], alone, 5)).toBeUndefined()
    expect(shareAfter([alone, { team: team(1), weight: 1, oldest: 1, next: 0 }], alone, 5)).toEqual({ vtime: 5, next: 5.5 })
  })
})
