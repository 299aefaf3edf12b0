/**
 * How long a team's data is kept (docs/retention.md): its ended runs, with everything that hangs
 * off them (timeline, conversation, transcript, artifacts, agent state, images), and its webhooks'
 * delivery log and payloads.
 *
 * Decisions:
 * - Two ceilings per kind: the server's (set by the operator; none by default: kept for ever) and
 *   the team's (set by its admins, never above the server's). What applies is the shorter.
 * - A run's age is counted from its last change (`updated_at`), and only ended runs go: a run that
 *   is queued, running or waiting for a follow-up is never removed, however old.
 * - A delivery's age is counted from its receipt; its payload (the body its runs got as an
 *   attachment) goes with it, even when the runs it started are kept longer.
 */
import { Schema } from "effect"
import { optionalInput } from "./Common.js"

/** The longest retention that can be asked, in days (100 years: "for ever" is no value at all). */
export const MAX_RETENTION_DAYS = 36_500

const Days = Schema.Int.pipe(Schema.between(1, MAX_RETENTION_DAYS)).annotations({
  description: `days (1 to ${MAX_RETENTION_DAYS}); absent: no limit of this level`
})

/** How long a team keeps its data, as its admins set it: absent keys set no limit. */
export const TeamRetention = Schema.Struct({
  /** Ended runs are removed this many days after their last change. */
  run_days: optionalInput(Days),
  /** Webhook deliveries and their payloads are removed this many days after their receipt. */
  webhook_delivery_days: optionalInput(Days)
}).annotations({ identifier: "TeamRetention" })
export type TeamRetention = typeof TeamRetention.Type

/** The server's ceilings (the operator's): absent keys set no limit. */
export interface RetentionCeilings {
  readonly run_days?: number
  readonly webhook_delivery_days?: number
}

/** `GET`/`PUT /agent/team/retention`: the team's own setting, the server's ceilings, and what applies. */
export class TeamRetentionResponse extends Schema.Class<TeamRetentionResponse>("TeamRetentionResponse")({
  team: TeamRetention,
  server: TeamRetention,
  effective: TeamRetention
}) {}

/** The shorter of two limits, either of which may be absent. */
const shorter = (a: number | undefined, b: number | undefined): number | undefined =>
  a === undefined ? b : b === undefined ? a : Math.min(a, b)

/** What applies to a team: per kind, the shorter of its own limit and the server's. */
export const effectiveRetention = (team: TeamRetention, server: RetentionCeilings): TeamRetention => {
  const run_days = shorter(team.run_days, server.run_days)
  const webhook_delivery_days = shorter(team.webhook_delivery_days, server.webhook_delivery_days)
  return {
    ...(run_days === undefined ? {} : { run_days }),
    ...(webhook_delivery_days === undefined ? {} : { webhook_delivery_days })
  }
}

/** The first key of a team's setting above the server's ceiling, with that ceiling. */
export const aboveCeiling = (
  team: TeamRetention,
  server: RetentionCeilings
): { readonly field: keyof TeamRetention; readonly ceiling: number } | undefined => {
  for (const field of ["run_days", "webhook_delivery_days"] as const) {
    const own = team[field]
    const ceiling = server[field]
    if (own !== undefined && ceiling !== undefined && own > ceiling) return { field, ceiling }
  }
  return undefined
}

const DAY_MS = 86_400_000

/** The time before which data kept `days` days is past its retention, at `now`. */
export const cutoff = (now: number, days: number): number => now - days * DAY_MS
