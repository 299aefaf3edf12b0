/**
 * A team's members and service accounts (docs/reference/access.md), managed by the team's admins
 * (under `/agent/team`, in the team the TEAM header names) and by instance administrators (under
 * `/admin/principals/{uid}/memberships/{team_uid}`), through the same checks.
 *
 * Decisions:
 * - Only an admin of the team acting in it (a token limited below admin does not count), or an
 *   instance administrator, manages it (403 otherwise); never an agent's run token. A team admin
 *   grants at most `admin` of its own team, its own role there: instance administration is only
 *   granted through the admin API, and every change names the team the request acts in, so a team
 *   admin reaches no other team.
 * - Adding a member names an existing principal by uid (a deleted or unknown one is a 404). A team
 *   admin adds users only: a service account of another team is never taken over (403); an
 *   instance administrator adds anyone. The team's admins see members as `TeamMember` (nothing of
 *   their other teams, their email or their rights elsewhere).
 * - A team keeps at least one admin who is neither disabled nor deleted: demoting or removing the
 *   last one is a 409. (Two admins demoting each other at the same instant can both pass; an
 *   instance administrator can always repair a team.)
 * - A service account made by a team admin is a member of that team only. The team admin can
 *   delete only the team's own service accounts (`isTeamServiceAccount`: in no other team, not an
 *   instance administrator; others are a 404, or a 409 when in other teams too).
 * - Members are listed in uid order, a page at a time (`PRINCIPAL_PAGE_LIMIT`), to the team's admins.
 */
import { Clock, DateTime, Effect, Option } from "effect"
import type { Viewer } from "../domain/Access.js"
import { Conflict, NotAuthorized, ResourceNotFound } from "../domain/Errors.js"
import { Ids, type PrincipalUid, type TeamUid } from "../domain/Ids.js"
import {
  activeMemberships,
  type CreateServiceAccountRequest,
  isTeamServiceAccount,
  ListTeamMembersResponse,
  Principal,
  type Role,
  teamMemberOf
} from "../domain/Identity.js"
import { existingTeam, livePrincipal, requireMemberManager } from "../internal/Principals.js"
import { storageUnavailable } from "../internal/Services.js"
import { IdentityStore } from "../ports/IdentityStore.js"
import { Audit } from "./Audit.js"

/** A page of a team's members. */
export interface MemberPage {
  readonly after: PrincipalUid | undefined
  readonly limit: number
}

export class TeamMembers extends Effect.Service<TeamMembers>()("@agent-runs/core/TeamMembers", {
  dependencies: [Audit.Default],
  effect: Effect.gen(function*() {
    const audit = yield* Audit
    const store = yield* IdentityStore
    const ids = yield* Ids

    /** 409 when the change would leave the team without an active admin. */
    const keepsAnAdmin = (principal: Principal, team: TeamUid, nextRole: Role | undefined) =>
      Effect.gen(function*() {
        const wasAdmin = activeMemberships(principal).some((m) => m.team_uid === team && m.role === "admin")
        if (!wasAdmin || nextRole === "admin") return
        if ((yield* store.countTeamAdmins(team)) <= 1) {
          return yield* new Conflict({ message: `team ${team} would be left without an admin; make another member its admin first` })
        }
      })

    /** Sets `uid`'s role in `team`, adding it as a member when it is not one. */
    const setRole = Effect.fn("TeamMembers.setRole")(
      function*(viewer: Viewer, team: TeamUid, uid: PrincipalUid, role: Role) {
        yield* requireMemberManager(viewer, team)
        yield* existingTeam(store, team)
        const principal = yield* livePrincipal(store, uid)
        const joining = !principal.memberships.some((m) => m.team_uid === team)
        if (joining && principal.type !== "user" && !viewer.instance_admin) {
          return yield* new NotAuthorized({ message: `principal ${uid} is a service account of another team; a team admin adds users only` })
        }
        yield* keepsAnAdmin(principal, team, role)
        yield* audit.recording(viewer, store.setMembership(uid, team, role), () => ({
          action: "membership.set",
          resource: { type: "principal", id: uid },
          team_uid: team
        }))
        return Option.getOrThrow(yield* store.getPrincipal(uid))
      },
      storageUnavailable,
      audit.refusals("membership.set", (_team: TeamUid, uid: PrincipalUid) => ({ type: "principal", id: uid }))
    )

    /** Removes `uid` from `team`; a principal that is not a member is a 404. */
    const remove = Effect.fn("TeamMembers.remove")(
      function*(viewer: Viewer, team: TeamUid, uid: PrincipalUid) {
        yield* requireMemberManager(viewer, team)
        const principal = yield* livePrincipal(store, uid)
        if (!principal.memberships.some((m) => m.team_uid === team)) return yield* ResourceNotFound.of("member", uid)
        yield* keepsAnAdmin(principal, team, undefined)
        yield* audit.recording(viewer, store.removeMembership(uid, team), () => ({
          action: "membership.remove",
          resource: { type: "principal", id: uid },
          team_uid: team
        }))
      },
      storageUnavailable,
      audit.refusals("membership.remove", (_team: TeamUid, uid: PrincipalUid) => ({ type: "principal", id: uid }))
    )

    /** A page of the team's members with their role there. */
    const list = Effect.fn("TeamMembers.list")(
      function*(viewer: Viewer, team: TeamUid, page: MemberPage) {
        yield* requireMemberManager(viewer, team)
        const found = yield* store.listPrincipals({ team_uid: team, after: page.after, limit: page.limit + 1 })
        const members = found.slice(0, page.limit).map((p) => teamMemberOf(p, team))
        const last = members[members.length - 1]
        return new ListTeamMembersResponse({ members, next_cursor: found.length > page.limit && last !== undefined ? last.uid : null })
      },
      storageUnavailable
    )

    /** A new service account, a member of the caller's team only. */
    const createServiceAccount = Effect.fn("TeamMembers.createServiceAccount")(
      function*(viewer: Viewer, request: CreateServiceAccountRequest) {
        yield* requireMemberManager(viewer, viewer.team_uid)
        const principal = new Principal({
          uid: (yield* ids.uid22) as PrincipalUid,
          type: "service_account",
          display_name: request.display_name.trim(),
          instance_admin: false,
          memberships: [{ team_uid: viewer.team_uid, role: request.role }],
          created_at: DateTime.unsafeMake(yield* Clock.currentTimeMillis)
        })
        yield* audit.recording(viewer, store.createPrincipal(principal), () => ({
          action: "principal.create",
          resource: { type: "principal", id: principal.uid }
        }))
        return principal
      },
      storageUnavailable,
      audit.refusals("principal.create", () => ({ type: "principal", id: null }))
    )

    /** Deletes a service account of the caller's team that is a member of no other team. */
    const deleteServiceAccount = Effect.fn("TeamMembers.deleteServiceAccount")(
      function*(viewer: Viewer, uid: PrincipalUid) {
        yield* requireMemberManager(viewer, viewer.team_uid)
        const principal = yield* livePrincipal(store, uid)
        const inTeam = principal.type === "service_account" && principal.memberships.some((m) => m.team_uid === viewer.team_uid)
        if (!inTeam || principal.instance_admin) return yield* ResourceNotFound.of("service account", uid)
        if (!isTeamServiceAccount(principal, viewer.team_uid)) {
          return yield* new Conflict({ message: `service account ${uid} is a member of other teams too; an instance administrator deletes it` })
        }
        yield* keepsAnAdmin(principal, viewer.team_uid, undefined)
        const at = yield* Clock.currentTimeMillis
        yield* audit.recording(viewer, store.deletePrincipal(uid, at), () => ({
          action: "principal.delete",
          resource: { type: "principal", id: uid }
        }))
      },
      storageUnavailable,
      audit.refusals("principal.delete", (uid: PrincipalUid) => ({ type: "principal", id: uid }))
    )

    return { setRole, remove, list, createServiceAccount, deleteServiceAccount } as const
  })
}) {}
