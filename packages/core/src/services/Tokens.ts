/**
 * API tokens (docs/reference/access.md): issuing, listing and revoking them, for instance
 * administrators (any principal's tokens, under `/admin`) and for a team's admins (the tokens of
 * the team's service accounts, under `/agent/team`). Tokens are `ar_` plus 32 random bytes in
 * base64url; only their SHA-256 (lowercase hex) is stored, and the token is shown once.
 *
 * Decisions:
 * - `expires_at` must be in the future (400 naming it). `team_uid` must be one of the principal's
 *   teams (400 naming it). A limited token (a team or a role) never opens the admin API.
 * - A team admin's tokens are always limited to its team (another `team_uid` is a 400), and only
 *   for the team's own service accounts (`isTeamServiceAccount`: members of that team only, not
 *   instance administrators; any other principal is a 404, as one it cannot see); they act with at
 *   most the account's role in the team, which the team's admins set. It lists and revokes only
 *   such accounts' tokens limited to its team (others are a 404). A run token manages no tokens.
 * - A list shows a principal's newest `MAX_LISTED_TOKENS` tokens, revoked and expired included.
 * - Revoking a revoked token succeeds and keeps its first revocation time.
 */
import { Clock, DateTime, Effect, Encoding, Option } from "effect"
import type { Viewer } from "../domain/Access.js"
import { InvalidRequest, ResourceNotFound } from "../domain/Errors.js"
import { Ids, type PrincipalUid, type TeamUid, type TokenId } from "../domain/Ids.js"
import {
  CreateTokenResponse,
  isTeamServiceAccount,
  ListTokensResponse,
  MAX_LISTED_TOKENS,
  type CreateTokenRequest,
  type Principal,
  type Role,
  TOKEN_PREFIX,
  TokenInfo,
  TokenRecord
} from "../domain/Identity.js"
import { livePrincipal, requireInstanceAdmin, requireMemberManager } from "../internal/Principals.js"
import { storageUnavailable } from "../internal/Services.js"
import { sha256Hex } from "../internal/Sha256.js"
import { IdentityStore } from "../ports/IdentityStore.js"
import { Audit } from "./Audit.js"

/** A fresh API token: `ar_` and 32 random bytes in base64url (43 characters). */
export const generateToken: Effect.Effect<string> = Effect.sync(
  () => `${TOKEN_PREFIX}${Encoding.encodeBase64Url(globalThis.crypto.getRandomValues(new Uint8Array(32)))}`
)

/** The SHA-256 of a token as 64 lowercase hex characters: what is stored. */
export const hashToken = (token: string): Effect.Effect<string> => sha256Hex(new TextEncoder().encode(token))

/** What a new token is limited by. */
export interface TokenLimits {
  readonly name: string | null
  readonly expires_at: DateTime.Utc | null
  readonly team_uid: TeamUid | null
  readonly max_role: Role | null
}

/** No limits: a token that never expires and acts as its principal does. */
export const UNLIMITED: TokenLimits = { name: null, expires_at: null, team_uid: null, max_role: null }

/** Stores `token` (its hash) as a token of `principal`, and answers its record. */
export const storeToken = (
  store: IdentityStore["Type"],
  ids: Ids["Type"],
  principal: PrincipalUid,
  token: string,
  limits: TokenLimits
) =>
  Effect.gen(function*() {
    const record = new TokenRecord({
      token_id: (yield* ids.uid22) as TokenId,
      principal_uid: principal,
      token_hash: yield* hashToken(token),
      created_at: DateTime.unsafeMake(yield* Clock.currentTimeMillis),
      revoked_at: null,
      ...limits
    })
    yield* store.createToken(record)
    return record
  })

/** Stores a new token of `principal` and answers its record and the token (shown once). */
export const issueToken = (store: IdentityStore["Type"], ids: Ids["Type"], principal: PrincipalUid, limits: TokenLimits) =>
  Effect.flatMap(generateToken, (token) => Effect.map(storeToken(store, ids, principal, token, limits), (record) => ({ record, token })))



/** The limits a request asks for, checked against the principal and the time. */
const limitsOf = (principal: Principal, request: CreateTokenRequest, now: number) =>
  Effect.gen(function*() {
    if (request.expires_at !== undefined && request.expires_at.epochMillis <= now) {
      return yield* InvalidRequest.forField("expires_at", "must be in the future")
    }
    if (request.team_uid !== undefined && !principal.memberships.some((m) => m.team_uid === request.team_uid)) {
      return yield* InvalidRequest.forField("team_uid", `the principal is not a member of team ${request.team_uid}`)
    }
    return {
      name: request.name?.trim() || null,
      expires_at: request.expires_at ?? null,
      team_uid: request.team_uid ?? null,
      max_role: request.max_role ?? null
    } satisfies TokenLimits
  })

/** The info of a record: everything but its hash. */
const infoOf = ({ token_hash: _hash, ...info }: TokenRecord) => new TokenInfo(info)

export class Tokens extends Effect.Service<Tokens>()("@agent-runs/core/Tokens", {
  dependencies: [Audit.Default],
  effect: Effect.gen(function*() {
    const audit = yield* Audit
    const store = yield* IdentityStore
    const ids = yield* Ids

    /** Issues a token for the audit log's viewer, recorded in the same transaction. */
    const issueRecorded = (viewer: Viewer, principal: PrincipalUid, limits: TokenLimits, team: TeamUid | null) =>
      Effect.map(
        audit.recording(viewer, issueToken(store, ids, principal, limits), ({ record }) => ({
          action: "token.create",
          resource: { type: "token", id: record.token_id },
          team_uid: team
        })),
        ({ record, token }) => new CreateTokenResponse({ token_id: record.token_id, token })
      )

    /** `POST /admin/principals/{uid}/tokens`: any principal's token, with any limits. */
    const create = Effect.fn("Tokens.create")(
      function*(viewer: Viewer, principalUid: PrincipalUid, request: CreateTokenRequest) {
        yield* requireInstanceAdmin(viewer)
        const principal = yield* livePrincipal(store, principalUid)
        const limits = yield* limitsOf(principal, request, yield* Clock.currentTimeMillis)
        return yield* issueRecorded(viewer, principal.uid, limits, limits.team_uid)
      },
      storageUnavailable,
      audit.refusals("token.create", () => ({ type: "token", id: null }))
    )

    /** The team's service account `uid` (a 404 for any other principal). */
    const teamServiceAccount = (viewer: Viewer, uid: PrincipalUid) =>
      Effect.filterOrFail(
        livePrincipal(store, uid),
        (p) => isTeamServiceAccount(p, viewer.team_uid),
        () => ResourceNotFound.of("principal", uid)
      )

    /** `POST /agent/team/service-accounts/{uid}/tokens`: limited to the team. */
    const createInTeam = Effect.fn("Tokens.createInTeam")(
      function*(viewer: Viewer, principalUid: PrincipalUid, request: CreateTokenRequest) {
        yield* requireMemberManager(viewer, viewer.team_uid)
        const principal = yield* teamServiceAccount(viewer, principalUid)
        if (request.team_uid !== undefined && request.team_uid !== viewer.team_uid) {
          return yield* InvalidRequest.forField("team_uid", "a team admin's tokens act only in its own team")
        }
        const limits = yield* limitsOf(principal, request, yield* Clock.currentTimeMillis)
        return yield* issueRecorded(viewer, principal.uid, { ...limits, team_uid: viewer.team_uid }, viewer.team_uid)
      },
      storageUnavailable,
      audit.refusals("token.create", () => ({ type: "token", id: null }))
    )

    /** `GET /admin/principals/{uid}/tokens`. */
    const list = Effect.fn("Tokens.list")(
      function*(viewer: Viewer, principalUid: PrincipalUid) {
        yield* requireInstanceAdmin(viewer)
        const principal = yield* livePrincipal(store, principalUid)
        return new ListTokensResponse({ tokens: (yield* store.listTokens(principal.uid, MAX_LISTED_TOKENS)).map(infoOf) })
      },
      storageUnavailable
    )

    /** `GET /agent/team/service-accounts/{uid}/tokens`: only the tokens limited to the team. */
    const listInTeam = Effect.fn("Tokens.listInTeam")(
      function*(viewer: Viewer, principalUid: PrincipalUid) {
        yield* requireMemberManager(viewer, viewer.team_uid)
        const principal = yield* teamServiceAccount(viewer, principalUid)
        const tokens = yield* store.listTokens(principal.uid, MAX_LISTED_TOKENS)
        return new ListTokensResponse({ tokens: tokens.filter((t) => t.team_uid === viewer.team_uid).map(infoOf) })
      },
      storageUnavailable
    )

    const revocation = (viewer: Viewer, tokenId: TokenId, team: TeamUid | null) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        audit.recording(viewer, store.revokeToken(tokenId, now), () => ({
          action: "token.revoke",
          resource: { type: "token", id: tokenId },
          team_uid: team
        })))

    /** `DELETE /admin/tokens/{id}`. */
    const revoke = Effect.fn("Tokens.revoke")(
      function*(viewer: Viewer, tokenId: TokenId) {
        yield* requireInstanceAdmin(viewer)
        const token = Option.getOrUndefined(yield* store.getToken(tokenId))
        if (token === undefined) return yield* ResourceNotFound.of("token", tokenId)
        yield* revocation(viewer, tokenId, token.team_uid)
      },
      storageUnavailable,
      audit.refusals("token.revoke", (tokenId: TokenId) => ({ type: "token", id: tokenId }))
    )

    /** `DELETE /agent/team/tokens/{id}`: a token limited to the caller's team. */
    const revokeInTeam = Effect.fn("Tokens.revokeInTeam")(
      function*(viewer: Viewer, tokenId: TokenId) {
        yield* requireMemberManager(viewer, viewer.team_uid)
        const token = Option.getOrUndefined(yield* store.getToken(tokenId))
        const holder = token === undefined ? undefined : Option.getOrUndefined(yield* store.getPrincipal(token.principal_uid))
        if (token?.team_uid !== viewer.team_uid || holder === undefined || !isTeamServiceAccount(holder, viewer.team_uid)) {
          return yield* ResourceNotFound.of("token", tokenId)
        }
        yield* revocation(viewer, tokenId, viewer.team_uid)
      },
      storageUnavailable,
      audit.refusals("token.revoke", (tokenId: TokenId) => ({ type: "token", id: tokenId }))
    )

    return { create, createInTeam, list, listInTeam, revoke, revokeInTeam } as const
  })
}) {}
