/** Port: teams, principals and their memberships, and API tokens (stored only as SHA-256 hashes). */

/** A page of principals in uid order: of one team, or all; deleted ones never. */
export interface PrincipalPage {
  readonly team_uid: TeamUid | undefined
  /** The last uid of the previous page. */
  readonly after: PrincipalUid | undefined
  readonly limit: number
}

/** What a principal's update may change (its memberships change one at a time). */
export interface PrincipalChanges {
  readonly display_name: string
  readonly instance_admin: boolean
  /** Epoch millis, or null to enable it. */
  readonly disabled_at: number | null
}
import type { TeamBudgets } from "../domain/Budget.js"
import type { TeamRetention } from "../domain/Retention.js"
import type { Effect, Option } from "effect"
import { Context } from "effect"
import type { GitHubConnection } from "../domain/GitHub.js"
import type { PrincipalUid, TeamUid, TokenId } from "../domain/Ids.js"
import type { Principal, Role, Team, TokenRecord } from "../domain/Identity.js"
import type { StorageError } from "./Storage.js"

export class IdentityStore extends Context.Tag("@agent-runs/core/IdentityStore")<IdentityStore, {
  /** Creates a team. */
  readonly createTeam: (team: Team) => Effect.Effect<void, StorageError>
  /** Reads a team. */
  readonly getTeam: (uid: TeamUid) => Effect.Effect<Option.Option<Team>, StorageError>
  /** Every team, by name. */
  readonly listTeams: Effect.Effect<ReadonlyArray<Team>, StorageError>
  /** Replaces a team's settings, its budgets and retention apart. */
  readonly updateTeam: (team: Team) => Effect.Effect<void, StorageError>
  /** Replaces a team's budgets alone (Budget.ts), so that a change of its other settings at the same time is kept. */
  readonly setTeamBudgets: (uid: TeamUid, budgets: TeamBudgets) => Effect.Effect<void, StorageError>
  /** Replaces a team's retention alone (Retention.ts). */
  readonly setTeamRetention: (uid: TeamUid, retention: TeamRetention) => Effect.Effect<void, StorageError>
  /** A team's GitHub connection; none when it has none (or there is no such team). */
  readonly getGitHubConnection: (uid: TeamUid) => Effect.Effect<Option.Option<GitHubConnection>, StorageError>
  /** Sets (some) or removes (none) a team's GitHub connection; false when there is no such team. */
  readonly setGitHubConnection: (uid: TeamUid, connection: Option.Option<GitHubConnection>) => Effect.Effect<boolean, StorageError>
  /** Creates a principal with its memberships. */
  readonly createPrincipal: (principal: Principal) => Effect.Effect<void, StorageError>
  /** Reads a principal with its memberships. */
  readonly getPrincipal: (uid: PrincipalUid) => Effect.Effect<Option.Option<Principal>, StorageError>
  /** Principals in uid order, after a uid, not deleted (of one team's members when it is named). */
  readonly listPrincipals: (page: PrincipalPage) => Effect.Effect<ReadonlyArray<Principal>, StorageError>
  /** Changes a principal's name, instance administration and disabling. */
  readonly updatePrincipal: (uid: PrincipalUid, changes: PrincipalChanges) => Effect.Effect<void, StorageError>
  /** Sets a principal's role in a team, adding the membership (last in join order) when new. */
  readonly setMembership: (uid: PrincipalUid, team: TeamUid, role: Role) => Effect.Effect<void, StorageError>
  /** Removes a principal's membership of a team; false when there was none. */
  readonly removeMembership: (uid: PrincipalUid, team: TeamUid) => Effect.Effect<boolean, StorageError>
  /** How many principals neither disabled nor deleted are admins of the team. */
  readonly countTeamAdmins: (team: TeamUid) => Effect.Effect<number, StorageError>
  /** The principal linked to this provider subject (`SignIn.subjectKey`). */
  readonly findBySubject: (key: string) => Effect.Effect<Option.Option<Principal>, StorageError>
  /** The principals (not deleted) with this email (lower case) and no provider subject yet. */
  readonly findUnlinkedByEmail: (email: string) => Effect.Effect<ReadonlyArray<Principal>, StorageError>
  /** Links a principal to a provider subject; false when it is linked to another already. */
  readonly linkSubject: (uid: PrincipalUid, key: string) => Effect.Effect<boolean, StorageError>
  /** Deletes a principal: a tombstone keeping its name, its memberships removed, its tokens revoked. */
  readonly deletePrincipal: (uid: PrincipalUid, at: number) => Effect.Effect<void, StorageError>
  /** Replaces a principal's name, forgets its email and its provider subject (erasure, docs/retention.md). */
  readonly erasePrincipal: (uid: PrincipalUid, name: string) => Effect.Effect<void, StorageError>
  /** The instance administrators (not deleted), oldest first. */
  readonly instanceAdmins: Effect.Effect<ReadonlyArray<Principal>, StorageError>
  /** How many principals exist (zero: the server bootstraps an admin). */
  readonly countPrincipals: Effect.Effect<number, StorageError>
  /** Stores a token's record (its hash, never the token). */
  readonly createToken: (token: TokenRecord) => Effect.Effect<void, StorageError>
  /**
   * The unrevoked token with this SHA-256 hash and its principal. An adapter may answer from a
   * cache, provided that its own writes that change what a token grants (revoking, principal and
   * membership changes) are seen by the next call, and other processes' within seconds.
   */
  readonly findToken: (
    hash: string
  ) => Effect.Effect<Option.Option<{ readonly token: TokenRecord; readonly principal: Principal }>, StorageError>
  /** The token with this SHA-256 hash, revoked or not (bootstrap checks the configured token). */
  readonly findTokenRecord: (hash: string) => Effect.Effect<Option.Option<TokenRecord>, StorageError>
  /** A token by id, revoked or not. */
  readonly getToken: (id: TokenId) => Effect.Effect<Option.Option<TokenRecord>, StorageError>
  /** A principal's tokens, newest first, at most `limit`. */
  readonly listTokens: (principal: PrincipalUid, limit: number) => Effect.Effect<ReadonlyArray<TokenRecord>, StorageError>
  /** Records when a token was last used. */
  readonly touchToken: (id: TokenId, at: number) => Effect.Effect<void, StorageError>
  /** Revokes a token at once; false when there was none. */
  readonly revokeToken: (id: TokenId, at: number) => Effect.Effect<boolean, StorageError>
}>() {}
