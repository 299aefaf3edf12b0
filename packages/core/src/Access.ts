/**
 * Who may see and change what (CONTRACT §3). A resource belongs to a team; Team scope shows it to
 * every member, User scope to its creator and the team's admins. Viewers read only; members
 * change runs, schedules and environments; admins also manage the factory (webhooks, secrets,
 * automations, team settings). Looking up what one may not see is a 404; changing what one may
 * only see is a 403: callers map `canSee` false to ResourceNotFound and `canChange` false to
 * NotAuthorized.
 */
import type { Scope } from "./Common.js"
import type { PrincipalUid, RunId, TeamUid } from "./Ids.js"
import type { Role } from "./Identity.js"

/** The caller, resolved from a token and the TEAM header. */
export interface Viewer {
  readonly principal_uid: PrincipalUid
  readonly team_uid: TeamUid
  readonly role: Role
  readonly instance_admin: boolean
  /**
   * The run whose agent calls, when the caller authenticated with a run token: it acts as the
   * run's executor, and the runs it creates are children of that run.
   */
  readonly acting_run_id?: RunId | undefined
}

/** What access decisions need to know of a resource. */
export interface Owned {
  readonly team_uid: TeamUid
  readonly creator_uid: PrincipalUid
  readonly scope: Scope
}

/** The scope a new resource gets: Team with `team: true`, else the creator's User scope. */
export const scopeFor = (viewer: Viewer, team: boolean | undefined): Scope =>
  team === true ? { type: "Team", uid: viewer.team_uid } : { type: "User", uid: viewer.principal_uid }

/** Whether the viewer may see the resource at all (false: answer 404). */
export const canSee = (viewer: Viewer, owned: Owned): boolean =>
  owned.team_uid === viewer.team_uid &&
  (owned.scope.type === "Team" || owned.creator_uid === viewer.principal_uid || viewer.role === "admin")

/** Whether the viewer may change a resource it can see (false: answer 403). */
export const canChange = (viewer: Viewer, owned: Owned): boolean =>
  canSee(viewer, owned) && viewer.role !== "viewer"

/** Whether the viewer may create runs, schedules and environments in its team. */
export const canCreate = (viewer: Viewer): boolean => viewer.role !== "viewer"

/** Whether the viewer may manage the factory: webhooks, secrets, automations, team settings. */
export const canManageFactory = (viewer: Viewer): boolean => viewer.role === "admin"
