/** Port: teams, principals and their memberships, and API tokens (stored only as SHA-256 hashes). */
import type { Effect, Option } from "effect"
import { Context } from "effect"
import type { PrincipalUid, TeamUid, TokenId } from "../domain/Ids.js"
import type { Principal, Team, TokenRecord } from "../domain/Identity.js"
import type { StorageError } from "./Storage.js"

export class IdentityStore extends Context.Tag("@agent-runs/core/IdentityStore")<IdentityStore, {
  /** Creates a team. */
  readonly createTeam: (team: Team) => Effect.Effect<void, StorageError>
  /** Reads a team. */
  readonly getTeam: (uid: TeamUid) => Effect.Effect<Option.Option<Team>, StorageError>
  /** Every team, by name. */
  readonly listTeams: Effect.Effect<ReadonlyArray<Team>, StorageError>
  /** Replaces a team's settings. */
  readonly updateTeam: (team: Team) => Effect.Effect<void, StorageError>
  /** Creates a principal with its memberships. */
  readonly createPrincipal: (principal: Principal) => Effect.Effect<void, StorageError>
  /** Reads a principal with its memberships. */
  readonly getPrincipal: (uid: PrincipalUid) => Effect.Effect<Option.Option<Principal>, StorageError>
  /** The instance administrators, oldest first. */
  readonly instanceAdmins: Effect.Effect<ReadonlyArray<Principal>, StorageError>
  /** How many principals exist (zero: the server bootstraps an admin). */
  readonly countPrincipals: Effect.Effect<number, StorageError>
  /** Stores a token's record (its hash, never the token). */
  readonly createToken: (token: TokenRecord) => Effect.Effect<void, StorageError>
  /** The unrevoked token with this SHA-256 hash and its principal. */
  readonly findToken: (
    hash: string
  ) => Effect.Effect<Option.Option<{ readonly token: TokenRecord; readonly principal: Principal }>, StorageError>
  /** The token with this SHA-256 hash, revoked or not (bootstrap checks the configured token). */
  readonly findTokenRecord: (hash: string) => Effect.Effect<Option.Option<TokenRecord>, StorageError>
  /** Revokes a token at once; false when there was none. */
  readonly revokeToken: (id: TokenId, at: number) => Effect.Effect<boolean, StorageError>
}>() {}
