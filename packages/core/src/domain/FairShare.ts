/**
 * Fair share across teams (docs/fair-share.md): which team's QUEUED run the service's own
 * executors claim next, when several teams have runs waiting.
 *
 * Start-time fair queueing over claims: a virtual clock (`vtime`) for the pool, and for each team
 * the virtual time its next claim may start (`next`). A team's claim starts at the later of the two
 * (`startOf`); the team whose claim would start first is claimed from (`nextTeam`), and each claim
 * moves the clock to its start and the team's next start on by `1 / weight` (`afterClaim`).
 *
 * Decisions:
 * - The unit is a claim (an execution), not its length or cost: a team with weight 2 gets two
 *   executions for each one of a team with weight 1 while both have runs waiting. What an
 *   execution then holds is bounded by the team's `max_concurrent_runs` (admission).
 * - A team that had nothing waiting banks no credit: its next claim starts no earlier than the
 *   clock, so a team idle for an hour does not then take the next hour's claims.
 * - A claim while only one team has runs waiting moves nothing (`shareAfter` is undefined): there
 *   is no one to be fair to, and a team alone runs up no debt either. It also spares the common
 *   case (one team, or one team busy at a time) the clock's lock on PostgreSQL.
 * - Ties (equal starts) go to the team whose oldest waiting run is oldest, then the smaller team
 *   id: with one team, or teams that are all equal, claims stay first come, first served.
 * - Within a team, runs go by `config.priority` (higher first), then age (RunStore.claim).
 * - Only the service's own executors claim by share; a self-hosted worker claims its own team's
 *   runs, so there is no one to share with.
 */
import { Schema } from "effect"
import type { TeamUid } from "./Ids.js"

/** The largest team weight. */
export const MAX_SHARE_WEIGHT = 100

/** A team's weight in fair share: 1 (the default) to 100; a team with weight 2 gets twice the claims of one with 1. */
export const ShareWeight = Schema.Int.pipe(Schema.between(1, MAX_SHARE_WEIGHT)).annotations({
  identifier: "ShareWeight",
  description: "The team's weight in fair share across teams: 1 to 100 (default 1)."
})

/** The lowest and highest `config.priority`. */
export const MIN_PRIORITY = -10
export const MAX_PRIORITY = 10

/** `config.priority`: -10 to 10 (absent: 0); within a team, runs with a higher priority are claimed first. */
export const RunPriority = Schema.Int.pipe(Schema.between(MIN_PRIORITY, MAX_PRIORITY)).annotations({
  identifier: "RunPriority",
  description: "Within its team, a run with a higher priority is claimed first: -10 to 10 (absent: 0)."
})

/** A team with runs waiting, as the claimer sees it. */
export interface Contender {
  readonly team: TeamUid
  readonly weight: number
  /** The virtual time its next claim may start (0 for a team never claimed from). */
  readonly next: number
  /** When its oldest waiting run was created (epoch milliseconds). */
  readonly oldest: number
}

/** The virtual time a claim of `c` starts at when the pool's clock reads `vtime`. */
export const startOf = (c: Contender, vtime: number): number => Math.max(vtime, c.next)

const before = (a: Contender, b: Contender, vtime: number): boolean => {
  const sa = startOf(a, vtime)
  const sb = startOf(b, vtime)
  if (sa !== sb) return sa < sb
  if (a.oldest !== b.oldest) return a.oldest < b.oldest
  return a.team < b.team
}

/** The team to claim from next; undefined when none has runs waiting. */
export const nextTeam = (contenders: ReadonlyArray<Contender>, vtime: number): Contender | undefined =>
  contenders.reduce<Contender | undefined>((best, c) => (best === undefined || before(c, best, vtime) ? c : best), undefined)

/** The pool's clock and the team's next start after a claim from `c`, chosen among `contenders`; undefined when it was alone. */
export const shareAfter = (
  contenders: ReadonlyArray<Contender>,
  c: Contender,
  vtime: number
): { readonly vtime: number; readonly next: number } | undefined =>
  contenders.length > 1 ? afterClaim(c, vtime) : undefined

/** The pool's clock and the team's next start after a claim from `c`. */
export const afterClaim = (c: Contender, vtime: number): { readonly vtime: number; readonly next: number } => {
  const start = startOf(c, vtime)
  return { vtime: start, next: start + 1 / c.weight }
}
