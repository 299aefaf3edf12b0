/**
 * IdentityStore in memory, with the semantics and constraints of `IdentityStoreSql.ts`: teams,
 * principals with their memberships in join order (each naming an existing team, once), and API
 * tokens held only as their SHA-256 hash (unique, of an existing principal). A token is found
 * while it is not revoked; revoking keeps the record and its first revocation time. Deleting a
 * principal keeps it (a tombstone with `deleted_at`), without memberships, its tokens revoked.
 */
import type { Context } from "effect"
import { DateTime, Effect, Option } from "effect"
import type { GitHubConnection } from "../../src/domain/GitHub.js"
import type { PrincipalUid, TeamUid, TokenId } from "../../src/domain/Ids.js"
import type { TeamBudgets } from "../../src/domain/Budget.js"
import type { TeamRetention } from "../../src/domain/Retention.js"
import { Principal, type Role, Team, TokenRecord } from "../../src/domain/Identity.js"
import { compareCodePoints } from "../../src/domain/RunQuery.js"
import { IdentityStore, type PrincipalChanges, type PrincipalPage } from "../../src/ports/IdentityStore.js"
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
      const current = state.teams.get(team.uid)
      if (current !== undefined) state.teams.set(team.uid, new Team({ ...team, budgets: current.budgets, retention: current.retention }))
    })

  const setTeamBudgets = (uid: TeamUid, budgets: TeamBudgets) =>
    Effect.sync(() => {
      const current = state.teams.get(uid)
      if (current !== undefined) state.teams.set(uid, new Team({ ...current, budgets }))
    })

  const setTeamRetention = (uid: TeamUid, retention: TeamRetention) =>
    Effect.sync(() => {
      const current = state.teams.get(uid)
      if (current !== undefined) state.teams.set(uid, new Team({ ...current, retention }))
    })

  const getGitHubConnection = (uid: TeamUid) => Effect.sync(() => Option.fromNullable(state.gitHubConnections.get(uid)))

  const setGitHubConnection = (uid: TeamUid, connection: Option.Option<GitHubConnection>) =>
    Effect.sync(() => {
      if (!state.teams.has(uid)) return false
      if (Option.isSome(connection)) state.gitHubConnections.set(uid, connection.value)
      else state.gitHubConnections.delete(uid)
      return true
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

  const listPrincipals = (page: PrincipalPage) =>
    Effect.sync(() =>
      [...state.principals.values()]
        .filter((p) =>
          p.deleted_at === null && (page.after === undefined || compareCodePoints(p.uid, page.after) > 0) &&
          (page.team_uid === undefined || p.memberships.some((m) => m.team_uid === page.team_uid))
        )
        .sort((a, b) => compareCodePoints(a.uid, b.uid))
        .slice(0, page.limit)
    )

  /** Replaces a stored principal with what `change` makes of it. */
  const changePrincipal = (uid: PrincipalUid, change: (principal: Principal) => Principal) => {
    const principal = state.principals.get(uid)
    if (principal !== undefined) state.principals.set(uid, change(principal))
  }

  const updatePrincipal = (uid: PrincipalUid, changes: PrincipalChanges) =>
    Effect.sync(() =>
      changePrincipal(uid, (p) =>
        new Principal({
          ...p,
          display_name: changes.display_name,
          instance_admin: changes.instance_admin,
          disabled_at: changes.disabled_at === null ? null : DateTime.unsafeMake(changes.disabled_at)
        }))
    )

  const erasePrincipal = (uid: PrincipalUid, name: string) =>
    Effect.sync(() => {
      changePrincipal(uid, (p) => new Principal({ ...p, display_name: name, email: null }))
      state.subjects.delete(uid)
    })

  const setMembership = (uid: PrincipalUid, team: TeamUid, role: Role) =>
    Effect.suspend((): Effect.Effect<void, StorageError> => {
      if (!state.teams.has(team)) return Effect.fail(storageError("IdentityStore.setMembership", `no team ${team}`))
      changePrincipal(uid, (p) =>
        new Principal({
          ...p,
          memberships: p.memberships.some((m) => m.team_uid === team)
            ? p.memberships.map((m) => (m.team_uid === team ? { team_uid: team, role } : m))
            : [...p.memberships, { team_uid: team, role }]
        }))
      return Effect.void
    })

  const removeMembership = (uid: PrincipalUid, team: TeamUid) =>
    Effect.sync(() => {
      const principal = state.principals.get(uid)
      if (principal === undefined || !principal.memberships.some((m) => m.team_uid === team)) return false
      changePrincipal(uid, (p) => new Principal({ ...p, memberships: p.memberships.filter((m) => m.team_uid !== team) }))
      return true
    })

  const countTeamAdmins = (team: TeamUid) =>
    Effect.sync(() =>
      [...state.principals.values()].filter((p) =>
        p.disabled_at === null && p.deleted_at === null && p.memberships.some((m) => m.team_uid === team && m.role === "admin")
      ).length
    )

  const findBySubject = (key: string) =>
    Effect.sync(() => Option.fromNullable([...state.principals.values()].find((p) => state.subjects.get(p.uid) === key)))

  const findUnlinkedByEmail = (email: string) =>
    Effect.sync(() =>
      [...state.principals.values()]
        .filter((p) => p.email === email && !state.subjects.has(p.uid) && p.deleted_at === null)
        .sort((a, b) => compareCodePoints(a.uid, b.uid))
        .slice(0, 10)
    )

  const linkSubject = (uid: PrincipalUid, key: string) =>
    Effect.suspend((): Effect.Effect<boolean, StorageError> => {
      const linked = state.subjects.get(uid)
      if (!state.principals.has(uid) || (linked !== undefined && linked !== key)) return Effect.succeed(false)
      if ([...state.subjects].some(([other, k]) => k === key && other !== uid)) {
        return Effect.fail(storageError("IdentityStore.linkSubject", "another principal is linked to this subject"))
      }
      state.subjects.set(uid, key)
      return Effect.succeed(true)
    })

  const revokeAt = (token: TokenRecord, at: number) =>
    token.revoked_at === null ? new TokenRecord({ ...token, revoked_at: DateTime.unsafeMake(at) }) : token

  const deletePrincipal = (uid: PrincipalUid, at: number) =>
    Effect.sync(() => {
      changePrincipal(uid, (p) => new Principal({ ...p, memberships: [], deleted_at: p.deleted_at ?? DateTime.unsafeMake(at) }))
      for (const token of state.tokens.values()) {
        if (token.principal_uid === uid) state.tokens.set(token.token_id, revokeAt(token, at))
      }
    })

  const instanceAdmins = Effect.sync(() =>
    [...state.principals.values()]
      .filter((p) => p.instance_admin && p.deleted_at === null)
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

  const getToken = (id: TokenId) => Effect.sync(() => Option.fromNullable(state.tokens.get(id)))

  const listTokens = (principal: PrincipalUid, limit: number) =>
    Effect.sync(() =>
      [...state.tokens.values()]
        .filter((t) => t.principal_uid === principal)
        .sort((a, b) =>
          DateTime.toEpochMillis(b.created_at) - DateTime.toEpochMillis(a.created_at) || compareCodePoints(b.token_id, a.token_id)
        )
        .slice(0, limit)
    )

  const touchToken = (id: TokenId, at: number) =>
    Effect.sync(() => {
      const token = state.tokens.get(id)
      if (token !== undefined) state.tokens.set(id, new TokenRecord({ ...token, last_used_at: DateTime.unsafeMake(at) }))
    })

  const revokeToken = (id: TokenId, at: number) =>
    Effect.sync(() => {
      const token = state.tokens.get(id)
      if (token === undefined) return false
      state.tokens.set(id, revokeAt(token, at))
      return true
    })

  return IdentityStore.of({
    createTeam,
    getTeam,
    listTeams,
    updateTeam,
    setTeamBudgets,
    setTeamRetention,
    getGitHubConnection,
    setGitHubConnection,
    createPrincipal,
    getPrincipal,
    listPrincipals,
    updatePrincipal,
    setMembership,
    removeMembership,
    countTeamAdmins,
    findBySubject,
    findUnlinkedByEmail,
    linkSubject,
    deletePrincipal,
    erasePrincipal,
    instanceAdmins,
    countPrincipals,
    createToken,
    findToken,
    findTokenRecord,
    getToken,
    listTokens,
    touchToken,
    revokeToken
  })
}
