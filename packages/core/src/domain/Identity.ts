/**
 * Teams, principals, memberships and API tokens (docs/reference/access.md), and the admin API bodies under
 * `/api/v1/admin`. Tokens are `ar_`-prefixed random strings stored only as SHA-256 hashes
 * (`TokenRecord.token_hash`, 64 lowercase hex characters); the token itself is shown once, in
 * `CreateTokenResponse`. A token's `name` and `revoked_at` are `null` when unset.
 */
import { Schema } from "effect"
import { NonBlankString, optionalInput, PrincipalRef, PrincipalType, Timestamp } from "./Common.js"
import { TeamRetention } from "./Retention.js"
import { TeamBudgets } from "./Budget.js"
import { ShareWeight } from "./FairShare.js"
import { PrincipalUid, TeamUid, TokenId } from "./Ids.js"

/** A principal's role in a team: admins also manage the factory (webhooks, secrets, automations, settings). */
export const Role = Schema.Literal("admin", "member", "viewer")
export type Role = typeof Role.Type

/** The default cap on a team's concurrently admitted runs. */
export const DEFAULT_MAX_CONCURRENT_RUNS = 8

/** The prefix of every API token. */
export const TOKEN_PREFIX = "ar_"

/** Per-team features; both on by default. */
export const TeamFeatures = Schema.Struct({
  metadata_filtering: Schema.Boolean,
  scheduled_agents: Schema.Boolean
}).annotations({ identifier: "TeamFeatures" })
export type TeamFeatures = typeof TeamFeatures.Type

const MaxConcurrentRuns = Schema.Int.pipe(Schema.greaterThanOrEqualTo(1), Schema.lessThanOrEqualTo(10_000))

/** A team. */
export class Team extends Schema.Class<Team>("Team")({
  uid: TeamUid,
  name: Schema.String,
  features: TeamFeatures,
  max_concurrent_runs: MaxConcurrentRuns,
  created_at: Timestamp,
  /** Its runs' default budgets and the ceilings over them (Budget.ts), set by a team admin; none by default. */
  budgets: TeamBudgets.pipe(Schema.propertySignature, Schema.withConstructorDefault(() => ({}))),
  /** How long it keeps its ended runs and its webhook deliveries (Retention.ts), set by a team admin; no limit by default. */
  retention: TeamRetention.pipe(Schema.propertySignature, Schema.withConstructorDefault(() => ({}))),
  /** Its weight in fair share across teams (FairShare.ts), set by an instance administrator. */
  share_weight: ShareWeight.pipe(Schema.propertySignature, Schema.withConstructorDefault(() => 1))
}) {}

/** A principal's membership of one team. */
export const Membership = Schema.Struct({
  team_uid: TeamUid,
  role: Role
}).annotations({ identifier: "Membership" })
export type Membership = typeof Membership.Type

/** A timestamp that is null until something happens, and null when a constructor omits it. */
const NullUntil = Schema.NullOr(Timestamp).pipe(Schema.propertySignature, Schema.withConstructorDefault(() => null))

/**
 * A user or service account; `instance_admin` may use the admin API. Memberships in join order.
 * A disabled principal (`disabled_at`) keeps its memberships but neither its tokens nor its runs'
 * tokens work, and no schedule or automation acts as it; a deleted one (`deleted_at`, a tombstone
 * that keeps its name for the runs and audit entries that show it) has no memberships left.
 */
export class Principal extends Schema.Class<Principal>("Principal")({
  uid: PrincipalUid,
  type: PrincipalType,
  display_name: Schema.String,
  instance_admin: Schema.Boolean,
  memberships: Schema.Array(Membership),
  created_at: Timestamp,
  disabled_at: NullUntil,
  deleted_at: NullUntil,
  /** Its email, in lower case: what sign-in matches a principal not linked to its provider yet by. */
  email: Schema.NullOr(Schema.String).pipe(Schema.propertySignature, Schema.withConstructorDefault(() => null))
}) {}

/** The memberships a principal acts with: none once it is disabled or deleted. */
export const activeMemberships = (principal: Principal): ReadonlyArray<Membership> =>
  principal.disabled_at === null && principal.deleted_at === null ? principal.memberships : []

/** A SHA-256 digest in lowercase hex. */
export const Sha256Hex = Schema.String.pipe(
  Schema.pattern(/^[0-9a-f]{64}$/, { message: () => "must be 64 lowercase hex characters" })
).annotations({ identifier: "Sha256Hex" })

/**
 * An API token as listed (never the token nor its hash). `expires_at`: it stops working then.
 * `team_uid`: it acts only in that team. `max_role`: it acts with at most that role. A token with
 * either limit never opens the admin API. `last_used_at` is kept to the minute.
 */
export class TokenInfo extends Schema.Class<TokenInfo>("TokenInfo")({
  token_id: TokenId,
  principal_uid: PrincipalUid,
  name: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  revoked_at: Schema.NullOr(Timestamp),
  expires_at: NullUntil,
  last_used_at: NullUntil,
  team_uid: Schema.NullOr(TeamUid).pipe(Schema.propertySignature, Schema.withConstructorDefault(() => null)),
  max_role: Schema.NullOr(Role).pipe(Schema.propertySignature, Schema.withConstructorDefault(() => null))
}) {}

/** A stored API token: its hash, never the token. */
export class TokenRecord extends TokenInfo.extend<TokenRecord>("TokenRecord")({
  token_hash: Sha256Hex
}) {}

/** Whether a token is limited (to a team or a role): it never opens the admin API. */
export const isLimited = (token: TokenInfo): boolean => token.team_uid !== null || token.max_role !== null

/** `POST /admin/teams`. */
export class CreateTeamRequest extends Schema.Class<CreateTeamRequest>("CreateTeamRequest")({
  name: NonBlankString
}) {}

/** `PATCH /admin/teams/{uid}`: only the given keys change. */
export class PatchTeamRequest extends Schema.Class<PatchTeamRequest>("PatchTeamRequest")({
  features: optionalInput(
    Schema.Struct({
      metadata_filtering: optionalInput(Schema.Boolean),
      scheduled_agents: optionalInput(Schema.Boolean)
    })
  ),
  max_concurrent_runs: optionalInput(MaxConcurrentRuns),
  share_weight: optionalInput(ShareWeight)
}) {}

/** `GET /admin/teams`. */
export class ListTeamsResponse extends Schema.Class<ListTeamsResponse>("ListTeamsResponse")({
  teams: Schema.Array(Team)
}) {}

/** `POST /admin/principals`: at least one membership, at most one per team. */
export class CreatePrincipalRequest extends Schema.Class<CreatePrincipalRequest>("CreatePrincipalRequest")({
  type: PrincipalType,
  display_name: NonBlankString,
  memberships: Schema.Array(Membership).pipe(
    Schema.minItems(1, { message: () => "must list at least one team" }),
    Schema.filter((ms) => new Set(ms.map((m) => m.team_uid)).size === ms.length || "lists a team twice")
  ),
  instance_admin: Schema.optionalWith(Schema.Boolean, { default: () => false, nullable: true }),
  /** Signing in with a verified email links the principal to the provider's account (docs/sign-in.md). */
  email: optionalInput(Schema.String.pipe(Schema.maxLength(200), Schema.pattern(/^[^\s@]+@[^\s@]+$/, { message: () => "must be an email address" })))
}) {}

/** The longest a token name may be. */
export const MAX_TOKEN_NAME_CHARS = 200

/**
 * `POST /admin/principals/{uid}/tokens` (and a team's service accounts' tokens): a name, when it
 * expires (in the future), and the team and the most rights it is limited to.
 */
export class CreateTokenRequest extends Schema.Class<CreateTokenRequest>("CreateTokenRequest")({
  name: optionalInput(Schema.String.pipe(Schema.maxLength(MAX_TOKEN_NAME_CHARS))),
  expires_at: optionalInput(Timestamp),
  team_uid: optionalInput(TeamUid),
  max_role: optionalInput(Role)
}) {}

/** A principal's tokens, newest first (at most `MAX_LISTED_TOKENS`). */
export class ListTokensResponse extends Schema.Class<ListTokensResponse>("ListTokensResponse")({
  tokens: Schema.Array(TokenInfo)
}) {}

/** The most tokens a list shows: the newest. */
export const MAX_LISTED_TOKENS = 500

/** `PATCH /admin/principals/{uid}`: only the given keys change. */
export class PatchPrincipalRequest extends Schema.Class<PatchPrincipalRequest>("PatchPrincipalRequest")({
  display_name: optionalInput(NonBlankString.pipe(Schema.maxLength(200))),
  instance_admin: optionalInput(Schema.Boolean),
  disabled: optionalInput(Schema.Boolean)
}) {}

/** `PUT …/memberships/{team_uid}` and `PUT /agent/team/members/{uid}`: the role in the team. */
export class SetMembershipRequest extends Schema.Class<SetMembershipRequest>("SetMembershipRequest")({
  role: Role
}) {}

/** `POST /agent/team/service-accounts`: a service account of the caller's team. */
export class CreateServiceAccountRequest extends Schema.Class<CreateServiceAccountRequest>("CreateServiceAccountRequest")({
  display_name: NonBlankString.pipe(Schema.maxLength(200)),
  role: Role
}) {}

/** The sizes a page of principals may have. */
export const PRINCIPAL_PAGE_LIMIT = { min: 1, max: 500, default: 100 } as const

/** A page of principals, in uid order; `next_cursor` is null on the last page. */
export class ListPrincipalsResponse extends Schema.Class<ListPrincipalsResponse>("ListPrincipalsResponse")({
  principals: Schema.Array(Principal),
  next_cursor: Schema.NullOr(Schema.String)
}) {}

/** A member of a team as its admins see it. */
export const TeamMember = Schema.Struct({
  uid: PrincipalUid,
  type: PrincipalType,
  display_name: Schema.String,
  role: Role,
  disabled: Schema.Boolean
}).annotations({ identifier: "TeamMember" })
export type TeamMember = typeof TeamMember.Type

/** How a team's admins see one of its members: nothing of its other teams, its email or its rights elsewhere. */
export const teamMemberOf = (principal: Principal, team: TeamUid): TeamMember => ({
  uid: principal.uid,
  type: principal.type,
  display_name: principal.display_name,
  role: principal.memberships.find((m) => m.team_uid === team)?.role ?? "viewer",
  disabled: principal.disabled_at !== null
})

/**
 * Whether the team's admins manage `principal` as one of the team's service accounts (its tokens,
 * its deletion): a service account of that team only, not an instance administrator.
 */
export const isTeamServiceAccount = (principal: Principal, team: TeamUid): boolean =>
  principal.type === "service_account" && !principal.instance_admin && principal.memberships.length > 0 &&
  principal.memberships.every((m) => m.team_uid === team)

/** `GET /agent/team/members`: a page of the team's members, in uid order. */
export class ListTeamMembersResponse extends Schema.Class<ListTeamMembersResponse>("ListTeamMembersResponse")({
  members: Schema.Array(TeamMember),
  next_cursor: Schema.NullOr(Schema.String)
}) {}

/** The new token, shown once. */
export class CreateTokenResponse extends Schema.Class<CreateTokenResponse>("CreateTokenResponse")({
  token_id: TokenId,
  token: Schema.String.pipe(Schema.startsWith(TOKEN_PREFIX))
}) {}

/** The most teams `GET /agent/me` lists: the caller's first memberships, in join order. */
export const MAX_LISTED_TEAMS = 100

/** A team the caller may act in, with its role there. */
export const CallerTeam = Schema.Struct({
  uid: TeamUid,
  name: Schema.String,
  role: Role
}).annotations({ identifier: "CallerTeam" })
export type CallerTeam = typeof CallerTeam.Type

/**
 * `GET /agent/me`: who the caller is and the teams it may act in (its memberships in join order,
 * at most `MAX_LISTED_TEAMS`; `teams_truncated` when it has more). `default_team_uid` is the team
 * a request without the TEAM header acts in (the first membership), null for an instance
 * administrator in no team. Nothing about any other principal or team.
 */
export class MeResponse extends Schema.Class<MeResponse>("MeResponse")({
  principal: PrincipalRef,
  /** The token the caller authenticated with (null for a run token): when it expires, what it is limited to. */
  token: Schema.NullOr(Schema.Struct({
    token_id: TokenId,
    name: Schema.NullOr(Schema.String),
    expires_at: Schema.NullOr(Timestamp),
    team_uid: Schema.NullOr(TeamUid),
    max_role: Schema.NullOr(Role)
  })).pipe(Schema.propertySignature, Schema.withConstructorDefault(() => null)),
  instance_admin: Schema.Boolean,
  teams: Schema.Array(CallerTeam),
  teams_truncated: Schema.Boolean,
  default_team_uid: Schema.NullOr(TeamUid)
}) {}
