/**
 * IdentityStore in memory, with the semantics and constraints of `IdentityStoreSql.ts`: teams,
 * principals with their memberships in join order (each naming an existing team, once), and API
 * tokens held only as their SHA-256 hash (unique, of an existing principal). A token
 * authenticates while it is not revoked; revoking keeps the record and its first revocation time.
 */
import type { Context } from "effect"
import { DateTime, Effect, Option } from "effect"
import type { PrincipalUid, TeamUid, TokenId } from "../../src/domain/Ids.js"
import { type Principal, type Team, TokenRecord } from "../../src/domain/Identity.js"
import { compareCodePoints } from "../../src/domain/RunQuery.js"
import { IdentityStore } from "../../src/ports/IdentityStore.js"
import type { StorageError } from "../../src/ports/Storage.js"
import { type MemoryState, storageError } from "./MemoryState.js"

/** IdentityStore over the shared state. */
export const makeMemoryIdentityStore = (state: MemoryState): Context.Tag.Service<IdentityStore> => {
  const createTeam = (team: Team) =>
    Effect.suspend((): Effect.Effect<void, StorageError> => {
      if (state.teams.has(team.uid)) return Effect.fail(storageError("IdentityStore.createTeam", `team ${team.uid} exists already`))
      state.teams.set(team.uid, team)
      return Effect.void
    })

  const getTeam = (uid: TeamUid) => Effect.sync(() => Option.fromNullable(state.teams.get(uid)))

  const listTeams = Effect.sync(() =>
    [...state.teams.values()].sort((a, b) => compareCodePoints(a.name, b.name) || compareCodePoints(a.uid, b.uid))
  )

  const updateTeam = (team: Team) =>
    Effect.sync(() => {
      if (state.teams.has(team.uid)) state.teams.set(team.uid, team)
    })

  const createPrincipal = (principal: Principal) =>
    Effect.suspend((): Effect.Effect<void, StorageError> => {
      const fail = (problem: string) => Effect.fail(storageError("IdentityStore.createPrincipal", problem))
      if (state.principals.has(principal.uid)) return fail(`principal ${principal.uid} exists already`)
      const teams = new Set<TeamUid>()
      for (const { team_uid } of principal.memberships) {
        if (!state.teams.has(team_uid)) return fail(`no team ${team_uid}`)
        if (teams.has(team_uid)) return fail(`two memberships of team ${team_uid}`)
        teams.add(team_uid)
      }
      state.principals.set(principal.uid, principal)
      return Effect.void
    })

  const getPrincipal = (uid: PrincipalUid) => Effect.sync(() => Option.fromNullable(state.principals.get(uid)))

  const instanceAdmins = Effect.sync(() =>
    [...state.principals.values()]
      .filter((p) => p.instance_admin)
      .sort((a, b) =>
        DateTime.toEpochMillis(a.created_at) - DateTime.toEpochMillis(b.created_at) || compareCodePoints(a.uid, b.uid)
      )
  )

  const countPrincipals = Effect.sync(() => state.principals.size)

  const createToken = (token: TokenRecord) =>
    Effect.suspend((): Effect.Effect<void, StorageError> => {
      const fail = (problem: string) => Effect.fail(storageError("IdentityStore.createToken", problem))
      if (state.tokens.has(token.token_id)) return fail(`token ${token.token_id} exists already`)
      if (state.tokenHashes.has(token.token_hash)) return fail("a token with this hash exists already")
      if (!state.principals.has(token.principal_uid)) return fail(`no principal ${token.principal_uid}`)
      state.tokens.set(token.token_id, token)
      state.tokenHashes.set(token.token_hash, token.token_id)
      return Effect.void
    })

  /** The token with this hash, revoked or not. */
  const tokenOf = (hash: string): TokenRecord | undefined => {
    const id = state.tokenHashes.get(hash)
    return id === undefined ? undefined : state.tokens.get(id)
  }

  const findToken = (hash: string) =>
    Effect.sync(() => {
      const token = tokenOf(hash)
      if (token === undefined || token.revoked_at !== null) return Option.none()
      const principal = state.principals.get(token.principal_uid)
      return principal === undefined ? Option.none() : Option.some({ token, principal })
    })

  const findTokenRecord = (hash: string) => Effect.sync(() => Option.fromNullable(tokenOf(hash)))

  const revokeToken = (id: TokenId, at: number) =>
    Effect.sync(() => {
      const token = state.tokens.get(id)
      if (token === undefined) return false
      if (token.revoked_at === null) state.tokens.set(id, new TokenRecord({ ...token, revoked_at: DateTime.unsafeMake(at) }))
      return true
    })

  return IdentityStore.of({
    createTeam,
    getTeam,
    listTeams,
    updateTeam,
    createPrincipal,
    getPrincipal,
    instanceAdmins,
    countPrincipals,
    createToken,
    findToken,
    findTokenRecord,
    revokeToken
  })
}
