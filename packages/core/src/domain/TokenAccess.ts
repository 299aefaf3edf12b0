/**
 * The caller an API token stands for (docs/reference/access.md), decided from the token's record,
 * its principal, the TEAM header and the time, with no storage:
 *
 * - An expired token (`expires_at` passed), or one whose principal is disabled or deleted, is a
 *   401 saying which.
 * - The TEAM header (trimmed; blank counts as absent) must name one of the principal's teams, else
 *   403; without it the caller acts in its first team. A token limited to a team acts there only:
 *   another team in the header is a 403, and without the header it acts in that team.
 * - A token limited to a role acts with the lesser of it and the principal's role in the team.
 * - Only an unlimited token of an instance administrator opens the admin API. An instance
 *   administrator in no team acts as a viewer in no team (an empty team uid, which owns nothing).
 */
import { Either } from "effect"
import { lesserRole, type Viewer } from "./Access.js"
import { AuthenticationRequired, NotAuthorized } from "./Errors.js"
import type { TeamUid } from "./Ids.js"
import { activeMemberships, isLimited, type Principal, type TokenRecord } from "./Identity.js"

const shown = (team: string) => JSON.stringify(team.slice(0, 64))

/** Why the token does not authenticate at all, or undefined when it does. */
const refusal = (principal: Principal, token: TokenRecord, now: number): AuthenticationRequired | undefined => {
  if (token.expires_at !== null && token.expires_at.epochMillis <= now) {
    return new AuthenticationRequired({ message: `the token expired at ${token.expires_at.toJSON()}` })
  }
  if (principal.deleted_at !== null) return new AuthenticationRequired({ message: "the token's principal was deleted" })
  if (principal.disabled_at !== null) return new AuthenticationRequired({ message: "the token's principal is disabled" })
  return undefined
}

/** The team the request asks for: the token's own when limited, else the header's (undefined: the first). */
const wantedTeam = (token: TokenRecord, header: string | undefined): Either.Either<string | undefined, NotAuthorized> => {
  const wanted = header?.trim() === "" ? undefined : header?.trim()
  if (token.team_uid === null) return Either.right(wanted)
  return wanted === undefined || wanted === token.team_uid
    ? Either.right(token.team_uid)
    : Either.left(new NotAuthorized({ message: `this token acts only in team ${shown(token.team_uid)}` }))
}

/** The caller the token stands for, or why not (401 or 403). */
export const tokenViewer = (
  principal: Principal,
  token: TokenRecord,
  teamHeader: string | undefined,
  now: number
): Either.Either<Viewer, AuthenticationRequired | NotAuthorized> => {
  const refused = refusal(principal, token, now)
  if (refused !== undefined) return Either.left(refused)
  return Either.flatMap(wantedTeam(token, teamHeader), (wanted) => {
    const memberships = activeMemberships(principal)
    const membership = wanted === undefined ? memberships[0] : memberships.find((m) => m.team_uid === wanted)
    const instanceAdmin = principal.instance_admin && !isLimited(token)
    if (membership === undefined) {
      if (wanted !== undefined) return Either.left(new NotAuthorized({ message: `not a member of team ${shown(wanted)}` }))
      if (!instanceAdmin) return Either.left(new NotAuthorized({ message: "not a member of any team" }))
    }
    const role = membership?.role ?? "viewer"
    return Either.right({
      principal_uid: principal.uid,
      team_uid: membership?.team_uid ?? ("" as TeamUid),
      role: token.max_role === null ? role : lesserRole(role, token.max_role),
      instance_admin: instanceAdmin,
      display_name: principal.display_name,
      token_id: token.token_id
    } satisfies Viewer)
  })
}
