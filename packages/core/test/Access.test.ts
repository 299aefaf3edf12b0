import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import type { Owned, Viewer } from "../src/domain/Access.js"
import { canChange, canCreate, canManageFactory, canSee, scopeFor } from "../src/domain/Access.js"
import type { PrincipalUid, TeamUid } from "../src/domain/Ids.js"
import type { Role } from "../src/domain/Identity.js"

const teamA = "TeamAaaaaaaaaaaaaaaaaa" as TeamUid
const teamB = "TeamBbbbbbbbbbbbbbbbbb" as TeamUid
const alice = "Aliceaaaaaaaaaaaaaaaaa" as PrincipalUid
const bob = "Bobbbbbbbbbbbbbbbbbbbb" as PrincipalUid

const viewer = (principal_uid: PrincipalUid, team_uid: TeamUid, role: Role): Viewer => ({
  principal_uid,
  team_uid,
  role,
  instance_admin: false
})

describe("Access", () => {
  const aliceUserScoped: Owned = { team_uid: teamA, creator_uid: alice, scope: { type: "User", uid: alice } }
  const aliceTeamScoped: Owned = { team_uid: teamA, creator_uid: alice, scope: { type: "Team", uid: teamA } }

  it("User scope: the creator and team admins see it; other members do not", () => {
    expect(canSee(viewer(alice, teamA, "member"), aliceUserScoped)).toBe(true)
    expect(canSee(viewer(bob, teamA, "admin"), aliceUserScoped)).toBe(true)
    expect(canSee(viewer(bob, teamA, "member"), aliceUserScoped)).toBe(false)
    expect(canSee(viewer(bob, teamA, "viewer"), aliceUserScoped)).toBe(false)
  })

  it("Team scope: every member sees it; viewers may not change it", () => {
    expect(canSee(viewer(bob, teamA, "viewer"), aliceTeamScoped)).toBe(true)
    expect(canChange(viewer(bob, teamA, "viewer"), aliceTeamScoped)).toBe(false)
    expect(canChange(viewer(bob, teamA, "member"), aliceTeamScoped)).toBe(true)
  })

  it("team roles: only admins manage the factory; viewers create nothing", () => {
    expect(canManageFactory(viewer(alice, teamA, "admin"))).toBe(true)
    expect(canManageFactory(viewer(alice, teamA, "member"))).toBe(false)
    expect(canCreate(viewer(alice, teamA, "viewer"))).toBe(false)
    expect(canCreate(viewer(alice, teamA, "member"))).toBe(true)
  })

  it("scopeFor gives Team scope only with team: true", () => {
    expect(scopeFor(viewer(alice, teamA, "member"), true)).toEqual({ type: "Team", uid: teamA })
    expect(scopeFor(viewer(alice, teamA, "member"), undefined)).toEqual({ type: "User", uid: alice })
  })

  it.prop(
    "nothing of another team is ever visible or changeable, whatever the role and scope",
    [fc.constantFrom<Role>("admin", "member", "viewer"), fc.boolean(), fc.constantFrom(alice, bob)],
    ([role, teamScoped, who]) => {
      const owned: Owned = {
        team_uid: teamB,
        creator_uid: who,
        scope: teamScoped ? { type: "Team", uid: teamB } : { type: "User", uid: who }
      }
      const v = { ...viewer(who, teamA, role), instance_admin: true }
      expect(canSee(v, owned)).toBe(false)
      expect(canChange(v, owned)).toBe(false)
    },
    { fastCheck: { numRuns: 200 } }
  )
})
