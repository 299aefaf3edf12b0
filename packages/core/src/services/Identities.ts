/**
 * Identities (docs/reference/access.md): authentication of API tokens into the caller (`Viewer`), the bootstrap
 * administrator, and the admin API (teams, principals, tokens). Tokens are `ar_` plus 32 random
 * bytes in base64url; only their SHA-256 (lowercase hex) is stored.
 *
 * Decisions:
 * - Every request looks its token up in the store, which answers from its token cache (storage's
 *   ReadCache.ts, docs/reference/access.md "Token cache"): a revocation, a disabled principal or
 *   a changed membership empties it, so it takes effect on the next request; the expiry is
 *   checked here on every request. A token without the `ar_` prefix is a 401 without a lookup. What the token stands for is decided by `TokenAccess.tokenViewer` (the
 *   TEAM header, the token's limits, expiry and the principal's state).
 * - A token's `last_used_at` is written at most once a minute (when the stored one is older), in
 *   the background: a request never waits for it, and a failure to write it is only logged.
 * - A principal with no membership at all is refused with 403, except an instance administrator:
 *   it gets a Viewer with the role `viewer` in no team (an empty `team_uid`, which owns nothing),
 *   so it can use the admin API but sees and changes no team's resources.
 * - Bootstrap with `AGENT_RUNS_ADMIN_TOKEN`: the instance administrator is the oldest principal
 *   named `admin` that is an instance admin; when there is none it is created with a new team
 *   named `default` (its admin). A configured token it does not hold yet is added to it (earlier
 *   tokens stay valid until revoked through the admin API), so restarts are idempotent. The
 *   configured token must be `ar_` and at least 32 more visible ASCII characters (so that
 *   `authenticate` accepts it); a revoked configured token is never revived, and a token held by a
 *   principal that is not an instance admin is not taken over: both fail `bootstrap` with an
 *   `InvalidRequest` naming the variable (never echoing the token), so the server does not start
 *   with a token that cannot work. Without the variable and with no principal at all, a token is
 *   generated and returned once; with principals present nothing changes (`Existing`).
 *   Concurrent first starts of several replicas on one empty database can each create an
 *   administrator; start one replica first (documented in docs/http.md).
 * - Team names need not be unique (uids identify teams): a duplicate name is accepted, not a 409.
 *   Team names, principal display names and token names are trimmed; a blank token name is null.
 * - Only instance administrators use the admin API (403 otherwise, whatever their team role).
 * - A new principal's memberships are checked in order; the first unknown team is a 400 naming
 *   `memberships[i].team_uid`, and nothing is created.
 * - Revoking a token that is already revoked succeeds and keeps its first revocation time; an
 *   unknown token id is a 404.
 * - `me` (`GET /agent/me`) answers the caller's own principal and memberships, read again by the
 *   uid `authenticate` resolved (never by anything the request names), with each team's name, in
 *   join order, capped at `MAX_LISTED_TEAMS`. An agent calling with its run token acts in its
 *   run's team only: that team is the only one listed, with the role it acts with there.
 */
import { Clock, DateTime, Effect, Either, Option } from "effect"
import { activeMemberships } from "../domain/Identity.js"
import { lesserRole, type Viewer } from "../domain/Access.js"
import { AuthenticationRequired, InvalidRequest } from "../domain/Errors.js"
import { Ids, type PrincipalUid, type TeamUid } from "../domain/Ids.js"
import {
  DEFAULT_MAX_CONCURRENT_RUNS,
  ListTeamsResponse,
  MAX_LISTED_TEAMS,
  MeResponse,
  Principal,
  Team,
  TOKEN_PREFIX,
  type TokenRecord
} from "../domain/Identity.js"
import type { CreatePrincipalRequest, CreateTeamRequest, PatchTeamRequest } from "../domain/Identity.js"
import { tokenViewer } from "../domain/TokenAccess.js"
import { existingTeam, requireInstanceAdmin } from "../internal/Principals.js"
import { storageUnavailable } from "../internal/Services.js"
import { Audit } from "./Audit.js"
import { generateToken, hashToken, storeToken, UNLIMITED } from "./Tokens.js"
import { IdentityStore } from "../ports/IdentityStore.js"

/** How stale a token's stored `last_used_at` may get before a request writes it again. */
export const LAST_USED_RESOLUTION_MS = 60_000

/** The display name of the bootstrap administrator. */
export const BOOTSTRAP_ADMIN_NAME = "admin"
/** The name of the bootstrap administrator's team. */
export const BOOTSTRAP_TEAM_NAME = "default"

/** The environment variable naming the configured administrator token (docs/reference/configuration.md). */
export const ADMIN_TOKEN_VARIABLE = "AGENT_RUNS_ADMIN_TOKEN"

/** The accepted form of a configured administrator token: `ar_` and at least 32 visible ASCII characters. */
const CONFIGURED_TOKEN = /^ar_[\x21-\x7e]{32,}$/

const badConfiguredToken = (setting: string, problem: string) => InvalidRequest.forField(setting, problem)

/** What `bootstrap` did. */
export type BootstrapOutcome =
  | { readonly _tag: "Configured" }
  | { readonly _tag: "Generated"; readonly token: string }
  | { readonly _tag: "Existing" }

const unauthenticated = () => new AuthenticationRequired({ message: "missing or invalid bearer token" })


/**
 * The viewer a principal is in `team` (for work done on its behalf: cron ticks, webhook
 * automations), or undefined when it is no longer a member, or disabled.
 */
export const memberViewer = (principal: Principal, team: TeamUid): Viewer | undefined => {
  const membership = activeMemberships(principal).find((m) => m.team_uid === team)
  return membership === undefined
    ? undefined
    : {
      principal_uid: principal.uid,
      team_uid: team,
      role: membership.role,
      instance_admin: principal.instance_admin,
      display_name: principal.display_name
    }
}

/** The identity service: authentication, bootstrap, and the admin API's teams and principals. */
export class Identities extends Effect.Service<Identities>()("@agent-runs/core/Identities", {
  dependencies: [Audit.Default],
  effect: Effect.gen(function*() {
    const audit = yield* Audit
    const store = yield* IdentityStore
    const ids = yield* Ids

    const now = Effect.map(Clock.currentTimeMillis, (ms) => DateTime.unsafeMake(ms))

    /** Records that the token was used, when the stored time is older than the resolution; in the background. */
    const touch = (token: TokenRecord, now: number) =>
      token.last_used_at !== null && now - token.last_used_at.epochMillis < LAST_USED_RESOLUTION_MS
        ? Effect.void
        : Effect.forkDaemon(
          store.touchToken(token.token_id, now).pipe(
            Effect.catchAll((e) => Effect.logWarning("could not record a token's last use", e))
          )
        )

    /** The caller behind a bearer token, acting in the team the TEAM header names (or its first). */
    const authenticate = Effect.fn("Identities.authenticate")(
      function*(token: string, teamHeader: string | undefined) {
        if (!token.startsWith(TOKEN_PREFIX)) return yield* unauthenticated()
        const found = yield* store.findToken(yield* hashToken(token))
        if (Option.isNone(found)) return yield* unauthenticated()
        const now = yield* Clock.currentTimeMillis
        const viewer = tokenViewer(found.value.principal, found.value.token, teamHeader, now)
        if (Either.isRight(viewer)) yield* touch(found.value.token, now)
        return yield* viewer
      },
      storageUnavailable
    )

    const newTeam = (name: string) =>
      Effect.gen(function*() {
        const team = new Team({
          uid: (yield* ids.uid22) as TeamUid,
          name: name.trim(),
          features: { metadata_filtering: true, scheduled_agents: true },
          max_concurrent_runs: DEFAULT_MAX_CONCURRENT_RUNS,
          created_at: yield* now
        })
        yield* store.createTeam(team)
        return team
      })

    const addToken = (principal: PrincipalUid, token: string, name: string) =>
      storeToken(store, ids, principal, token, { ...UNLIMITED, name })

    const createAdmin = (token: string) =>
      Effect.gen(function*() {
        const team = yield* newTeam(BOOTSTRAP_TEAM_NAME)
        const admin = new Principal({
          uid: (yield* ids.uid22) as PrincipalUid,
          type: "user",
          display_name: BOOTSTRAP_ADMIN_NAME,
          instance_admin: true,
          memberships: [{ team_uid: team.uid, role: "admin" }],
          created_at: yield* now
        })
        yield* store.createPrincipal(admin)
        yield* addToken(admin.uid, token, "bootstrap")
      })

    /**
     * Ensures the instance administrator at start-up (see the module's decisions); a bad configured
     * token is refused naming `setting` (where the host took it from).
     */
    const bootstrap = Effect.fn("Identities.bootstrap")(
      function*(configured: Option.Option<string>, setting: string = ADMIN_TOKEN_VARIABLE) {
        if (Option.isSome(configured)) {
          const token = configured.value
          if (!CONFIGURED_TOKEN.test(token)) {
            return yield* badConfiguredToken(setting, "must be ar_ followed by at least 32 visible ASCII characters")
          }
          const held = yield* store.findTokenRecord(yield* hashToken(token))
          if (Option.isSome(held)) {
            if (held.value.revoked_at !== null) return yield* badConfiguredToken(setting, "was revoked; configure a new token")
            const holder = yield* store.getPrincipal(held.value.principal_uid)
            if (Option.isNone(holder) || !holder.value.instance_admin) {
              return yield* badConfiguredToken(setting, "is the token of a principal that is not an instance administrator")
            }
            return { _tag: "Configured" } as BootstrapOutcome
          }
          const admin = (yield* store.instanceAdmins).find((p) => p.display_name === BOOTSTRAP_ADMIN_NAME)
          if (admin === undefined) yield* createAdmin(token)
          else yield* addToken(admin.uid, token, "bootstrap")
          return { _tag: "Configured" } as BootstrapOutcome
        }
        if ((yield* store.countPrincipals) > 0) return { _tag: "Existing" } as BootstrapOutcome
        const token = yield* generateToken
        yield* createAdmin(token)
        return { _tag: "Generated", token } as BootstrapOutcome
      },
      storageUnavailable
    )

    const createTeam = Effect.fn("Identities.createTeam")(
      function*(viewer: Viewer, request: CreateTeamRequest) {
        yield* requireInstanceAdmin(viewer)
        return yield* audit.recording(viewer, newTeam(request.name), (team) => ({
          action: "team.create",
          resource: { type: "team", id: team.uid },
          team_uid: team.uid
        }))
      },
      storageUnavailable,
      audit.refusals("team.create", () => ({ type: "team", id: null }))
    )

    const listTeams = Effect.fn("Identities.listTeams")(
      function*(viewer: Viewer) {
        yield* requireInstanceAdmin(viewer)
        return new ListTeamsResponse({ teams: yield* store.listTeams })
      },
      storageUnavailable
    )

    const updateTeam = Effect.fn("Identities.updateTeam")(
      function*(viewer: Viewer, uid: TeamUid, request: PatchTeamRequest) {
        yield* requireInstanceAdmin(viewer)
        const team = yield* existingTeam(store, uid)
        const features = request.features
        const next = new Team({
          ...team,
          features: {
            metadata_filtering: features?.metadata_filtering ?? team.features.metadata_filtering,
            scheduled_agents: features?.scheduled_agents ?? team.features.scheduled_agents
          },
          max_concurrent_runs: request.max_concurrent_runs ?? team.max_concurrent_runs,
          share_weight: request.share_weight ?? team.share_weight
        })
        yield* audit.recording(viewer, store.updateTeam(next), () => ({ action: "team.update", resource: { type: "team", id: uid }, team_uid: uid }))
        return next
      },
      storageUnavailable,
      audit.refusals("team.update", (uid: TeamUid) => ({ type: "team", id: uid }))
    )

    const createPrincipal = Effect.fn("Identities.createPrincipal")(
      function*(viewer: Viewer, request: CreatePrincipalRequest) {
        yield* requireInstanceAdmin(viewer)
        for (const [i, membership] of request.memberships.entries()) {
          if (Option.isNone(yield* store.getTeam(membership.team_uid))) {
            return yield* InvalidRequest.forField(`memberships[${i}].team_uid`, `no team ${membership.team_uid}`)
          }
        }
        const principal = new Principal({
          uid: (yield* ids.uid22) as PrincipalUid,
          type: request.type,
          display_name: request.display_name.trim(),
          instance_admin: request.instance_admin,
          memberships: request.memberships,
          created_at: yield* now,
          email: request.email?.trim().toLowerCase() ?? null
        })
        yield* audit.recording(viewer, store.createPrincipal(principal), () => ({
          action: "principal.create",
          resource: { type: "principal", id: principal.uid },
          team_uid: null
        }))
        return principal
      },
      storageUnavailable,
      audit.refusals("principal.create", () => ({ type: "principal", id: null }))
    )

    /** The caller's token, when it authenticated with an API token. */
    const tokenOf = (viewer: Viewer) =>
      viewer.token_id === undefined
        ? Effect.succeed(undefined)
        : Effect.map(store.getToken(viewer.token_id), Option.getOrUndefined)

    /** Who the caller is and the teams it may act in (see the module's decisions). */
    const me = Effect.fn("Identities.me")(
      function*(viewer: Viewer) {
        const principal = Option.getOrUndefined(yield* store.getPrincipal(viewer.principal_uid))
        if (principal === undefined) return yield* unauthenticated()
        const token = yield* tokenOf(viewer)
        const onlyItsTeam = viewer.acting_run_id !== undefined || (token?.team_uid ?? null) !== null
        const cap = viewer.acting_run_id !== undefined ? viewer.role : token?.max_role ?? null
        const memberships = activeMemberships(principal)
          .filter((m) => !onlyItsTeam || m.team_uid === viewer.team_uid)
          .map((m) => (cap === null ? m : { ...m, role: lesserRole(m.role, cap) }))
        const listed = memberships.slice(0, MAX_LISTED_TEAMS)
        const teams = yield* Effect.forEach(listed, (m) =>
          Effect.map(store.getTeam(m.team_uid), Option.map((team) => ({ uid: team.uid, name: team.name, role: m.role }))))
        return new MeResponse({
          principal: { type: principal.type, uid: principal.uid, display_name: principal.display_name },
          token: token === undefined
            ? null
            : { token_id: token.token_id, name: token.name, expires_at: token.expires_at, team_uid: token.team_uid, max_role: token.max_role },
          instance_admin: viewer.instance_admin,
          teams: teams.flatMap(Option.toArray),
          teams_truncated: memberships.length > listed.length,
          default_team_uid: memberships[0]?.team_uid ?? null
        })
      },
      storageUnavailable
    )

    return {
      authenticate,
      me,
      bootstrap,
      createTeam,
      listTeams,
      updateTeam,
      createPrincipal
    } as const
  })
}) {}
