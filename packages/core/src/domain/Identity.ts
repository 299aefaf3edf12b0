/**
 * Teams, principals, memberships and API tokens (docs/reference/access.md), and the admin API bodies under
 * `/api/v1/admin`. Tokens are `ar_`-prefixed random strings stored only as SHA-256 hashes
 * (`TokenRecord.token_hash`, 64 lowercase hex characters); the token itself is shown once, in
 * `CreateTokenResponse`. A token's `name` and `revoked_at` are `null` when unset.
 */
import { Schema } from "effect"
import { NonBlankString, optionalInput, PrincipalRef, PrincipalType, Timestamp } from "./Common.js"
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
  created_at: Timestamp
}) {}

/** A principal's membership of one team. */
export const Membership = Schema.Struct({
  team_uid: TeamUid,
  role: Role
}).annotations({ identifier: "Membership" })
export type Membership = typeof Membership.Type

/** A user or service account; `instance_admin` may use the admin API. Memberships in join order. */
export class Principal extends Schema.Class<Principal>("Principal")({
  uid: PrincipalUid,
  type: PrincipalType,
  display_name: Schema.String,
  instance_admin: Schema.Boolean,
  memberships: Schema.Array(Membership),
  created_at: Timestamp
}) {}

/** A SHA-256 digest in lowercase hex. */
export const Sha256Hex = Schema.String.pipe(
  Schema.pattern(/^[0-9a-f]{64}$/, { message: () => "must be 64 lowercase hex characters" })
).annotations({ identifier: "Sha256Hex" })

/** A stored API token: its hash, never the token. */
export class TokenRecord extends Schema.Class<TokenRecord>("TokenRecord")({
  token_id: TokenId,
  principal_uid: PrincipalUid,
  name: Schema.NullOr(Schema.String),
  token_hash: Sha256Hex,
  created_at: Timestamp,
  revoked_at: Schema.NullOr(Timestamp)
}) {}

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
  max_concurrent_runs: optionalInput(MaxConcurrentRuns)
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
  instance_admin: Schema.optionalWith(Schema.Boolean, { default: () => false, nullable: true })
}) {}

/** `POST /admin/principals/{uid}/tokens`. */
export class CreateTokenRequest extends Schema.Class<CreateTokenRequest>("CreateTokenRequest")({
  name: optionalInput(Schema.String)
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
  instance_admin: Schema.Boolean,
  teams: Schema.Array(CallerTeam),
  teams_truncated: Schema.Boolean,
  default_team_uid: Schema.NullOr(TeamUid)
}) {}
