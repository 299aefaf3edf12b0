import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { IdsLive, type TeamUid } from "../src/domain/Ids.js"
import { Principal } from "../src/domain/Identity.js"
import { displayNameOf, mappedRoles, parseGroupRoles, type VerifiedClaims, verifiedEmail } from "../src/domain/SignIn.js"
import { IdentityStore } from "../src/ports/IdentityStore.js"
import { SignIn, SignInSettingsTag } from "../src/services/SignIn.js"
import { memoryStorage } from "../testing/index.js"
import { seedWorld } from "../testing/World.js"

const A = "AAAAAAAAAAAAAAAAAAAAAA" as TeamUid
const B = "BBBBBBBBBBBBBBBBBBBBBB" as TeamUid

const claims = (overrides: Partial<VerifiedClaims> = {}): VerifiedClaims => ({
  issuer: "http://127.0.0.1:1",
  subject: "sub-1",
  email: "Someone@Example.com",
  email_verified: true,
  name: undefined,
  groups: undefined,
  ...overrides
})

describe("sign-in, the pure part", () => {
  it("maps groups to the highest role per named team, and no membership where no group of the user maps", () => {
    const mapping = [
      { group: "devs", team_uid: A, role: "member" as const },
      { group: "leads", team_uid: A, role: "admin" as const },
      { group: "auditors", team_uid: B, role: "viewer" as const }
    ]
    expect([...mappedRoles(["devs", "leads"], mapping)]).toEqual([[A, "admin"], [B, undefined]])
    expect([...mappedRoles(["auditors", "devs"], mapping)]).toEqual([[A, "member"], [B, "viewer"]])
    expect([...mappedRoles([], mapping)]).toEqual([[A, undefined], [B, undefined]])
  })

  it("parses group=team_uid:role entries, and names a bad one", () => {
    expect(parseGroupRoles(`devs=${A}:member, leads=${A}:admin`)).toEqual({
      mapping: [{ group: "devs", team_uid: A, role: "member" }, { group: "leads", team_uid: A, role: "admin" }]
    })
    expect(parseGroupRoles("")).toEqual({ mapping: [] })
    expect(parseGroupRoles(`devs=${A}:owner`)).toEqual({ problem: expect.stringContaining(`"devs=${A}:owner"`) })
  })

  it("matches by email only when it is verified; names a new user after its name, email or subject", () => {
    expect(verifiedEmail(claims())).toBe("someone@example.com")
    expect(verifiedEmail(claims({ email_verified: false }))).toBeUndefined()
    expect(displayNameOf(claims({ name: " Ada " }))).toBe("Ada")
    expect(displayNameOf(claims())).toBe("Someone@Example.com")
    expect(displayNameOf(claims({ email: undefined }))).toBe("sub-1")
  })
})

describe("sign-in, the service (memory)", () => {
  it.effect("the groups set the mapped teams' memberships at each sign-in; other teams are left alone", () =>
    Effect.gen(function*() {
      const mapped = yield* seedWorld()
      const other = yield* seedWorld()
      const settings = {
        sessionHours: 1,
        createUsers: true,
        groupRoles: [{ group: "devs", team_uid: mapped.team, role: "member" as const }, { group: "leads", team_uid: mapped.team, role: "admin" as const }]
      }
      const signIn = (groups: ReadonlyArray<string> | undefined) =>
        Effect.flatMap(SignIn, (s) => s.signIn(claims({ groups }), "CLI", undefined)).pipe(
          Effect.provide(SignIn.Default),
          Effect.provide(Layer.succeed(SignInSettingsTag, settings))
        )
      const first = yield* signIn(["leads", "devs"])
      expect(first.principal.memberships).toEqual([{ team_uid: mapped.team, role: "admin" }])
      // An admin of another team adds it there; the next sign-in leaves that membership alone.
      yield* Effect.flatMap(IdentityStore, (store) => store.setMembership(first.principal.uid, other.team, "viewer"))
      const second = yield* signIn(["devs"])
      expect(second.principal.uid).toBe(first.principal.uid)
      expect(second.principal.memberships).toEqual([{ team_uid: mapped.team, role: "member" }, { team_uid: other.team, role: "viewer" }])
      const third = yield* signIn([])
      expect(third.principal.memberships).toEqual([{ team_uid: other.team, role: "viewer" }])
      const withoutClaim = yield* signIn(undefined)
      expect(withoutClaim.principal.memberships).toEqual([{ team_uid: other.team, role: "viewer" }])
      const stored = yield* Effect.flatMap(IdentityStore, (store) => store.getPrincipal(first.principal.uid))
      expect(Option.getOrThrow(stored).email).toBe("someone@example.com")
    }).pipe(Effect.provide(Layer.mergeAll(memoryStorage, IdsLive))))

  it.effect("attack: a verified email never links an instance administrator or a service account; the last admin of a mapped team stays", () =>
    Effect.gen(function*() {
      const world = yield* seedWorld()
      const store = yield* IdentityStore
      const settings = { sessionHours: 1, createUsers: true, groupRoles: [{ group: "devs", team_uid: world.team, role: "member" as const }] }
      const signIn = (subject: string, email: string, groups?: ReadonlyArray<string>) =>
        Effect.flatMap(SignIn, (s) => s.signIn(claims({ subject, email, groups }), "dashboard", undefined)).pipe(
          Effect.provide(SignIn.Default),
          Effect.provide(Layer.succeed(SignInSettingsTag, settings))
        )
      const admin = Option.getOrThrow(yield* store.getPrincipal(world.admin.principal_uid))
      const root = new Principal({ ...admin, uid: "RootRootRootRootRootRo" as never, display_name: "Root", instance_admin: true, email: "root@example.com", memberships: [] })
      yield* store.createPrincipal(root)
      const robot = new Principal({ ...admin, uid: "BotBotBotBotBotBotBotB" as never, type: "service_account", display_name: "Bot", email: "bot@example.com", memberships: [] })
      yield* store.createPrincipal(robot)
      for (const [subject, email, target] of [["x1", "root@example.com", root.uid], ["x2", "bot@example.com", robot.uid]] as const) {
        const session = yield* signIn(subject, email)
        expect(session.principal.uid).not.toBe(target)
        expect(session.principal.instance_admin).toBe(false)
        expect(session.principal.memberships).toEqual([])
      }
      // The team's only admin signs in without the mapped group: it stays the team's admin.
      yield* store.updatePrincipal(admin.uid, { display_name: admin.display_name, instance_admin: false, disabled_at: null })
      yield* Effect.flatMap(IdentityStore, (s) => s.linkSubject(admin.uid, "http://127.0.0.1:1 ada"))
      const kept = yield* signIn("ada", "ada@example.com", [])
      expect(kept.principal.memberships).toEqual([{ team_uid: world.team, role: "admin" }])
    }).pipe(Effect.provide(Layer.mergeAll(memoryStorage, IdsLive))))
})
