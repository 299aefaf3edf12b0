/**
 * The identity service (`Identities`) over a real storage adapter: authentication of API tokens
 * with the TEAM header, immediate revocation, the bootstrap administrator, and the admin API
 * (instance administrators only). Most tests share one database and make teams of their own; the
 * bootstrap tests depend on the instance-wide "no principals yet" state, so each of them builds
 * the storage layer again. Call `identitiesServiceSuite(name, layer)` inside a vitest file, with a
 * layer each build of which is a new empty database (as the adapters' test harnesses give).
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import type { Viewer } from "../src/domain/Access.js"
import { decodeRequest } from "../src/domain/Common.js"
import type { InvalidRequest, ResourceNotFound } from "../src/domain/Errors.js"
import { ADMIN_TOKEN_VARIABLE, BOOTSTRAP_ADMIN_NAME, BOOTSTRAP_TEAM_NAME, Identities } from "../src/services/Identities.js"
import { generateToken, hashToken, Tokens } from "../src/services/Tokens.js"
import {
  CreatePrincipalRequest,
  CreateTeamRequest,
  CreateTokenRequest,
  DEFAULT_MAX_CONCURRENT_RUNS,
  MAX_LISTED_TEAMS,
  PatchTeamRequest,
  Principal
} from "../src/domain/Identity.js"
import { IdsLive, isUid22, type PrincipalUid, type TeamUid, type TokenId } from "../src/domain/Ids.js"
import { IdentityStore } from "../src/ports/IdentityStore.js"
import { uid } from "./RunStoreConformance.js"
import type { Stores } from "./Stores.js"
import { failureOf, seedWorld, T0, type World } from "./World.js"

const TOKEN_FORM = /^ar_[A-Za-z0-9_-]{43}$/

const decodeCreateTeam = decodeRequest(CreateTeamRequest)
const decodePatchTeam = decodeRequest(PatchTeamRequest)
const decodeCreatePrincipal = decodeRequest(CreatePrincipalRequest)
const decodeCreateToken = decodeRequest(CreateTokenRequest)

/** The admin API as a transport calls it: untrusted bodies decoded first (a 400 names the field). */
const createTeam = (viewer: Viewer, body: unknown) =>
  Effect.flatMap(decodeCreateTeam(body), (request) => Effect.flatMap(Identities, (i) => i.createTeam(viewer, request)))
const updateTeam = (viewer: Viewer, team: TeamUid, body: unknown) =>
  Effect.flatMap(decodePatchTeam(body), (request) => Effect.flatMap(Identities, (i) => i.updateTeam(viewer, team, request)))
const createPrincipal = (viewer: Viewer, body: unknown) =>
  Effect.flatMap(
    decodeCreatePrincipal(body),
    (request) => Effect.flatMap(Identities, (i) => i.createPrincipal(viewer, request))
  )
const createToken = (viewer: Viewer, principal: PrincipalUid, body: unknown = {}) =>
  Effect.flatMap(
    decodeCreateToken(body),
    (request) => Effect.flatMap(Tokens, (t) => t.create(viewer, principal, request))
  )
const listTeams = (viewer: Viewer) => Effect.flatMap(Identities, (i) => i.listTeams(viewer))
const revokeToken = (viewer: Viewer, token: TokenId) => Effect.flatMap(Tokens, (t) => t.revoke(viewer, token))
/** The caller a token stands for, without what only the audit log reads (its name and token id: `authenticatedAs`). */
const authenticate = (token: string, team?: string) =>
  Effect.map(authenticatedAs(token, team), ({ display_name: _name, token_id: _token, ...viewer }): Viewer => viewer)
const authenticatedAs = (token: string, team?: string) => Effect.flatMap(Identities, (i) => i.authenticate(token, team))
const bootstrap = (configured?: string) => Effect.flatMap(Identities, (i) => i.bootstrap(Option.fromNullable(configured)))

/** The world's team admin acting as an instance administrator (what `authenticate` gives one). */
const instanceAdmin = (world: World): Viewer => ({ ...world.admin, instance_admin: true })

/** A new principal with the given memberships and one token. */
const principalWithToken = (
  root: Viewer,
  memberships: ReadonlyArray<{ readonly team_uid: TeamUid; readonly role: string }>,
  options: { readonly instanceAdmin?: boolean; readonly name?: string } = {}
) =>
  Effect.gen(function*() {
    const principal = yield* createPrincipal(root, {
      type: "user",
      display_name: options.name ?? "Someone",
      memberships,
      instance_admin: options.instanceAdmin ?? false
    })
    const created = yield* createToken(root, principal.uid)
    return { principal, token: created.token, tokenId: created.token_id }
  })

const countPrincipals = Effect.flatMap(IdentityStore, (store) => store.countPrincipals)
const storedTeam = (team: TeamUid) =>
  Effect.flatMap(IdentityStore, (store) => store.getTeam(team)).pipe(Effect.map(Option.getOrThrow))
const tokenRecord = (token: string) =>
  Effect.flatMap(hashToken(token), (hash) => Effect.flatMap(IdentityStore, (store) => store.findTokenRecord(hash)))

/** Registers the identities service suite against one storage adapter's layer. */
export const identitiesServiceSuite = <E>(name: string, storage: Layer.Layer<Stores, E>): void => {
  const services = Layer.merge(Identities.Default, Tokens.Default).pipe(Layer.provideMerge(Layer.mergeAll(storage, IdsLive)))

  describe(`identities service (${name})`, () => {
    layer(services, { excludeTestServices: true, timeout: "60 seconds" })("Identities", (it) => {
      it.effect("a valid token is its principal, in its first team without the TEAM header, with that team's role", () =>
        Effect.gen(function*() {
          const first = yield* seedWorld()
          const second = yield* seedWorld()
          const root = instanceAdmin(first)
          const { principal, token } = yield* principalWithToken(root, [
            { team_uid: first.team, role: "member" },
            { team_uid: second.team, role: "viewer" }
          ])
          const inFirst: Viewer = {
            principal_uid: principal.uid,
            team_uid: first.team,
            role: "member",
            instance_admin: false
          }
          expect(yield* authenticate(token)).toEqual(inFirst)
          expect(yield* authenticate(token, "")).toEqual(inFirst)
          expect(yield* authenticate(token, "   ")).toEqual(inFirst)
          expect(yield* authenticate(token, first.team)).toEqual(inFirst)
          const inSecond = { ...inFirst, team_uid: second.team, role: "viewer" }
          expect(yield* authenticate(token, second.team)).toEqual(inSecond)
          expect(yield* authenticate(token, ` ${second.team} `)).toEqual(inSecond)
          // For the audit log: the principal's name and the token's id (never the token).
          const full = yield* authenticatedAs(token)
          expect(full.display_name).toBe(principal.display_name)
          const record = yield* Effect.flatMap(hashToken(token), (hash) => Effect.flatMap(IdentityStore, (store) => store.findToken(hash)))
          expect(full.token_id).toBe(Option.getOrThrow(record).token.token_id)
        }))

      it.effect("me: the caller's own principal and teams (names, roles, join order), nothing of other teams; capped", () =>
        Effect.gen(function*() {
          const first = yield* seedWorld()
          const second = yield* seedWorld()
          const unrelated = yield* seedWorld()
          const root = instanceAdmin(first)
          const { principal, token } = yield* principalWithToken(root, [
            { team_uid: second.team, role: "viewer" },
            { team_uid: first.team, role: "admin" }
          ], { name: "Two Teams" })
          const expected = {
            principal: { type: "user", uid: principal.uid, display_name: "Two Teams" },
            token: null,
            instance_admin: false,
            teams: [
              { uid: second.team, name: `team ${second.team}`, role: "viewer" },
              { uid: first.team, name: `team ${first.team}`, role: "admin" }
            ],
            teams_truncated: false,
            default_team_uid: second.team
          }
          // The same answer whichever team the request acts in.
          for (const header of [undefined, first.team]) {
            const answer = yield* Effect.flatMap(Identities, (i) => Effect.flatMap(authenticate(token, header), i.me))
            expect({ ...answer }).toEqual(expected)
            expect(JSON.stringify(answer)).not.toContain(unrelated.team)
          }
          // An agent with a run token acts in its run's team only, with the role it acts with.
          const acting: Viewer = { ...first.alice, role: "viewer", acting_run_id: "019a6b2e-7c4d-7f00-8a00-000000000001" as never }
          const agent = yield* Effect.flatMap(Identities, (i) => i.me(acting))
          expect(agent.teams).toEqual([{ uid: first.team, name: `team ${first.team}`, role: "viewer" }])
          expect(agent.default_team_uid).toBe(first.team)
          // An instance administrator in no team; the list is capped.
          const store = yield* IdentityStore
          const loner = new Principal({
            uid: uid<PrincipalUid>(),
            type: "service_account",
            display_name: "operator",
            instance_admin: true,
            memberships: [],
            created_at: T0
          })
          yield* store.createPrincipal(loner)
          const alone = yield* Effect.flatMap(Identities, (i) =>
            i.me({ principal_uid: loner.uid, team_uid: "" as TeamUid, role: "viewer", instance_admin: true }))
          expect({ ...alone, principal: undefined }).toEqual({
            principal: undefined,
            token: null,
            instance_admin: true,
            teams: [],
            teams_truncated: false,
            default_team_uid: null
          })
          const many = yield* Effect.forEach(Array.from({ length: MAX_LISTED_TEAMS + 1 }), () => seedWorld())
          const crowded = new Principal({
            uid: uid<PrincipalUid>(),
            type: "user",
            display_name: "everywhere",
            instance_admin: false,
            memberships: many.map((w) => ({ team_uid: w.team, role: "member" as const })),
            created_at: T0
          })
          yield* store.createPrincipal(crowded)
          const capped = yield* Effect.flatMap(Identities, (i) =>
            i.me({ principal_uid: crowded.uid, team_uid: many[0]!.team, role: "member", instance_admin: false }))
          expect(capped.teams.map((t) => t.uid)).toEqual(many.slice(0, MAX_LISTED_TEAMS).map((w) => w.team))
          expect(capped.teams_truncated).toBe(true)
        }))

      it.effect("a TEAM header naming a team the principal is not in, or malformed, is a 403", () =>
        Effect.gen(function*() {
          const world = yield* seedWorld()
          const other = yield* seedWorld()
          const { token } = yield* principalWithToken(instanceAdmin(world), [{ team_uid: world.team, role: "admin" }])
          const swapped = [...world.team].map((c) => c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()).join("")
          for (
            const header of [
              other.team,
              uid<TeamUid>(),
              swapped,
              world.team.slice(1),
              `${world.team}A`,
              "not-a-team-uid",
              "empty-environment",
              "x".repeat(5000)
            ]
          ) {
            const refused = yield* failureOf(authenticate(token, header))
            expect(refused._tag).toBe("NotAuthorized")
            expect(refused.message).toContain("not a member")
            expect(refused.message.length).toBeLessThan(200)
          }
          expect((yield* authenticate(token, world.team)).team_uid).toBe(world.team)
        }))

      it.effect("an unknown token is a 401, whatever it looks like", () =>
        Effect.gen(function*() {
          const world = yield* seedWorld()
          const { token } = yield* principalWithToken(instanceAdmin(world), [{ team_uid: world.team, role: "member" }])
          const stored = yield* hashToken(token)
          for (
            const unknown of [
              "",
              "ar_",
              yield* generateToken,
              `${token}x`,
              token.slice(0, -1),
              token.toUpperCase(),
              `Bearer ${token}`,
              ` ${token}`,
              stored,
              `ar_${stored}`,
              token.replace(/^ar_/, "xx_")
            ]
          ) {
            const refused = yield* failureOf(authenticate(unknown, world.team))
            expect(refused._tag).toBe("AuthenticationRequired")
          }
          expect((yield* authenticate(token)).team_uid).toBe(world.team)
        }))

      it.effect("revocation is immediate: the next authentication is a 401, the principal's other tokens still work", () =>
        Effect.gen(function*() {
          const world = yield* seedWorld()
          const root = instanceAdmin(world)
          const { principal, token, tokenId } = yield* principalWithToken(root, [{ team_uid: world.team, role: "member" }])
          const second = yield* createToken(root, principal.uid, { name: "second" })
          expect((yield* authenticate(token)).principal_uid).toBe(principal.uid)

          yield* revokeToken(root, tokenId)
          expect((yield* failureOf(authenticate(token)))._tag).toBe("AuthenticationRequired")
          expect((yield* failureOf(authenticate(token, world.team)))._tag).toBe("AuthenticationRequired")
          expect((yield* authenticate(second.token)).principal_uid).toBe(principal.uid)

          const record = Option.getOrThrow(yield* tokenRecord(token))
          expect(record.revoked_at).not.toBeNull()
          yield* revokeToken(root, tokenId)
          expect(Option.getOrThrow(yield* tokenRecord(token)).revoked_at).toEqual(record.revoked_at)
          expect((yield* failureOf(authenticate(token)))._tag).toBe("AuthenticationRequired")
          expect(Option.getOrThrow(yield* tokenRecord(second.token)).revoked_at).toBeNull()
        }))

      it.effect("a new token is shown once in the answer and stored only as its SHA-256, with its name", () =>
        Effect.gen(function*() {
          const world = yield* seedWorld()
          const root = instanceAdmin(world)
          const { principal } = yield* principalWithToken(root, [{ team_uid: world.team, role: "member" }])
          const named = yield* createToken(root, principal.uid, { name: "  ci runner  " })
          const unnamed = yield* createToken(root, principal.uid, { name: "   " })
          const nulled = yield* createToken(root, principal.uid, { name: null })
          const tokens = [named, unnamed, nulled]
          for (const created of tokens) {
            expect(created.token).toMatch(TOKEN_FORM)
            expect(isUid22(created.token_id)).toBe(true)
            expect((yield* authenticate(created.token)).principal_uid).toBe(principal.uid)
            const record = Option.getOrThrow(yield* tokenRecord(created.token))
            expect(record.token_id).toBe(created.token_id)
            expect(record.principal_uid).toBe(principal.uid)
            expect(record.token_hash).toBe(yield* hashToken(created.token))
            expect(record.token_hash).toMatch(/^[0-9a-f]{64}$/)
            expect(JSON.stringify(record)).not.toContain(created.token.slice(3))
          }
          expect(new Set(tokens.map((t) => t.token)).size).toBe(3)
          expect(new Set(tokens.map((t) => t.token_id)).size).toBe(3)
          expect(Option.getOrThrow(yield* tokenRecord(named.token)).name).toBe("ci runner")
          expect(Option.getOrThrow(yield* tokenRecord(unnamed.token)).name).toBeNull()
          expect(Option.getOrThrow(yield* tokenRecord(nulled.token)).name).toBeNull()
          const byToken = yield* Effect.flatMap(IdentityStore, (store) => store.findTokenRecord(named.token))
          expect(byToken).toEqual(Option.none())
        }))

      it.effect("instance_admin comes from the principal: an instance administrator's token opens the admin API", () =>
        Effect.gen(function*() {
          const world = yield* seedWorld()
          const operator = yield* principalWithToken(instanceAdmin(world), [{ team_uid: world.team, role: "viewer" }], {
            instanceAdmin: true,
            name: "Operator"
          })
          const viewer = yield* authenticate(operator.token)
          expect(viewer).toEqual({
            principal_uid: operator.principal.uid,
            team_uid: world.team,
            role: "viewer",
            instance_admin: true
          })
          const team = yield* createTeam(viewer, { name: "made by the operator" })
          expect((yield* listTeams(viewer)).teams.map((t) => t.uid)).toContain(team.uid)

          const plain = yield* principalWithToken(viewer, [{ team_uid: world.team, role: "admin" }])
          const teamAdmin = yield* authenticate(plain.token)
          expect(teamAdmin.instance_admin).toBe(false)
          expect((yield* failureOf(listTeams(teamAdmin)))._tag).toBe("NotAuthorized")
        }))

      it.effect("a principal with no membership: refused (403), unless an instance admin, who acts in no team", () =>
        Effect.gen(function*() {
          const world = yield* seedWorld()
          const root = instanceAdmin(world)
          const store = yield* IdentityStore
          const loner = (admin: boolean) =>
            Effect.gen(function*() {
              const principal = new Principal({
                uid: uid<PrincipalUid>(),
                type: "service_account",
                display_name: "no team",
                instance_admin: admin,
                memberships: [],
                created_at: T0
              })
              yield* store.createPrincipal(principal)
              return { principal, token: (yield* createToken(root, principal.uid)).token }
            })
          const plain = yield* loner(false)
          expect((yield* failureOf(authenticate(plain.token)))._tag).toBe("NotAuthorized")
          expect((yield* failureOf(authenticate(plain.token, world.team)))._tag).toBe("NotAuthorized")

          const admin = yield* loner(true)
          const viewer = yield* authenticate(admin.token)
          expect(viewer).toEqual({
            principal_uid: admin.principal.uid,
            team_uid: "",
            role: "viewer",
            instance_admin: true
          })
          expect((yield* listTeams(viewer)).teams.map((t) => t.uid)).toContain(world.team)
          expect((yield* failureOf(authenticate(admin.token, world.team)))._tag).toBe("NotAuthorized")
        }))

      it.effect("createTeam: features on and max_concurrent_runs 8 by default, name trimmed, duplicates allowed, listed", () =>
        Effect.gen(function*() {
          const world = yield* seedWorld()
          const root = instanceAdmin(world)
          const label = `Zeta ${world.team}`
          const team = yield* createTeam(root, { name: `  ${label}  `, max_concurrent_runs: 2 })
          expect(isUid22(team.uid)).toBe(true)
          expect(team.name).toBe(label)
          expect(team.features).toEqual({ metadata_filtering: true, scheduled_agents: true })
          expect(team.max_concurrent_runs).toBe(DEFAULT_MAX_CONCURRENT_RUNS)
          expect(DEFAULT_MAX_CONCURRENT_RUNS).toBe(8)
          expect(yield* storedTeam(team.uid)).toEqual(team)

          const twin = yield* createTeam(root, { name: label })
          expect(twin.uid).not.toBe(team.uid)
          const alpha = yield* createTeam(root, { name: `Alpha ${world.team}` })

          const listed = (yield* listTeams(root)).teams
          const mine = listed.filter((t) => t.name.endsWith(world.team))
          expect(mine.map((t) => t.name)).toEqual([alpha.name, label, label, `team ${world.team}`])
          expect(mine.filter((t) => t.name === label).map((t) => t.uid).sort()).toEqual([team.uid, twin.uid].sort())
          expect(listed.find((t) => t.uid === team.uid)).toEqual(team)
          expect(listed.map((t) => t.uid)).toContain(world.team)
          const names = listed.map((t) => t.name)
          expect(names).toEqual([...names].sort())
        }))

      it.effect("createTeam rejects a missing, blank or non-string name with a 400 naming it, creating nothing", () =>
        Effect.gen(function*() {
          const world = yield* seedWorld()
          const root = instanceAdmin(world)
          const before = (yield* listTeams(root)).teams.length
          for (const body of [{}, { name: "" }, { name: "   " }, { name: 7 }, { name: null }]) {
            const error = yield* failureOf(createTeam(root, body))
            expect(error._tag).toBe("InvalidRequest")
            expect((error as InvalidRequest).field).toBe("name")
          }
          expect((yield* failureOf(createTeam(root, "not an object")))._tag).toBe("InvalidRequest")
          expect((yield* listTeams(root)).teams.length).toBe(before)
        }))

      it.effect("updateTeam changes only the given keys, and keeps them", () =>
        Effect.gen(function*() {
          const world = yield* seedWorld()
          const root = instanceAdmin(world)
          const team = yield* createTeam(root, { name: "patched" })

          const noSchedules = yield* updateTeam(root, team.uid, { features: { scheduled_agents: false } })
          expect(noSchedules).toEqual({ ...team, features: { metadata_filtering: true, scheduled_agents: false } })
          expect(yield* storedTeam(team.uid)).toEqual(noSchedules)

          const capped = yield* updateTeam(root, team.uid, { max_concurrent_runs: 3 })
          expect(capped.features).toEqual({ metadata_filtering: true, scheduled_agents: false })
          expect(capped.max_concurrent_runs).toBe(3)

          const noFiltering = yield* updateTeam(root, team.uid, {
            features: { metadata_filtering: false, scheduled_agents: null }
          })
          expect(noFiltering.features).toEqual({ metadata_filtering: false, scheduled_agents: false })
          expect(noFiltering.max_concurrent_runs).toBe(3)

          expect(yield* updateTeam(root, team.uid, {})).toEqual(noFiltering)
          expect(yield* updateTeam(root, team.uid, { features: null, max_concurrent_runs: null, name: "x" }))
            .toEqual(noFiltering)

          const both = yield* updateTeam(root, team.uid, {
            features: { metadata_filtering: true, scheduled_agents: true },
            max_concurrent_runs: 10_000
          })
          expect(both).toEqual({ ...team, max_concurrent_runs: 10_000 })
          expect(yield* storedTeam(team.uid)).toEqual(both)
          expect((yield* storedTeam(world.team)).max_concurrent_runs).toBe(8)
        }))

      it.effect("updateTeam: an unknown team is a 404; a value out of range or of the wrong type is a 400 naming it", () =>
        Effect.gen(function*() {
          const world = yield* seedWorld()
          const root = instanceAdmin(world)
          const missing = uid<TeamUid>()
          const notFound = yield* failureOf(updateTeam(root, missing, { max_concurrent_runs: 2 }))
          expect(notFound._tag).toBe("ResourceNotFound")
          expect((notFound as ResourceNotFound).resource).toBe("team")
          expect(notFound.message).toContain(missing)

          for (
            const [body, field] of [
              [{ max_concurrent_runs: 0 }, "max_concurrent_runs"],
              [{ max_concurrent_runs: 1.5 }, "max_concurrent_runs"],
              [{ max_concurrent_runs: 10_001 }, "max_concurrent_runs"],
              [{ max_concurrent_runs: "4" }, "max_concurrent_runs"],
              [{ features: { scheduled_agents: "no" } }, "features.scheduled_agents"],
              [{ features: { metadata_filtering: 1 } }, "features.metadata_filtering"],
              [{ features: true }, "features"]
            ] as const
          ) {
            const error = yield* failureOf(updateTeam(root, world.team, body))
            expect(error._tag).toBe("InvalidRequest")
            expect((error as InvalidRequest).field).toBe(field)
            expect(error.message).toContain(field)
          }
          const team = yield* storedTeam(world.team)
          expect(team.max_concurrent_runs).toBe(8)
          expect(team.features).toEqual({ metadata_filtering: true, scheduled_agents: true })
        }))

      it.effect("createPrincipal stores the principal with its memberships in order; instance_admin defaults to false", () =>
        Effect.gen(function*() {
          const world = yield* seedWorld()
          const other = yield* seedWorld()
          const root = instanceAdmin(world)
          const created = yield* createPrincipal(root, {
            type: "service_account",
            display_name: "  CI bot  ",
            memberships: [{ team_uid: other.team, role: "viewer" }, { team_uid: world.team, role: "member" }]
          })
          expect(isUid22(created.uid)).toBe(true)
          expect(created.type).toBe("service_account")
          expect(created.display_name).toBe("CI bot")
          expect(created.instance_admin).toBe(false)
          expect(created.memberships).toEqual([
            { team_uid: other.team, role: "viewer" },
            { team_uid: world.team, role: "member" }
          ])
          const stored = Option.getOrThrow(yield* Effect.flatMap(IdentityStore, (s) => s.getPrincipal(created.uid)))
          expect(stored).toEqual(created)
          const withNull = yield* createPrincipal(root, {
            type: "user",
            display_name: "Nora",
            memberships: [{ team_uid: world.team, role: "admin" }],
            instance_admin: null
          })
          expect(withNull.instance_admin).toBe(false)
        }))

      it.effect("createPrincipal: a membership of an unknown team is a 400 naming memberships[i].team_uid, creating nothing", () =>
        Effect.gen(function*() {
          const world = yield* seedWorld()
          const root = instanceAdmin(world)
          const before = yield* countPrincipals
          const missing = uid<TeamUid>()
          const error = yield* failureOf(createPrincipal(root, {
            type: "user",
            display_name: "Nobody",
            memberships: [{ team_uid: world.team, role: "member" }, { team_uid: missing, role: "viewer" }]
          }))
          expect(error._tag).toBe("InvalidRequest")
          expect((error as InvalidRequest).field).toBe("memberships[1].team_uid")
          expect(error.message).toContain("memberships[1].team_uid")
          expect(error.message).toContain(missing)
          expect(yield* countPrincipals).toBe(before)
        }))

      it.effect("createPrincipal rejects a malformed body with a 400 naming the field", () =>
        Effect.gen(function*() {
          const world = yield* seedWorld()
          const root = instanceAdmin(world)
          const before = yield* countPrincipals
          const valid = { type: "user", display_name: "Valid", memberships: [{ team_uid: world.team, role: "member" }] }
          for (
            const [body, field] of [
              [{ ...valid, type: "robot" }, "type"],
              [{ ...valid, type: undefined }, "type"],
              [{ ...valid, display_name: "  " }, "display_name"],
              [{ ...valid, display_name: undefined }, "display_name"],
              [{ ...valid, memberships: [] }, "memberships"],
              [{ ...valid, memberships: undefined }, "memberships"],
              [{ ...valid, memberships: [valid.memberships[0], { team_uid: world.team, role: "viewer" }] }, "memberships"],
              [{ ...valid, memberships: [{ team_uid: world.team, role: "owner" }] }, "memberships[0].role"],
              [{ ...valid, memberships: [{ team_uid: "not-a-uid", role: "member" }] }, "memberships[0].team_uid"],
              [{ ...valid, instance_admin: "yes" }, "instance_admin"]
            ] as const
          ) {
            const error = yield* failureOf(createPrincipal(root, body))
            expect(error._tag).toBe("InvalidRequest")
            expect((error as InvalidRequest).field).toBe(field)
          }
          expect(yield* countPrincipals).toBe(before)
        }))

      it.effect("createToken for an unknown principal and revokeToken of an unknown token are 404s", () =>
        Effect.gen(function*() {
          const world = yield* seedWorld()
          const root = instanceAdmin(world)
          const principal = uid<PrincipalUid>()
          const noPrincipal = yield* failureOf(createToken(root, principal, { name: "x" }))
          expect(noPrincipal._tag).toBe("ResourceNotFound")
          expect((noPrincipal as ResourceNotFound).resource).toBe("principal")
          expect(noPrincipal.message).toContain(principal)
          const token = uid<TokenId>()
          const noToken = yield* failureOf(revokeToken(root, token))
          expect(noToken._tag).toBe("ResourceNotFound")
          expect((noToken as ResourceNotFound).resource).toBe("token")
          expect(noToken.message).toContain(token)
          const badName = yield* failureOf(createToken(root, world.alice.principal_uid, { name: 12 }))
          expect((badName as InvalidRequest).field).toBe("name")
        }))

      it.effect("every admin operation refuses a caller that is not an instance admin (403), whatever its team role", () =>
        Effect.gen(function*() {
          const world = yield* seedWorld()
          const root = instanceAdmin(world)
          const target = yield* principalWithToken(root, [{ team_uid: world.team, role: "member" }])
          const before = { teams: (yield* listTeams(root)).teams, principals: yield* countPrincipals }
          const unknownTeam = uid<TeamUid>()
          for (const caller of [world.admin, world.alice, world.viewer]) {
            const refusals: ReadonlyArray<Effect.Effect<unknown, { readonly _tag: string; readonly message: string }, Identities | Tokens>> = [
              createTeam(caller, { name: "not allowed" }),
              listTeams(caller),
              updateTeam(caller, world.team, { max_concurrent_runs: 1, features: { scheduled_agents: false } }),
              updateTeam(caller, unknownTeam, { max_concurrent_runs: 1 }),
              createPrincipal(caller, {
                type: "user",
                display_name: "Sneaky",
                memberships: [{ team_uid: world.team, role: "admin" }],
                instance_admin: true
              }),
              createToken(caller, target.principal.uid),
              createToken(caller, caller.principal_uid),
              revokeToken(caller, target.tokenId),
              revokeToken(caller, uid<TokenId>())
            ]
            for (const refusal of refusals) {
              const error = yield* failureOf(refusal)
              expect(error._tag).toBe("NotAuthorized")
              expect(error.message).toContain("instance administrators")
            }
          }
          expect((yield* listTeams(root)).teams).toEqual(before.teams)
          expect(yield* countPrincipals).toBe(before.principals)
          expect((yield* authenticate(target.token)).principal_uid).toBe(target.principal.uid)
          expect(Option.getOrThrow(yield* tokenRecord(target.token)).revoked_at).toBeNull()
        }))
    })

    describe("bootstrap (each test on a new empty database)", () => {
      /** Runs a test on a database of its own: bootstrap depends on whether any principal exists. */
      const onFreshDatabase = <A, E2>(self: Effect.Effect<A, E2, Identities | Tokens | Stores>) =>
        Effect.gen(function*() {
          expect(yield* countPrincipals).toBe(0)
          return yield* self
        }).pipe(Effect.provide(services))

      /** The bootstrap administrator behind a token: the principal, its viewer and its team. */
      const administratorOf = (token: string) =>
        Effect.gen(function*() {
          const viewer = yield* authenticate(token)
          const principal = Option.getOrThrow(
            yield* Effect.flatMap(IdentityStore, (store) => store.getPrincipal(viewer.principal_uid))
          )
          return { viewer, principal, team: yield* storedTeam(viewer.team_uid) }
        })

      const expectBootstrapAdministrator = (token: string) =>
        Effect.gen(function*() {
          const admin = yield* administratorOf(token)
          expect(admin.viewer.role).toBe("admin")
          expect(admin.viewer.instance_admin).toBe(true)
          expect(admin.principal.display_name).toBe(BOOTSTRAP_ADMIN_NAME)
          expect(admin.principal.type).toBe("user")
          expect(admin.principal.memberships).toEqual([{ team_uid: admin.team.uid, role: "admin" }])
          expect(admin.team.name).toBe(BOOTSTRAP_TEAM_NAME)
          expect(admin.team.features).toEqual({ metadata_filtering: true, scheduled_agents: true })
          expect(admin.team.max_concurrent_runs).toBe(8)
          return admin
        })

      it.live("no principals and no configured token: a token is generated once; later starts find it (Existing)", () =>
        onFreshDatabase(Effect.gen(function*() {
          const outcome = yield* bootstrap()
          if (outcome._tag !== "Generated") return expect.fail(`expected Generated, got ${outcome._tag}`)
          expect(outcome.token).toMatch(TOKEN_FORM)
          const admin = yield* expectBootstrapAdministrator(outcome.token)
          expect((yield* listTeams(admin.viewer)).teams).toEqual([admin.team])

          expect(yield* bootstrap()).toEqual({ _tag: "Existing" })
          expect(yield* bootstrap()).toEqual({ _tag: "Existing" })
          expect(yield* countPrincipals).toBe(1)
          expect((yield* listTeams(admin.viewer)).teams).toEqual([admin.team])
          expect((yield* administratorOf(outcome.token)).principal).toEqual(admin.principal)
        })), 60_000)

      it.live("a configured token on an empty database makes the administrator; restarts with it change nothing", () =>
        onFreshDatabase(Effect.gen(function*() {
          const token = yield* generateToken
          expect(yield* bootstrap(token)).toEqual({ _tag: "Configured" })
          const admin = yield* expectBootstrapAdministrator(token)
          const record = Option.getOrThrow(yield* tokenRecord(token))

          expect(yield* bootstrap(token)).toEqual({ _tag: "Configured" })
          expect(yield* bootstrap(token)).toEqual({ _tag: "Configured" })
          expect(yield* countPrincipals).toBe(1)
          expect((yield* listTeams(admin.viewer)).teams).toEqual([admin.team])
          // The same token (its last use, written in the background, aside).
          expect({ ...Option.getOrThrow(yield* tokenRecord(token)), last_used_at: null }).toEqual({ ...record, last_used_at: null })
          expect(yield* administratorOf(token)).toEqual(admin)

          expect(yield* bootstrap()).toEqual({ _tag: "Existing" })
          expect(yield* countPrincipals).toBe(1)
        })), 60_000)

      it.live("a changed configured token is added to the same administrator; the earlier one stays valid", () =>
        onFreshDatabase(Effect.gen(function*() {
          const first = yield* generateToken
          const second = yield* generateToken
          expect(yield* bootstrap(first)).toEqual({ _tag: "Configured" })
          expect(yield* bootstrap(second)).toEqual({ _tag: "Configured" })
          const before = yield* expectBootstrapAdministrator(first)
          expect((yield* expectBootstrapAdministrator(second)).viewer).toEqual(before.viewer)
          expect(yield* countPrincipals).toBe(1)
          expect((yield* listTeams(before.viewer)).teams).toHaveLength(1)

          const custom = `ar_${"Operator.chosen/token+".repeat(2)}`
          expect(yield* bootstrap(custom)).toEqual({ _tag: "Configured" })
          expect((yield* authenticate(custom)).principal_uid).toBe(before.viewer.principal_uid)
        })), 60_000)

      it.live("a configured token after a generated one goes to the generated administrator", () =>
        onFreshDatabase(Effect.gen(function*() {
          const generated = yield* bootstrap()
          if (generated._tag !== "Generated") return expect.fail(`expected Generated, got ${generated._tag}`)
          const configured = yield* generateToken
          expect(yield* bootstrap(configured)).toEqual({ _tag: "Configured" })
          const admin = yield* expectBootstrapAdministrator(generated.token)
          expect((yield* authenticate(configured)).principal_uid).toBe(admin.principal.uid)
          expect(yield* countPrincipals).toBe(1)
          expect((yield* listTeams(admin.viewer)).teams).toEqual([admin.team])
        })), 60_000)

      it.live("principals without an administrator: nothing is generated (Existing); a configured token creates one", () =>
        onFreshDatabase(Effect.gen(function*() {
          const world = yield* seedWorld()
          expect(yield* bootstrap()).toEqual({ _tag: "Existing" })
          expect(yield* countPrincipals).toBe(5)
          const token = yield* generateToken
          expect(yield* bootstrap(token)).toEqual({ _tag: "Configured" })
          const admin = yield* expectBootstrapAdministrator(token)
          expect(admin.team.uid).not.toBe(world.team)
          expect(yield* countPrincipals).toBe(6)
          expect((yield* listTeams(admin.viewer)).teams.map((t) => t.uid).sort()).toEqual([world.team, admin.team.uid].sort())
          expect(yield* bootstrap(token)).toEqual({ _tag: "Configured" })
          expect(yield* countPrincipals).toBe(6)
        })), 60_000)

      it.live("a configured token that could not work is refused naming the variable: malformed, revoked, not an admin's", () =>
        onFreshDatabase(Effect.gen(function*() {
          const expectRefused = (token: string, problem: string) =>
            Effect.gen(function*() {
              const error = yield* failureOf(bootstrap(token))
              expect(error._tag).toBe("InvalidRequest")
              expect((error as InvalidRequest).field).toBe(ADMIN_TOKEN_VARIABLE)
              expect(error.message).toContain(problem)
              if (token.length > 3) expect(error.message).not.toContain(token)
            })
          const malformed = [
            "",
            "ar_",
            "ar_short",
            `ar_${"a".repeat(31)}`,
            "x".repeat(64),
            `AR_${"a".repeat(40)}`,
            `ar_${"a".repeat(20)} ${"b".repeat(20)}`,
            `ar_${"a".repeat(40)}\n`,
            `ar_${"é".repeat(40)}`
          ]
          for (const token of malformed) yield* expectRefused(token, "must be ar_")
          expect(yield* countPrincipals).toBe(0)

          const first = yield* generateToken
          expect(yield* bootstrap(first)).toEqual({ _tag: "Configured" })
          const admin = yield* authenticate(first)
          const revoked = Option.getOrThrow(yield* tokenRecord(first))
          yield* revokeToken(admin, revoked.token_id)
          yield* expectRefused(first, "revoked")
          expect((yield* failureOf(authenticate(first)))._tag).toBe("AuthenticationRequired")
          expect(Option.getOrThrow(yield* tokenRecord(first)).revoked_at).not.toBeNull()

          const second = yield* generateToken
          expect(yield* bootstrap(second)).toEqual({ _tag: "Configured" })
          const root = yield* authenticate(second)
          expect(root.principal_uid).toBe(admin.principal_uid)
          const member = yield* principalWithToken(root, [{ team_uid: root.team_uid, role: "member" }])
          yield* expectRefused(member.token, "not an instance administrator")
          const stillMember = yield* authenticate(member.token)
          expect(stillMember).toEqual({ ...root, principal_uid: member.principal.uid, role: "member", instance_admin: false })
          expect(yield* countPrincipals).toBe(2)

          const operator = yield* principalWithToken(root, [{ team_uid: root.team_uid, role: "viewer" }], {
            instanceAdmin: true
          })
          expect(yield* bootstrap(operator.token)).toEqual({ _tag: "Configured" })
          expect((yield* authenticate(operator.token)).principal_uid).toBe(operator.principal.uid)
          expect(yield* countPrincipals).toBe(3)
        })), 60_000)
    })
  })
}
