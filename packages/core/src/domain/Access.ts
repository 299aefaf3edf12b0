/**
 * Who may see and change what (docs/reference/access.md). A resource belongs to a team; Team scope shows it to
 * every member, User scope to its creator and the team's admins. Viewers read only; members
 * change runs, schedules and environments; admins also manage the factory (webhooks, secrets,
 * automations, team settings). Looking up what one may not see is a 404; changing what one may
 * only see is a 403: callers map `canSee` false to ResourceNotFound and `canChange` false to
 * NotAuthorized.
 */
import type { Scope } from "./Common.js"
import type { RequestOrigin } from "./Audit.js"
import type { PrincipalUid, RunId, TeamUid, TokenId } from "./Ids.js"
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
  /** The cost budget of that run (`config.max_cost_usd`; Budget.ts), when it has one. */
  readonly acting_run_max_cost_usd?: number | undefined
  /** Its principal's display name (for the audit log), when the caller resolved it. */
  readonly display_name?: string | undefined
  /** The API token it authenticated with (for the audit log; never the token itself). */
  readonly token_id?: TokenId | undefined
  /** Where its request came from (for the audit log); absent for work the service does itself. */
  readonly origin?: RequestOrigin | undefined
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

/** The roles from least to most rights. */
const ROLE_RANK: Record<Role, number> = { viewer: 0, member: 1, admin: 2 }

/** The role with fewer rights of the two. */
export const lesserRole = (a: Role, b: Role): Role => (ROLE_RANK[a] <= ROLE_RANK[b] ? a : b)

/**
 * Why the viewer may not manage `team`'s members, service accounts and their tokens, or undefined
 * when it may: an instance administrator, or an admin of that team acting in it. Never an agent's
 * run token: no run changes who may do what.
 */
export const memberManagementProblem = (viewer: Viewer, team: TeamUid): string | undefined => {
  if (viewer.acting_run_id !== undefined) return "an agent's run token cannot manage members, service accounts or tokens"
  if (team === "") return "act in a team (X-Team-Uid) to manage its members, service accounts and tokens"
  if (viewer.instance_admin) return undefined
  return viewer.team_uid === team && viewer.role === "admin"
    ? undefined
    : "only the team's admins and instance administrators manage its members, service accounts and tokens"
}

/** What deciding who may act as whom needs to know of a principal. */
export interface Actor {
  readonly uid: PrincipalUid
  readonly type: "user" | "service_account"
  readonly memberships: ReadonlyArray<{ readonly team_uid: TeamUid; readonly role: Role }>
}

/**
 * Why the viewer may not name `identity` as the identity its runs act as (`agent_identity_uid`),
 * or undefined when it may: itself always; a service account of its team when it is an admin of
 * the team (admins manage the team's service accounts). Never another user, and never a
 * principal of another team.
 */
export const actAsProblem = (viewer: Viewer, identity: Actor): string | undefined => {
  if (identity.uid === viewer.principal_uid) return undefined
  if (!identity.memberships.some((m) => m.team_uid === viewer.team_uid)) return `principal ${identity.uid} is not a member of this team`
  if (identity.type !== "service_account") return `runs may act only as their creator or a service account of the team, not as user ${identity.uid}`
  if (viewer.role !== "admin") return `only a team admin may name a service account (${identity.uid}); a member may name only itself`
  return undefined
}

/**
 * A principal who shaped what a run executes (docs/security.md, "a run's token is never stronger
 * than the weakest principal who shaped what it executes"), with the role it acted with when it
 * did: the run's creator, whoever last changed its environment, schedule or automation, whoever
 * sent it a follow-up. A shaper counts with the lesser of that role and its role in the team now.
 */
export interface Shaper {
  readonly uid: PrincipalUid
  readonly role: Role
}

/** The viewer as a shaper: its principal, with the role it acts with now. */
export const shaperOf = (viewer: Viewer): Shaper => ({ uid: viewer.principal_uid, role: viewer.role })

/** The least of the roles; undefined (no rights) when any is undefined, or there is none. */
export const leastRole = (roles: ReadonlyArray<Role | undefined>): Role | undefined => {
  let least: Role | undefined = roles.length === 0 ? undefined : "admin"
  for (const role of roles) {
    if (role === undefined) return undefined
    least = lesserRole(least!, role)
  }
  return least
}

/**
 * The role a run's token acts with: the least of its executor's and creator's roles in the team
 * now and, for every shaper, the role it shaped with and its role now (`roleNow`); undefined, no
 * rights at all, when any of them is no longer in the team (an outsider shaped it, or someone left).
 */
export const runTokenRole = (
  executor: PrincipalUid,
  creator: PrincipalUid,
  shapers: ReadonlyArray<Shaper>,
  roleNow: (uid: PrincipalUid) => Role | undefined
): Role | undefined =>
  leastRole([roleNow(executor), roleNow(creator), ...shapers.flatMap((s) => [s.role, roleNow(s.uid)])])

/**
 * The shapers worth recording beside a run whose creator is `creator` acting with `creatorRole`
 * now: every shaper but the creator's own entries that do not lower it (the token already counts
 * the creator's role now), each principal once with the least role it shaped with.
 */
export const shapersToRecord = (
  creator: Shaper,
  creatorRole: Role,
  shapers: ReadonlyArray<Shaper>
): ReadonlyArray<Shaper> => {
  const least = new Map<PrincipalUid, Role>()
  for (const s of [creator, ...shapers]) {
    const known = least.get(s.uid)
    least.set(s.uid, known === undefined ? s.role : lesserRole(known, s.role))
  }
  return [...least].flatMap(([uid, role]) => uid === creator.uid && role === creatorRole ? [] : [{ uid, role }])
}
