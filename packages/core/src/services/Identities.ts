/**
 * Identities (docs/reference/access.md): authentication of API tokens into the caller (`Viewer`), the bootstrap
 * administrator, and the admin API (teams, principals, tokens). Tokens are `ar_` plus 32 random
 * bytes in base64url; only their SHA-256 (lowercase hex) is stored.
 *
 * Decisions:
 * - No cache: every request looks its token up, so a revocation takes effect on the next request.
 *   A token without the `ar_` prefix is a 401 without a lookup.
 * - The TEAM header (trimmed) is matched exactly against the principal's memberships; anything
 *   else, a malformed uid or a team that does not exist included, is a 403. A blank header counts
 *   as absent. Without it the caller acts in its first team (in the order memberships were given).
 * - A principal with no membership at all (the admin API never creates one) is refused with 403,
 *   except an instance administrator: it gets a Viewer with the role `viewer` in no team (an empty
 *   `team_uid`, which owns nothing), so it can use the admin API but sees and changes no team's
 *   resources. It is not given the instance's first team: that would show it a team it is not in.
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
import { Clock, DateTime, Effect, Option } from "effect"
import type { Viewer } from "../domain/Access.js"
import { AuthenticationRequired, InvalidRequest, NotAuthorized, ResourceNotFound } from "../domain/Errors.js"
import { Ids, type PrincipalUid, type TeamUid, type TokenId } from "../domain/Ids.js"
import {
  CreateTokenResponse,
  DEFAULT_MAX_CONCURRENT_RUNS,
  ListTeamsResponse,
  MAX_LISTED_TEAMS,
  MeResponse,
  Principal,
  Team,
  TOKEN_PREFIX,
  TokenRecord
} from "../domain/Identity.js"
import type { CreatePrincipalRequest, CreateTeamRequest, CreateTokenRequest, PatchTeamRequest } from "../domain/Identity.js"
import { storageUnavailable } from "../internal/Services.js"
import { Audit } from "./Audit.js"
import { sha256, toHex } from "../internal/Sha256.js"
import { IdentityStore } from "../ports/IdentityStore.js"

/** The display name of the bootstrap administrator. */
export const BOOTSTRAP_ADMIN_NAME = "admin"
/** The name of the bootstrap administrator's team. */
export const BOOTSTRAP_TEAM_NAME = "default"

const base64url = (bytes: Uint8Array): string => {
  let binary = ""
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")
}

/** A fresh API token: `ar_` and 32 random bytes in base64url (43 characters). */
export const generateToken: Effect.Effect<string> = Effect.sync(
  () => `${TOKEN_PREFIX}${base64url(globalThis.crypto.getRandomValues(new Uint8Array(32)))}`
)

/** The SHA-256 of a token as 64 lowercase hex characters: what is stored. */
export const hashToken = (token: string): Effect.Effect<string> =>
  Effect.map(sha256(new TextEncoder().encode(token)), toHex)

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

const requireInstanceAdmin = (viewer: Viewer) =>
  viewer.instance_admin
    ? Effect.void
    : Effect.fail(new NotAuthorized({ message: "the admin API is for instance administrators only" }))

/** The identity service: authentication, bootstrap, and the admin API. */
/**
 * The viewer a principal is in `team` (for work done on its behalf: cron ticks, webhook
 * automations), or undefined when it is no longer a member.
 */
export const memberViewer = (principal: Principal, team: TeamUid): Viewer | undefined => {
  const membership = principal.memberships.find((m) => m.team_uid === team)
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

export class Identities extends Effect.Service<Identities>()("@agent-runs/core/Identities", {
  dependencies: [Audit.Default],
  effect: Effect.gen(function*() {
    const audit = yield* Audit
    const store = yield* IdentityStore
    const ids = yield* Ids

    const now = Effect.map(Clock.currentTimeMillis, (ms) => DateTime.unsafeMake(ms))

    /** The caller behind a bearer token, acting in the team the TEAM header names (or its first). */
    const authenticate = Effect.fn("Identities.authenticate")(
      function*(token: string, teamHeader: string | undefined) {
        if (!token.startsWith(TOKEN_PREFIX)) return yield* unauthenticated()
        const found = yield* store.findToken(yield* hashToken(token))
        if (Option.isNone(found)) return yield* unauthenticated()
        const { principal, token: record } = found.value
        const wanted = teamHeader?.trim()
        const membership = wanted === undefined || wanted === ""
          ? principal.memberships[0]
          : principal.memberships.find((m) => m.team_uid === wanted)
        if (membership === undefined) {
          if (wanted !== undefined && wanted !== "") {
            return yield* new NotAuthorized({ message: `not a member of team ${JSON.stringify(wanted.slice(0, 64))}` })
          }
          if (!principal.instance_admin) return yield* new NotAuthorized({ message: "not a member of any team" })
        }
        return {
          principal_uid: principal.uid,
          team_uid: membership?.team_uid ?? ("" as TeamUid),
          role: membership?.role ?? "viewer",
          instance_admin: principal.instance_admin,
          display_name: principal.display_name,
          token_id: record.token_id
        } satisfies Viewer
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

    const addToken = (principal: PrincipalUid, token: string, name: string | null) =>
      Effect.gen(function*() {
        const record = new TokenRecord({
          token_id: (yield* ids.uid22) as TokenId,
          principal_uid: principal,
          name,
          token_hash: yield* hashToken(token),
          created_at: yield* now,
          revoked_at: null
        })
        yield* store.createToken(record)
        return record
      })

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

    const requireTeam = (uid: TeamUid) =>
      Effect.flatMap(
        store.getTeam(uid),
        Option.match({ onNone: () => Effect.fail(ResourceNotFound.of("team", uid)), onSome: Effect.succeed })
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
        const team = yield* requireTeam(uid)
        const features = request.features
        const next = new Team({
          ...team,
          features: {
            metadata_filtering: features?.metadata_filtering ?? team.features.metadata_filtering,
            scheduled_agents: features?.scheduled_agents ?? team.features.scheduled_agents
          },
          max_concurrent_runs: request.max_concurrent_runs ?? team.max_concurrent_runs
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
          created_at: yield* now
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

    const createToken = Effect.fn("Identities.createToken")(
      function*(viewer: Viewer, principalUid: PrincipalUid, request: CreateTokenRequest) {
        yield* requireInstanceAdmin(viewer)
        if (Option.isNone(yield* store.getPrincipal(principalUid))) {
          return yield* ResourceNotFound.of("principal", principalUid)
        }
        const token = yield* generateToken
        const record = yield* audit.recording(viewer, addToken(principalUid, token, request.name?.trim() || null), (added) => ({
          action: "token.create",
          resource: { type: "token", id: added.token_id },
          team_uid: null
        }))
        return new CreateTokenResponse({ token_id: record.token_id, token })
      },
      storageUnavailable,
      audit.refusals("token.create", () => ({ type: "token", id: null }))
    )

    const revokeToken = Effect.fn("Identities.revokeToken")(
      function*(viewer: Viewer, tokenId: TokenId) {
        yield* requireInstanceAdmin(viewer)
        const revocation = Effect.filterOrFail(
          store.revokeToken(tokenId, yield* Clock.currentTimeMillis),
          (revoked) => revoked,
          () => ResourceNotFound.of("token", tokenId)
        )
        yield* audit.recording(viewer, revocation, () => ({ action: "token.revoke", resource: { type: "token", id: tokenId }, team_uid: null }))
      },
      storageUnavailable,
      audit.refusals("token.revoke", (tokenId: TokenId) => ({ type: "token", id: tokenId }))
    )

    /** Who the caller is and the teams it may act in (see the module's decisions). */
    const me = Effect.fn("Identities.me")(
      function*(viewer: Viewer) {
        const principal = Option.getOrUndefined(yield* store.getPrincipal(viewer.principal_uid))
        if (principal === undefined) return yield* unauthenticated()
        const memberships = viewer.acting_run_id === undefined
          ? principal.memberships
          : principal.memberships.filter((m) => m.team_uid === viewer.team_uid).map((m) => ({ ...m, role: viewer.role }))
        const listed = memberships.slice(0, MAX_LISTED_TEAMS)
        const teams = yield* Effect.forEach(listed, (m) =>
          Effect.map(store.getTeam(m.team_uid), Option.map((team) => ({ uid: team.uid, name: team.name, role: m.role }))))
        return new MeResponse({
          principal: { type: principal.type, uid: principal.uid, display_name: principal.display_name },
          instance_admin: viewer.instance_admin,
          teams: teams.flatMap(Option.toArray),
          teams_truncated: memberships.length > listed.length,
          default_team_uid: memberships[0]?.team_uid ?? null
        })
      },
      storageUnavailable
    )

    return {
      generateToken,
      hashToken,
      authenticate,
      me,
      bootstrap,
      createTeam,
      listTeams,
      updateTeam,
      createPrincipal,
      createToken,
      revokeToken
    } as const
  })
}) {}
