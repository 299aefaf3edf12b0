/**
 * A team's retention (docs/retention.md, Retention.ts): how long its ended runs and its webhook
 * deliveries are kept, within the server's ceilings.
 *
 * Decisions:
 * - Anyone acting in the team reads it (with the server's ceilings and what applies); only its
 *   admins and instance administrators change it (403), never an agent's run token. A change is
 *   audited (`team.retention.set`).
 * - `PUT` replaces both values (an absent key removes the team's limit). A value above the
 *   server's ceiling is a 400 naming the field: it could never apply. When the operator lowers a
 *   ceiling later, the lower one applies; the team's value is kept.
 * - A change applies from the sweep's next pass (within the hour), to data old enough then.
 */
import { Context, Effect } from "effect"
import type { Viewer } from "../domain/Access.js"
import { InvalidRequest, NotAuthorized } from "../domain/Errors.js"
import { aboveCeiling, effectiveRetention, type RetentionCeilings, type TeamRetention, TeamRetentionResponse } from "../domain/Retention.js"
import { existingTeam } from "../internal/Principals.js"
import { storageUnavailable } from "../internal/Services.js"
import { IdentityStore } from "../ports/IdentityStore.js"
import { Audit } from "./Audit.js"

/** The server's ceilings (none: no limit). */
export class RetentionCeilingsTag extends Context.Reference<RetentionCeilingsTag>()("@agent-runs/core/RetentionCeilings", {
  defaultValue: (): RetentionCeilings => ({})
}) {}

const changeProblem = (viewer: Viewer): string | undefined => {
  if (viewer.acting_run_id !== undefined) return "an agent's run token cannot change the team's retention"
  if (viewer.instance_admin || viewer.role === "admin") return undefined
  return "only the team's admins and instance administrators change its retention"
}

const response = (team: TeamRetention, server: RetentionCeilings) =>
  new TeamRetentionResponse({ team, server, effective: effectiveRetention(team, server) })

export class Retention extends Effect.Service<Retention>()("@agent-runs/core/Retention", {
  dependencies: [Audit.Default],
  effect: Effect.gen(function*() {
    const audit = yield* Audit
    const identities = yield* IdentityStore
    const ceilings = yield* RetentionCeilingsTag

    /** The retention of the caller's team, the server's ceilings, and what applies. */
    const get = Effect.fn("Retention.get")(
      function*(viewer: Viewer) {
        return response((yield* existingTeam(identities, viewer.team_uid)).retention, ceilings)
      },
      storageUnavailable
    )

    /** Replaces the retention of the caller's team: its admins only. */
    const set = Effect.fn("Retention.set")(
      function*(viewer: Viewer, retention: TeamRetention) {
        const problem = changeProblem(viewer)
        if (problem !== undefined) return yield* new NotAuthorized({ message: problem })
        const above = aboveCeiling(retention, ceilings)
        if (above !== undefined) {
          return yield* InvalidRequest.forField(above.field, `must not be more than the server's ceiling (${above.ceiling} days)`)
        }
        const team = yield* existingTeam(identities, viewer.team_uid)
        yield* audit.recording(viewer, identities.setTeamRetention(team.uid, retention), () => ({
          action: "team.retention.set",
          resource: { type: "team", id: team.uid }
        }))
        return response(retention, ceilings)
      },
      storageUnavailable,
      audit.refusals("team.retention.set", (_retention: TeamRetention) => ({ type: "team", id: null }))
    )

    return { get, set } as const
  })
}) {}
