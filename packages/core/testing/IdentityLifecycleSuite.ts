/**
 * The identity lifecycle over a real storage adapter (docs/reference/access.md): tokens that expire
 * or are limited to a team and a role, their last use, disabling and deleting principals, and a
 * team's admins managing its members, service accounts and their tokens, with the attacks a team
 * admin or a member could try. Each test makes teams of its own; the instance-administrator tests
 * run on a database of their own. Call `identityLifecycleSuite(name, layer)` inside a vitest file.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { DateTime, Effect, Layer, Option } from "effect"
import type { Viewer } from "../src/domain/Access.js"
import { decodeRequest } from "../src/domain/Common.js"
import type { InvalidRequest } from "../src/domain/Errors.js"
import { IdsLive, type PrincipalUid, type TeamUid, type TokenId } from "../src/domain/Ids.js"
import {
  CreatePrincipalRequest,
  CreateServiceAccountRequest,
  CreateTokenRequest,
  PatchPrincipalRequest,
  type Role,
  TokenRecord
} from "../src/domain/Identity.js"
import { AuditLog } from "../src/ports/AuditLog.js"
import { IdentityStore } from "../src/ports/IdentityStore.js"
import { Identities, memberViewer } from "../src/services/Identities.js"
import { Principals } from "../src/services/Principals.js"
import { TeamMembers } from "../src/services/TeamMembers.js"
import { generateToken, hashToken, Tokens } from "../src/services/Tokens.js"
import { uid } from "./RunStoreConformance.js"
import type { Stores } from "./Stores.js"
import { failureOf, seedWorld, type World } from "./World.js"

const decodeToken = decodeRequest(CreateTokenRequest)
const decodePatch = decodeRequest(PatchPrincipalRequest)
const decodeServiceAccount = decodeRequest(CreateServiceAccountRequest)

/** An operation a test expects to fail. */
type Attempt = Effect.Effect<unknown, { readonly _tag: string }, Identities | Tokens | Principals | TeamMembers | Stores>

const instanceAdmin = (world: World): Viewer => ({ ...world.admin, instance_admin: true })

const createToken = (viewer: Viewer, principal: PrincipalUid, body: unknown = {}) =>
  Effect.flatMap(decodeToken(body), (request) => Effect.flatMap(Tokens, (t) => t.create(viewer, principal, request)))
const createTeamToken = (viewer: Viewer, principal: PrincipalUid, body: unknown = {}) =>
  Effect.flatMap(decodeToken(body), (request) => Effect.flatMap(Tokens, (t) => t.createInTeam(viewer, principal, request)))
const patchPrincipal = (viewer: Viewer, principal: PrincipalUid, body: unknown) =>
  Effect.flatMap(decodePatch(body), (request) => Effect.flatMap(Principals, (p) => p.update(viewer, principal, request)))
const createServiceAccount = (viewer: Viewer, body: unknown) =>
  Effect.flatMap(decodeServiceAccount(body), (request) => Effect.flatMap(TeamMembers, (m) => m.createServiceAccount(viewer, request)))
const setRole = (viewer: Viewer, team: TeamUid, principal: PrincipalUid, role: Role) =>
  Effect.flatMap(TeamMembers, (m) => m.setRole(viewer, team, principal, role))
const authenticate = (token: string, team?: string) => Effect.flatMap(Identities, (i) => i.authenticate(token, team))
const storedPrincipal = (principal: PrincipalUid) =>
  Effect.flatMap(IdentityStore, (store) => store.getPrincipal(principal)).pipe(Effect.map(Option.getOrThrow))
const storedToken = (token: TokenId) => Effect.flatMap(IdentityStore, (store) => store.getToken(token)).pipe(Effect.map(Option.getOrThrow))
const entriesAbout = (id: string) =>
  Effect.flatMap(AuditLog, (log) => log.list({ resource_id: id, limit: 100, order: "oldest_first", cursor: undefined }))

/** A second team whose admin is `world`'s alice too (so a limited token has a team to be kept out of). */
const secondTeamFor = (world: World, role: Role) =>
  Effect.gen(function*() {
    const other = yield* seedWorld()
    yield* setRole(instanceAdmin(world), other.team, world.alice.principal_uid, role)
    return other
  })

/** Registers the identity lifecycle suite against one storage adapter's layer. */
export const identityLifecycleSuite = <E>(name: string, storage: Layer.Layer<Stores, E>): void => {
  const services = Layer.mergeAll(Identities.Default, Tokens.Default, Principals.Default, TeamMembers.Default).pipe(
    Layer.provideMerge(Layer.mergeAll(storage, IdsLive))
  )

  describe(`identity lifecycle (${name})`, () => {
    layer(services, { excludeTestServices: true, timeout: "60 seconds" })("tokens and principals", (it) => {
      it.effect("a token limited to a team acts there only; one limited to a role acts with at most it; neither opens the admin API", () =>
        Effect.gen(function*() {
          const world = yield* seedWorld()
          const root = instanceAdmin(world)
          const other = yield* secondTeamFor(world, "admin")
          const limited = yield* createToken(root, world.alice.principal_uid, { team_uid: other.team, max_role: "viewer" })
          const inOther = yield* authenticate(limited.token)
          expect([inOther.team_uid, inOther.role, inOther.instance_admin]).toEqual([other.team, "viewer", false])
          expect((yield* authenticate(limited.token, ` ${other.team} `)).team_uid).toBe(other.team)
          const elsewhere = yield* failureOf(authenticate(limited.token, world.team))
          expect([elsewhere._tag, elsewhere.message]).toEqual(["NotAuthorized", `this token acts only in team "${other.team}"`])
          // An instance administrator's limited token is not an instance administrator's.
          yield* patchPrincipal(root, world.alice.principal_uid, { instance_admin: true })
          const unlimited = yield* createToken(root, world.alice.principal_uid)
          expect((yield* authenticate(unlimited.token)).instance_admin).toBe(true)
          const roleOnly = yield* createToken(root, world.alice.principal_uid, { max_role: "admin" })
          expect((yield* authenticate(roleOnly.token)).instance_admin).toBe(false)
          const me = yield* Effect.flatMap(Identities, (i) => Effect.flatMap(authenticate(limited.token), i.me))
          expect(me.teams.map((t) => [t.uid, t.role])).toEqual([[other.team, "viewer"]])
          expect(me.token).toEqual({ token_id: limited.token_id, name: null, expires_at: null, team_uid: other.team, max_role: "viewer" })
        }))

      it.effect("expiry: a past expires_at is refused naming it; an expired token is a 401 saying so; last use is recorded", () =>
        Effect.gen(function*() {
          const world = yield* seedWorld()
          const root = instanceAdmin(world)
          const past = yield* failureOf(createToken(root, world.bob.principal_uid, { expires_at: "2020-01-01T00:00:00Z" }))
          expect((past as InvalidRequest).field).toBe("expires_at")
          const outsider = yield* seedWorld()
          const foreign = yield* failureOf(createToken(root, world.bob.principal_uid, { team_uid: outsider.team }))
          expect((foreign as InvalidRequest).field).toBe("team_uid")
          const soon = new Date(Date.now() + 86_400_000).toISOString()
          const expiring = yield* createToken(root, world.bob.principal_uid, { name: "laptop", expires_at: soon })
          expect((yield* authenticate(expiring.token)).principal_uid).toBe(world.bob.principal_uid)
          yield* Effect.sleep("50 millis") // the last use is written in the background
          const record = yield* storedToken(expiring.token_id)
          expect(record.expires_at?.toJSON()).toBe(soon)
          expect(record.last_used_at).not.toBeNull()
          // A token whose time has come (stored directly: the API refuses a past expiry).
          const token = yield* generateToken
          yield* Effect.flatMap(IdentityStore, (store) =>
            Effect.flatMap(hashToken(token), (hash) =>
              store.createToken(new TokenRecord({
                token_id: uid<TokenId>(),
                principal_uid: world.bob.principal_uid,
                name: null,
                token_hash: hash,
                created_at: DateTime.unsafeMake(Date.now() - 120_000),
                revoked_at: null,
                expires_at: DateTime.unsafeMake(Date.now() - 60_000)
              }))))
          const expired = yield* failureOf(authenticate(token))
          expect(expired._tag).toBe("AuthenticationRequired")
          expect(expired.message).toMatch(/^the token expired at \d{4}-/)
          const listed = yield* Effect.flatMap(Tokens, (t) => t.list(root, world.bob.principal_uid))
          expect(listed.tokens.map((t) => t.token_id)).toContain(expiring.token_id)
          expect(JSON.stringify(listed)).not.toContain("token_hash")
        }))

      it.effect("disabling stops a principal's tokens and the work done as it at once; enabling restores them; audited", () =>
        Effect.gen(function*() {
          const world = yield* seedWorld()
          const root = instanceAdmin(world)
          const { token } = yield* createToken(root, world.bob.principal_uid)
          const disabled = yield* patchPrincipal(root, world.bob.principal_uid, { disabled: true })
          expect(disabled.disabled_at).not.toBeNull()
          expect((yield* failureOf(authenticate(token))).message).toBe("the token's principal is disabled")
          expect(memberViewer(yield* storedPrincipal(world.bob.principal_uid), world.team)).toBeUndefined()
          yield* patchPrincipal(root, world.bob.principal_uid, { disabled: false, display_name: " Robert " })
          expect((yield* authenticate(token)).display_name).toBe("Robert")
          const actions = (yield* entriesAbout(world.bob.principal_uid)).map((e) => [e.action, e.outcome])
          expect(actions).toEqual([["principal.update", "succeeded"], ["principal.update", "succeeded"]])
        }))

      it.effect("deleting revokes every token and removes the memberships; the name stays for runs and the log; then a 404", () =>
        Effect.gen(function*() {
          const world = yield* seedWorld()
          const root = instanceAdmin(world)
          const first = yield* createToken(root, world.bob.principal_uid)
          const second = yield* createToken(root, world.bob.principal_uid, { name: "ci" })
          yield* Effect.flatMap(Principals, (p) => p.remove(root, world.bob.principal_uid))
          for (const token of [first.token, second.token]) expect((yield* failureOf(authenticate(token)))._tag).toBe("AuthenticationRequired")
          expect((yield* storedToken(second.token_id)).revoked_at).not.toBeNull()
          const tombstone = yield* storedPrincipal(world.bob.principal_uid)
          expect([tombstone.display_name, tombstone.memberships, tombstone.deleted_at !== null]).toEqual(["Bob", [], true])
          const lookups: ReadonlyArray<Attempt> = [
            Effect.flatMap(Principals, (p) => p.get(root, world.bob.principal_uid)),
            patchPrincipal(root, world.bob.principal_uid, { disabled: false }),
            createToken(root, world.bob.principal_uid),
            setRole(root, world.team, world.bob.principal_uid, "member")
          ]
          for (const lookup of lookups) expect((yield* failureOf(lookup))._tag).toBe("ResourceNotFound")
          const page = yield* Effect.flatMap(Principals, (p) => p.list(root, { team_uid: world.team, after: undefined, limit: 100 }))
          expect(page.principals.map((p) => p.display_name).sort()).toEqual(["Ada Admin", "Alice", "Robot", "Vic Viewer"])
          const entries = (yield* entriesAbout(world.bob.principal_uid)).map((e) => [e.action, e.outcome])
          expect(entries).toEqual([
            ["principal.delete", "succeeded"],
            ["principal.update", "denied"],
            ["membership.set", "denied"]
          ])
        }))

      it.effect("principals page in uid order with a cursor", () =>
        Effect.gen(function*() {
          const world = yield* seedWorld()
          const root = instanceAdmin(world)
          const list = (after: PrincipalUid | undefined) =>
            Effect.flatMap(Principals, (p) => p.list(root, { team_uid: world.team, after, limit: 2 }))
          const first = yield* list(undefined)
          const second = yield* list(first.next_cursor as PrincipalUid)
          const third = yield* list(second.next_cursor as PrincipalUid)
          const uids = [...first.principals, ...second.principals, ...third.principals].map((p) => p.uid)
          expect(uids).toEqual([world.admin, world.alice, world.bob, world.viewer, world.robot].map((v) => v.principal_uid).sort())
          expect(third.next_cursor).toBeNull()
        }))
    })

    layer(services, { excludeTestServices: true, timeout: "60 seconds" })("a team's admins", (it) => {
      it.effect("a team admin adds and changes members, makes service accounts and their tokens, without an instance administrator", () =>
        Effect.gen(function*() {
          const world = yield* seedWorld()
          const outsider = (yield* seedWorld()).alice
          yield* setRole(world.admin, world.team, outsider.principal_uid, "viewer")
          yield* setRole(world.admin, world.team, world.alice.principal_uid, "admin")
          const robot = yield* createServiceAccount(world.admin, { display_name: "deploy-bot", role: "member" })
          expect(robot.memberships).toEqual([{ team_uid: world.team, role: "member" }])
          const issued = yield* createTeamToken(world.admin, robot.uid, { name: "deploy", max_role: "viewer" })
          const asRobot = yield* authenticate(issued.token)
          expect([asRobot.team_uid, asRobot.role, asRobot.instance_admin]).toEqual([world.team, "viewer", false])
          const listed = yield* Effect.flatMap(Tokens, (t) => t.listInTeam(world.admin, robot.uid))
          expect(listed.tokens.map((t) => [t.token_id, t.team_uid])).toEqual([[issued.token_id, world.team]])
          yield* Effect.flatMap(Tokens, (t) => t.revokeInTeam(world.admin, issued.token_id))
          expect((yield* failureOf(authenticate(issued.token)))._tag).toBe("AuthenticationRequired")
          const members = yield* Effect.flatMap(TeamMembers, (m) => m.list(world.admin, world.team, { after: undefined, limit: 100 }))
          const roles = Object.fromEntries(members.members.map((m) => [m.uid, m.role]))
          expect([roles[outsider.principal_uid], roles[world.alice.principal_uid], roles[robot.uid]]).toEqual(["viewer", "admin", "member"])
          yield* Effect.flatMap(TeamMembers, (m) => m.remove(world.admin, world.team, outsider.principal_uid))
          yield* Effect.flatMap(TeamMembers, (m) => m.deleteServiceAccount(world.admin, robot.uid))
          const kinds = (yield* entriesAbout(robot.uid)).map((e) => [e.action, e.team_uid])
          expect(kinds).toEqual([["principal.create", world.team], ["principal.delete", world.team]])
        }))

      it.effect("attack: a team admin reaches no other team, grants no instance administration, and a member manages nothing", () =>
        Effect.gen(function*() {
          const world = yield* seedWorld()
          const other = yield* seedWorld()
          const refusals: ReadonlyArray<Attempt> = [
            // another team's members, by naming it
            setRole(world.admin, other.team, world.admin.principal_uid, "admin"),
            setRole(world.admin, other.team, other.alice.principal_uid, "viewer"),
            Effect.flatMap(TeamMembers, (m) => m.remove(world.admin, other.team, other.admin.principal_uid)),
            Effect.flatMap(TeamMembers, (m) => m.list(world.admin, other.team, { after: undefined, limit: 10 })),
            // instance administration
            patchPrincipal(world.admin, world.admin.principal_uid, { instance_admin: true }),
            createToken(world.admin, world.robot.principal_uid),
            // a member, a viewer, an admin's token limited to member, an agent's run token
            setRole(world.alice, world.team, world.alice.principal_uid, "admin"),
            createServiceAccount(world.viewer, { display_name: "mine", role: "viewer" }),
            createServiceAccount({ ...world.admin, role: "member" }, { display_name: "mine", role: "member" }),
            setRole({ ...world.admin, acting_run_id: "019a6b2e-7c4d-7f00-8a00-000000000001" as never }, world.team, world.bob.principal_uid, "admin")
          ]
          for (const refusal of refusals) expect((yield* failureOf(refusal))._tag).toBe("NotAuthorized")
          expect((yield* storedPrincipal(other.alice.principal_uid)).memberships).toEqual([{ team_uid: other.team, role: "member" }])
          expect((yield* storedPrincipal(world.admin.principal_uid)).instance_admin).toBe(false)
        }))

      it.effect("attack: a team admin's tokens are for the team's own service accounts only, and act in the team only", () =>
        Effect.gen(function*() {
          const world = yield* seedWorld()
          const other = yield* seedWorld()
          const root = instanceAdmin(other)
          const elsewhere = yield* failureOf(createTeamToken(world.admin, world.robot.principal_uid, { team_uid: other.team }))
          expect((elsewhere as InvalidRequest).field).toBe("team_uid")
          const { token, token_id } = yield* createTeamToken(world.admin, world.robot.principal_uid)
          expect((yield* authenticate(token)).team_uid).toBe(world.team)
          // The robot becomes an admin of another team too (an instance administrator made it so):
          // the token made before still acts in the first team only; no new one is made for it.
          yield* setRole(root, other.team, world.robot.principal_uid, "admin")
          expect((yield* failureOf(authenticate(token, other.team)))._tag).toBe("NotAuthorized")
          // Not a shared or another team's service account, nor a user, nor another team's token.
          const theirs = yield* createTeamToken(other.admin, other.robot.principal_uid)
          const attempts: ReadonlyArray<Attempt> = [
            createTeamToken(world.admin, world.robot.principal_uid),
            createTeamToken(world.admin, other.robot.principal_uid),
            createTeamToken(world.admin, world.alice.principal_uid),
            Effect.flatMap(Tokens, (t) => t.listInTeam(world.admin, other.robot.principal_uid)),
            Effect.flatMap(Tokens, (t) => t.revokeInTeam(world.admin, theirs.token_id)),
            Effect.flatMap(Tokens, (t) => t.revokeInTeam(other.admin, token_id))
          ]
          for (const attempt of attempts) expect((yield* failureOf(attempt))._tag).toBe("ResourceNotFound")
          expect((yield* authenticate(theirs.token)).team_uid).toBe(other.team)
          // A service account in another team too is deleted by an instance administrator only.
          const deletion = yield* failureOf(Effect.flatMap(TeamMembers, (m) => m.deleteServiceAccount(world.admin, world.robot.principal_uid)))
          expect(deletion._tag).toBe("Conflict")
        }))

      it.effect("attack: a team admin neither takes over another team's service account nor deletes an instance administrator", () =>
        Effect.gen(function*() {
          const world = yield* seedWorld()
          const other = yield* seedWorld()
          const root = instanceAdmin(other)
          const adopt = yield* failureOf(setRole(world.admin, world.team, other.robot.principal_uid, "admin"))
          expect(adopt._tag).toBe("NotAuthorized")
          expect((yield* storedPrincipal(other.robot.principal_uid)).memberships).toEqual([{ team_uid: other.team, role: "member" }])
          // An instance administrator that is a service account of this team only.
          yield* patchPrincipal(root, world.robot.principal_uid, { instance_admin: true })
          const deletion = yield* failureOf(Effect.flatMap(TeamMembers, (m) => m.deleteServiceAccount(world.admin, world.robot.principal_uid)))
          expect(deletion._tag).toBe("ResourceNotFound")
          expect((yield* storedPrincipal(world.robot.principal_uid)).deleted_at).toBeNull()
          expect((yield* failureOf(createTeamToken(world.admin, world.robot.principal_uid)))._tag).toBe("ResourceNotFound")
          // A user of another team may be added (it is then in both).
          yield* setRole(world.admin, world.team, other.alice.principal_uid, "viewer")
        }))

      it.effect("a team keeps an admin: demoting or removing the last one is a 409, changing nothing", () =>
        Effect.gen(function*() {
          const world = yield* seedWorld()
          const demote = yield* failureOf(setRole(world.admin, world.team, world.admin.principal_uid, "member"))
          expect(demote._tag).toBe("Conflict")
          const leave = yield* failureOf(Effect.flatMap(TeamMembers, (m) => m.remove(world.admin, world.team, world.admin.principal_uid)))
          expect(leave._tag).toBe("Conflict")
          expect((yield* storedPrincipal(world.admin.principal_uid)).memberships).toEqual([{ team_uid: world.team, role: "admin" }])
          yield* setRole(world.admin, world.team, world.alice.principal_uid, "admin")
          yield* setRole(world.admin, world.team, world.admin.principal_uid, "member")
          expect((yield* storedPrincipal(world.admin.principal_uid)).memberships).toEqual([{ team_uid: world.team, role: "member" }])
        }))
    })

    it.live("the instance keeps an active instance administrator: disabling, demoting or deleting the last one is a 409", () =>
      Effect.gen(function*() {
        const outcome = yield* Effect.flatMap(Identities, (i) => i.bootstrap(Option.none()))
        if (outcome._tag !== "Generated") return expect.fail(`expected Generated, got ${outcome._tag}`)
        const root = yield* authenticate(outcome.token)
        const attempts: ReadonlyArray<Attempt> = [
          patchPrincipal(root, root.principal_uid, { disabled: true }),
          patchPrincipal(root, root.principal_uid, { instance_admin: false }),
          Effect.flatMap(Principals, (p) => p.remove(root, root.principal_uid))
        ]
        for (const attempt of attempts) expect((yield* failureOf(attempt))._tag).toBe("Conflict")
        const request = yield* decodeRequest(CreatePrincipalRequest)({
          type: "user",
          display_name: "Second",
          memberships: [{ team_uid: root.team_uid, role: "admin" }],
          instance_admin: true
        })
        const second = yield* Effect.flatMap(Identities, (i) => i.createPrincipal(root, request))
        yield* patchPrincipal(root, root.principal_uid, { instance_admin: false })
        expect((yield* authenticate(outcome.token)).instance_admin).toBe(false)
        expect((yield* storedPrincipal(second.uid)).instance_admin).toBe(true)
      }).pipe(Effect.provide(services)), 60_000)
  })
}
