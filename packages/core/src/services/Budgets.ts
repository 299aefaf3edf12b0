/**
 * A team's budgets and spend (docs/budgets.md, Budget.ts): the defaults and ceilings of its runs'
 * `max_cost_usd` and `max_turns`, and what its runs spent by day.
 *
 * Decisions:
 * - Anyone acting in the team reads both (viewers too, and run tokens: an agent may check what it
 *   has left); only the team's admins and instance administrators change the budgets (403), never
 *   an agent's run token. A change is audited (`team.budgets.set`).
 * - `PUT` replaces all four values (an absent key removes it). A default above its ceiling is a 400
 *   naming the default: it could never apply.
 * - A change applies to runs created after it; a run keeps the budget it was created with.
 * - The spend is by UTC day of the runs' creation, for the last `days` days (today included; 1 to
 *   90, 30 by default), days without runs left out.
 */
import { Clock, Effect, Schema } from "effect"
import type { Viewer } from "../domain/Access.js"
import { type TeamBudgets } from "../domain/Budget.js"
import { InvalidRequest, NotAuthorized } from "../domain/Errors.js"
import { existingTeam } from "../internal/Principals.js"
import { storageUnavailable } from "../internal/Services.js"
import { IdentityStore } from "../ports/IdentityStore.js"
import { RunStore } from "../ports/RunStore.js"
import { Audit } from "./Audit.js"

/** The longest spend window, in days. */
export const MAX_SPEND_DAYS = 90
/** The spend window when none is asked, in days. */
export const DEFAULT_SPEND_DAYS = 30

const DAY_MS = 86_400_000

/** A team's spend on one day. */
export const DaySpend = Schema.Struct({
  day: Schema.String,
  runs: Schema.NonNegativeInt,
  cost_usd: Schema.Number,
  input_tokens: Schema.Number,
  output_tokens: Schema.Number
}).annotations({ identifier: "DaySpend" })

/** `GET /agent/team/spend`. */
export class TeamSpendResponse extends Schema.Class<TeamSpendResponse>("TeamSpendResponse")({
  /** The first day of the window, `YYYY-MM-DD` (UTC). */
  since: Schema.String,
  days: Schema.Array(DaySpend),
  total_cost_usd: Schema.Number
}) {}

const changeProblem = (viewer: Viewer): string | undefined => {
  if (viewer.acting_run_id !== undefined) return "an agent's run token cannot change the team's budgets"
  if (viewer.instance_admin || viewer.role === "admin") return undefined
  return "only the team's admins and instance administrators change its budgets"
}

/** A default above its ceiling: the default's field and why. */
const defaultAboveCeiling = (budgets: TeamBudgets): InvalidRequest | undefined => {
  if (budgets.default_max_cost_usd !== undefined && budgets.max_cost_usd !== undefined && budgets.default_max_cost_usd > budgets.max_cost_usd) {
    return InvalidRequest.forField("default_max_cost_usd", `must not be more than max_cost_usd (${budgets.max_cost_usd})`)
  }
  if (budgets.default_max_turns !== undefined && budgets.max_turns !== undefined && budgets.default_max_turns > budgets.max_turns) {
    return InvalidRequest.forField("default_max_turns", `must not be more than max_turns (${budgets.max_turns})`)
  }
  return undefined
}

export class Budgets extends Effect.Service<Budgets>()("@agent-runs/core/Budgets", {
  dependencies: [Audit.Default],
  effect: Effect.gen(function*() {
    const audit = yield* Audit
    const identities = yield* IdentityStore
    const runs = yield* RunStore

    /** The budgets of the caller's team. */
    const get = Effect.fn("Budgets.get")(
      function*(viewer: Viewer) {
        return (yield* existingTeam(identities, viewer.team_uid)).budgets
      },
      storageUnavailable
    )

    /** Replaces the budgets of the caller's team: its admins only. */
    const set = Effect.fn("Budgets.set")(
      function*(viewer: Viewer, budgets: TeamBudgets) {
        const problem = changeProblem(viewer)
        if (problem !== undefined) return yield* new NotAuthorized({ message: problem })
        const invalid = defaultAboveCeiling(budgets)
        if (invalid !== undefined) return yield* invalid
        const team = yield* existingTeam(identities, viewer.team_uid)
        yield* audit.recording(viewer, identities.setTeamBudgets(team.uid, budgets), () => ({
          action: "team.budgets.set",
          resource: { type: "team", id: team.uid }
        }))
        return budgets
      },
      storageUnavailable,
      audit.refusals("team.budgets.set", (_budgets: TeamBudgets) => ({ type: "team", id: null }))
    )

    /** What the caller's team's runs spent by day, over the last `days` days (today included). */
    const spend = Effect.fn("Budgets.spend")(
      function*(viewer: Viewer, days: number) {
        const now = yield* Clock.currentTimeMillis
        const since = (Math.floor(now / DAY_MS) - (days - 1)) * DAY_MS
        const spent = yield* runs.spendByDay(viewer.team_uid, since)
        return new TeamSpendResponse({
          since: new Date(since).toISOString().slice(0, 10),
          days: spent,
          total_cost_usd: spent.reduce((sum, day) => sum + day.cost_usd, 0)
        })
      },
      storageUnavailable
    )

    return { get, set, spend } as const
  })
}) {}
