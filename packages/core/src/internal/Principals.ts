/** What the services that manage identities share: who may use the admin API, the principal a request names. */
import { Effect, Option } from "effect"
import { memberManagementProblem, type Viewer } from "../domain/Access.js"
import { NotAuthorized, ResourceNotFound } from "../domain/Errors.js"
import type { PrincipalUid, TeamUid } from "../domain/Ids.js"
import type { Principal } from "../domain/Identity.js"
import type { IdentityStore } from "../ports/IdentityStore.js"

/** The principal, unless it does not exist or was deleted (both a 404). */
export const livePrincipal = (store: IdentityStore["Type"], uid: PrincipalUid) =>
  Effect.flatMap(store.getPrincipal(uid), (found) =>
    Option.isSome(found) && found.value.deleted_at === null
      ? Effect.succeed<Principal>(found.value)
      : Effect.fail(ResourceNotFound.of("principal", uid)))

/** 403 unless the caller is an instance administrator. */
export const requireInstanceAdmin = (viewer: Viewer) =>
  viewer.instance_admin
    ? Effect.void
    : Effect.fail(new NotAuthorized({ message: "the admin API is for instance administrators only" }))

/** 403 unless the caller manages `team`'s members, service accounts and tokens (Access.memberManagementProblem). */
export const requireMemberManager = (viewer: Viewer, team: TeamUid) => {
  const problem = memberManagementProblem(viewer, team)
  return problem === undefined ? Effect.void : Effect.fail(new NotAuthorized({ message: problem }))
}

/** The team, or a 404. */
export const existingTeam = (store: IdentityStore["Type"], uid: TeamUid) =>
  Effect.flatMap(store.getTeam(uid), Option.match({ onNone: () => Effect.fail(ResourceNotFound.of("team", uid)), onSome: Effect.succeed }))
