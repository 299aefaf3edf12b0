/**
 * IdentityStore over SqlClient: teams, principals with their memberships (kept in join order), and
 * API tokens stored only as their SHA-256 hash (unique). A token is found while `revoked_at` is
 * null; revoking sets it at once and keeps the record. Deleting a principal keeps its row (its
 * name) with `deleted_at`, removes its memberships and revokes its tokens in one transaction.
 *
 * `findToken` answers from a bounded in-memory cache (ReadCache.ts) while its entry is fresh;
 * every write that can change what a token grants (revoking, deleting or changing a principal,
 * a membership) empties it, here at once and on every other replica through `CacheChanges`.
 */
import * as TrustedCodec from "@agent-runs/core/domain/TrustedCodec"
import type { PrincipalUid, TeamUid, TokenId } from "@agent-runs/core/domain/Ids"
import { GitHubConnection } from "@agent-runs/core/domain/GitHub"
import { Principal, type Role, Team, TokenRecord } from "@agent-runs/core/domain/Identity"
import { TeamBudgets } from "@agent-runs/core/domain/Budget"
import { TeamRetention } from "@agent-runs/core/domain/Retention"
import { IdentityStore, type PrincipalChanges, type PrincipalPage } from "@agent-runs/core/ports/IdentityStore"
import { SqlClient } from "@effect/sql"
import { DateTime, Effect, Layer, Option, Schema } from "effect"
import { cachedRead, cacheSettings, invalidation } from "./CachedReads.js"
import { bool, Count, decodeRows, iso, json, JsonColumn, millis, operation, traced } from "./internal/Catalog.js"
import * as Rows from "./Rows.js"
import * as ReadCache from "./ReadCache.js"

/** What `findToken` finds. */
type FoundToken = { readonly token: TokenRecord; readonly principal: Principal }

const TeamRow = Schema.Struct({
  uid: Schema.String,
  name: Schema.String,
  features: JsonColumn,
  max_concurrent_runs: Schema.Number,
  created_at: Rows.Millis,
  budgets: Schema.NullOr(JsonColumn),
  retention: Schema.NullOr(JsonColumn),
  share_weight: Schema.Number
})

const PrincipalRow = Schema.Struct({
  uid: Schema.String,
  type: Schema.String,
  display_name: Schema.String,
  instance_admin: Rows.Bool,
  created_at: Rows.Millis,
  disabled_at: Schema.NullOr(Rows.Millis),
  deleted_at: Schema.NullOr(Rows.Millis),
  email: Schema.NullOr(Schema.String)
})

const MembershipRow = Schema.Struct({ principal_uid: Schema.String, team_uid: Schema.String, role: Schema.String })

const TokenRow = Schema.Struct({
  token_id: Schema.String,
  principal_uid: Schema.String,
  name: Schema.NullOr(Schema.String),
  token_hash: Schema.String,
  created_at: Rows.Millis,
  revoked_at: Schema.NullOr(Rows.Millis),
  expires_at: Schema.NullOr(Rows.Millis),
  last_used_at: Schema.NullOr(Rows.Millis),
  team_uid: Schema.NullOr(Schema.String),
  max_role: Schema.NullOr(Schema.String)
})

const isoOrNull = (value: number | null) => (value === null ? null : iso(value))

const toTeam = (row: typeof TeamRow.Type) =>
  TrustedCodec.decoder(Team)({
    uid: row.uid,
    name: row.name,
    features: row.features,
    max_concurrent_runs: row.max_concurrent_runs,
    created_at: iso(row.created_at),
    budgets: row.budgets ?? {},
    retention: row.retention ?? {},
    share_weight: row.share_weight
  })

const toPrincipal = (row: typeof PrincipalRow.Type, memberships: ReadonlyArray<typeof MembershipRow.Type>) =>
  TrustedCodec.decoder(Principal)({
    uid: row.uid,
    type: row.type,
    display_name: row.display_name,
    instance_admin: row.instance_admin,
    memberships: memberships.map((m) => ({ team_uid: m.team_uid, role: m.role })),
    created_at: iso(row.created_at),
    disabled_at: isoOrNull(row.disabled_at),
    deleted_at: isoOrNull(row.deleted_at),
    email: row.email
  })

const toToken = (row: typeof TokenRow.Type) =>
  TrustedCodec.decoder(TokenRecord)({
    token_id: row.token_id,
    principal_uid: row.principal_uid,
    name: row.name,
    token_hash: row.token_hash,
    created_at: iso(row.created_at),
    revoked_at: isoOrNull(row.revoked_at),
    expires_at: isoOrNull(row.expires_at),
    last_used_at: isoOrNull(row.last_used_at),
    team_uid: row.team_uid,
    max_role: row.max_role
  })

/** IdentityStore, needing `SqlClient` and `CacheChanges` (and `ReadCacheConfig` when not the default). */
export const layer = Layer.scoped(
  IdentityStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const settings = yield* cacheSettings
    const cache = ReadCache.make<FoundToken>(settings)
    // Principals (with their memberships) and teams by uid, as `Runs` reads them on every create
    // and list: kept and emptied exactly as the tokens are.
    const principals = ReadCache.make<Principal>(settings)
    const teams = ReadCache.make<Team>(settings)
    // A write after which what a token grants, a principal or a team may differ.
    const { changing } = yield* invalidation([cache, principals, teams])

    const teamColumns = (team: Team) => ({
      name: team.name,
      features: json(Schema.encodeSync(Team.fields.features)(team.features)),
      max_concurrent_runs: team.max_concurrent_runs,
      created_at: millis(team.created_at),
      share_weight: team.share_weight
    })
    const budgetsColumn = (budgets: TeamBudgets) => json(Schema.encodeSync(TeamBudgets)(budgets))
    const retentionColumn = (retention: TeamRetention) => json(Schema.encodeSync(TeamRetention)(retention))

    const createTeam = Effect.fn("IdentityStore.createTeam")(
      function* (team: Team) {
        yield* sql`INSERT INTO teams ${sql.insert({ uid: team.uid, ...teamColumns(team), budgets: budgetsColumn(team.budgets), retention: retentionColumn(team.retention) })}`
      },
      operation("IdentityStore.createTeam")
    )

    const readTeam = Effect.fn("IdentityStore.getTeam")(
      function* (uid: TeamUid) {
        const rows = yield* sql`SELECT * FROM teams WHERE uid = ${uid}`.pipe(Effect.flatMap(decodeRows(TeamRow)))
        return rows[0] === undefined ? Option.none() : Option.some(yield* toTeam(rows[0]))
      },
      operation("IdentityStore.getTeam")
    )
    const getTeam = (uid: TeamUid) => cachedRead(teams, uid, readTeam(uid))

    const listTeams = sql`SELECT * FROM teams ORDER BY name, uid`.pipe(
      Effect.flatMap(decodeRows(TeamRow)),
      Effect.flatMap(Effect.forEach(toTeam)),
      traced("IdentityStore.listTeams")
    )

    const updateTeam = Effect.fn("IdentityStore.updateTeam")(
      function* (team: Team) {
        yield* sql`UPDATE teams SET ${sql.update(teamColumns(team))} WHERE uid = ${team.uid}`
      },
      changing,
      operation("IdentityStore.updateTeam")
    )

    const setTeamBudgets = Effect.fn("IdentityStore.setTeamBudgets")(
      function* (uid: TeamUid, budgets: TeamBudgets) {
        yield* sql`UPDATE teams SET budgets = ${budgetsColumn(budgets)} WHERE uid = ${uid}`
      },
      changing,
      operation("IdentityStore.setTeamBudgets")
    )

    const setTeamRetention = Effect.fn("IdentityStore.setTeamRetention")(
      function* (uid: TeamUid, retention: TeamRetention) {
        yield* sql`UPDATE teams SET retention = ${retentionColumn(retention)} WHERE uid = ${uid}`
      },
      changing,
      operation("IdentityStore.setTeamRetention")
    )

    const GitHubRow = Schema.Struct({ github: Schema.NullOr(JsonColumn) })
    const getGitHubConnection = Effect.fn("IdentityStore.getGitHubConnection")(
      function* (uid: TeamUid) {
        const rows = yield* sql`SELECT github FROM teams WHERE uid = ${uid}`.pipe(Effect.flatMap(decodeRows(GitHubRow)))
        const stored = rows[0]?.github
        if (stored === undefined || stored === null) return Option.none()
        return Option.some(yield* TrustedCodec.decoder(GitHubConnection)(stored))
      },
      operation("IdentityStore.getGitHubConnection")
    )

    const setGitHubConnection = Effect.fn("IdentityStore.setGitHubConnection")(
      function* (uid: TeamUid, connection: Option.Option<GitHubConnection>) {
        const value = Option.match(connection, {
          onNone: () => null,
          onSome: (c) => json(Schema.encodeSync(GitHubConnection)(c))
        })
        const rows = yield* sql`UPDATE teams SET github = ${value} WHERE uid = ${uid} RETURNING uid`
        return rows.length > 0
      },
      operation("IdentityStore.setGitHubConnection")
    )

    const createPrincipal = Effect.fn("IdentityStore.createPrincipal")(
      function* (principal: Principal) {
        yield* sql`INSERT INTO principals ${
          sql.insert({
            uid: principal.uid,
            type: principal.type,
            display_name: principal.display_name,
            instance_admin: bool(sql, principal.instance_admin),
            created_at: millis(principal.created_at),
            disabled_at: principal.disabled_at === null ? null : millis(principal.disabled_at),
            deleted_at: principal.deleted_at === null ? null : millis(principal.deleted_at),
            email: principal.email
          })
        }`
        if (principal.memberships.length > 0) {
          yield* sql`INSERT INTO memberships ${
            sql.insert(principal.memberships.map((m, i) => ({
              principal_uid: principal.uid,
              team_uid: m.team_uid,
              role: m.role,
              join_order: i
            })))
          }`
        }
      },
      sql.withTransaction,
      operation("IdentityStore.createPrincipal")
    )

    /** The principals with these rows, with their memberships in join order. */
    const withMemberships = (rows: ReadonlyArray<typeof PrincipalRow.Type>) =>
      Effect.gen(function* () {
        if (rows.length === 0) return []
        const memberships = yield* sql`SELECT principal_uid, team_uid, role FROM memberships
          WHERE ${sql.in("principal_uid", rows.map((r) => r.uid))} ORDER BY principal_uid, join_order`.pipe(
          Effect.flatMap(decodeRows(MembershipRow))
        )
        return yield* Effect.forEach(rows, (row) => toPrincipal(row, memberships.filter((m) => m.principal_uid === row.uid)))
      })

    const readPrincipal = Effect.fn("IdentityStore.getPrincipal")(
      function* (uid: PrincipalUid) {
        const rows = yield* sql`SELECT * FROM principals WHERE uid = ${uid}`.pipe(Effect.flatMap(decodeRows(PrincipalRow)))
        const [principal] = yield* withMemberships(rows)
        return Option.fromNullable(principal)
      },
      operation("IdentityStore.getPrincipal")
    )
    const getPrincipal = (uid: PrincipalUid) => cachedRead(principals, uid, readPrincipal(uid))

    const listPrincipals = Effect.fn("IdentityStore.listPrincipals")(
      function* (page: PrincipalPage) {
        const after = page.after === undefined ? sql`` : sql`AND p.uid > ${page.after}`
        const rows = page.team_uid === undefined
          ? yield* sql`SELECT p.* FROM principals p WHERE p.deleted_at IS NULL ${after} ORDER BY p.uid LIMIT ${page.limit}`
          : yield* sql`SELECT p.* FROM principals p JOIN memberships m ON m.principal_uid = p.uid
              WHERE m.team_uid = ${page.team_uid} AND p.deleted_at IS NULL ${after} ORDER BY p.uid LIMIT ${page.limit}`
        return yield* withMemberships(yield* decodeRows(PrincipalRow)(rows))
      },
      operation("IdentityStore.listPrincipals")
    )

    const updatePrincipal = Effect.fn("IdentityStore.updatePrincipal")(
      function* (uid: PrincipalUid, changes: PrincipalChanges) {
        yield* sql`UPDATE principals SET ${
          sql.update({
            display_name: changes.display_name,
            instance_admin: bool(sql, changes.instance_admin),
            disabled_at: changes.disabled_at
          })
        } WHERE uid = ${uid}`
      },
      changing,
      operation("IdentityStore.updatePrincipal")
    )

    const setMembership = Effect.fn("IdentityStore.setMembership")(
      function* (uid: PrincipalUid, team: TeamUid, role: Role) {
        yield* sql`INSERT INTO memberships (principal_uid, team_uid, role, join_order)
          VALUES (${uid}, ${team}, ${role},
            (SELECT COALESCE(MAX(join_order), -1) + 1 FROM memberships WHERE principal_uid = ${uid}))
          ON CONFLICT (principal_uid, team_uid) DO UPDATE SET role = excluded.role`
      },
      changing,
      operation("IdentityStore.setMembership")
    )

    const removeMembership = Effect.fn("IdentityStore.removeMembership")(
      function* (uid: PrincipalUid, team: TeamUid) {
        const rows = yield* sql`DELETE FROM memberships WHERE principal_uid = ${uid} AND team_uid = ${team} RETURNING team_uid`
        return rows.length > 0
      },
      changing,
      operation("IdentityStore.removeMembership")
    )

    const countTeamAdmins = Effect.fn("IdentityStore.countTeamAdmins")(
      function* (team: TeamUid) {
        const rows = yield* sql`SELECT COUNT(*) AS n FROM memberships m JOIN principals p ON p.uid = m.principal_uid
          WHERE m.team_uid = ${team} AND m.role = 'admin' AND p.disabled_at IS NULL AND p.deleted_at IS NULL`.pipe(
          Effect.flatMap(decodeRows(Schema.Struct({ n: Count })))
        )
        return rows[0]?.n ?? 0
      },
      operation("IdentityStore.countTeamAdmins")
    )

    const findBySubject = Effect.fn("IdentityStore.findBySubject")(
      function* (key: string) {
        const rows = yield* sql`SELECT * FROM principals WHERE oidc_subject = ${key}`.pipe(Effect.flatMap(decodeRows(PrincipalRow)))
        const [principal] = yield* withMemberships(rows)
        return Option.fromNullable(principal)
      },
      operation("IdentityStore.findBySubject")
    )

    const findUnlinkedByEmail = Effect.fn("IdentityStore.findUnlinkedByEmail")(
      function* (email: string) {
        const rows = yield* sql`SELECT * FROM principals
          WHERE email = ${email} AND oidc_subject IS NULL AND deleted_at IS NULL ORDER BY uid LIMIT 10`.pipe(
          Effect.flatMap(decodeRows(PrincipalRow))
        )
        return yield* withMemberships(rows)
      },
      operation("IdentityStore.findUnlinkedByEmail")
    )

    const linkSubject = Effect.fn("IdentityStore.linkSubject")(
      function* (uid: PrincipalUid, key: string) {
        const rows = yield* sql`UPDATE principals SET oidc_subject = ${key}
          WHERE uid = ${uid} AND (oidc_subject IS NULL OR oidc_subject = ${key}) RETURNING uid`
        return rows.length > 0
      },
      changing,
      operation("IdentityStore.linkSubject")
    )

    const deletePrincipal = Effect.fn("IdentityStore.deletePrincipal")(
      function* (uid: PrincipalUid, at: number) {
        yield* sql`UPDATE principals SET deleted_at = COALESCE(deleted_at, ${at}) WHERE uid = ${uid}`
        yield* sql`DELETE FROM memberships WHERE principal_uid = ${uid}`
        yield* sql`UPDATE tokens SET revoked_at = COALESCE(revoked_at, ${at}) WHERE principal_uid = ${uid}`
      },
      sql.withTransaction,
      changing,
      operation("IdentityStore.deletePrincipal")
    )

    const erasePrincipal = Effect.fn("IdentityStore.erasePrincipal")(
      function* (uid: PrincipalUid, name: string) {
        yield* sql`UPDATE principals SET display_name = ${name}, email = NULL, oidc_subject = NULL WHERE uid = ${uid}`
      },
      changing,
      operation("IdentityStore.erasePrincipal")
    )

    const instanceAdmins = sql`SELECT * FROM principals WHERE instance_admin = ${bool(sql, true)} AND deleted_at IS NULL
      ORDER BY created_at, uid`.pipe(
      Effect.flatMap(decodeRows(PrincipalRow)),
      Effect.flatMap(withMemberships),
      traced("IdentityStore.instanceAdmins")
    )

    const countPrincipals = sql`SELECT COUNT(*) AS n FROM principals`.pipe(
      Effect.flatMap(decodeRows(Schema.Struct({ n: Count }))),
      Effect.map((rows) => rows[0]?.n ?? 0),
      traced("IdentityStore.countPrincipals")
    )

    const createToken = Effect.fn("IdentityStore.createToken")(
      function* (token: TokenRecord) {
        yield* sql`INSERT INTO tokens ${
          sql.insert({
            token_id: token.token_id,
            principal_uid: token.principal_uid,
            name: token.name,
            token_hash: token.token_hash,
            created_at: millis(token.created_at),
            revoked_at: token.revoked_at === null ? null : millis(token.revoked_at),
            expires_at: token.expires_at === null ? null : millis(token.expires_at),
            last_used_at: token.last_used_at === null ? null : millis(token.last_used_at),
            team_uid: token.team_uid,
            max_role: token.max_role
          })
        }`
      },
      operation("IdentityStore.createToken")
    )

    const readToken = Effect.fn("IdentityStore.findToken")(
      function* (hash: string) {
        const tokens = yield* sql`SELECT * FROM tokens WHERE token_hash = ${hash} AND revoked_at IS NULL`.pipe(
          Effect.flatMap(decodeRows(TokenRow))
        )
        const row = tokens[0]
        if (row === undefined) return Option.none()
        const principals = yield* sql`SELECT * FROM principals WHERE uid = ${row.principal_uid}`.pipe(
          Effect.flatMap(decodeRows(PrincipalRow)),
          Effect.flatMap(withMemberships)
        )
        const principal = principals[0]
        if (principal === undefined) return Option.none()
        return Option.some<FoundToken>({ token: yield* toToken(row), principal })
      },
      operation("IdentityStore.findToken")
    )

    /** The cached entry while fresh, else the stored one (kept under its token id, which revocation names). */
    const findToken = (hash: string) => cachedRead(cache, hash, readToken(hash), (found) => found.token.token_id)

    const findTokenRecord = Effect.fn("IdentityStore.findTokenRecord")(
      function* (hash: string) {
        const rows = yield* sql`SELECT * FROM tokens WHERE token_hash = ${hash}`.pipe(Effect.flatMap(decodeRows(TokenRow)))
        return rows[0] === undefined ? Option.none() : Option.some(yield* toToken(rows[0]))
      },
      operation("IdentityStore.findTokenRecord")
    )

    const getToken = Effect.fn("IdentityStore.getToken")(
      function* (id: TokenId) {
        const rows = yield* sql`SELECT * FROM tokens WHERE token_id = ${id}`.pipe(Effect.flatMap(decodeRows(TokenRow)))
        return rows[0] === undefined ? Option.none() : Option.some(yield* toToken(rows[0]))
      },
      operation("IdentityStore.getToken")
    )

    const listTokens = Effect.fn("IdentityStore.listTokens")(
      function* (principal: PrincipalUid, limit: number) {
        const rows = yield* sql`SELECT * FROM tokens WHERE principal_uid = ${principal}
          ORDER BY created_at DESC, token_id DESC LIMIT ${limit}`.pipe(Effect.flatMap(decodeRows(TokenRow)))
        return yield* Effect.forEach(rows, toToken)
      },
      operation("IdentityStore.listTokens")
    )

    const touchToken = Effect.fn("IdentityStore.touchToken")(
      function* (id: TokenId, at: number) {
        yield* sql`UPDATE tokens SET last_used_at = ${at} WHERE token_id = ${id}`
        // A cached token keeps its last use, or every request would write it again.
        cache.update(id, (found) => ({ ...found, token: new TokenRecord({ ...found.token, last_used_at: DateTime.unsafeMake(at) }, true) }))
      },
      operation("IdentityStore.touchToken")
    )

    const revokeToken = Effect.fn("IdentityStore.revokeToken")(
      function* (id: TokenId, at: number) {
        const rows = yield* sql`UPDATE tokens SET revoked_at = COALESCE(revoked_at, ${at})
          WHERE token_id = ${id} RETURNING token_id`
        return rows.length > 0
      },
      changing,
      operation("IdentityStore.revokeToken")
    )

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
  })
)
