import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import type { Owned, Viewer } from "../src/domain/Access.js"
import {
  canChange,
  canCreate,
  canManageFactory,
  canSee,
  leastRole,
  runTokenRole,
  scopeFor,
  shapersToRecord
} from "../src/domain/Access.js"
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

describe("who shaped a run decides its token's role", () => {
  const RANK: Record<Role, number> = { viewer: 0, member: 1, admin: 2 }
  const role = fc.constantFrom<Role>("admin", "member", "viewer")
  const principal = fc.constantFrom(alice, bob, "Carolccccccccccccccccc" as PrincipalUid)
  const shaper = fc.record({ uid: principal, role })

  it.prop(
    "leastRole: undefined when any is (or none is given), else a role no input is below",
    [fc.array(fc.option(role, { nil: undefined }), { maxLength: 6 })],
    ([roles]) => {
      const least = leastRole(roles)
      if (roles.length === 0 || roles.includes(undefined)) {
        expect(least).toBeUndefined()
        return
      }
      expect(roles).toContain(least)
      for (const r of roles) expect(RANK[least!]).toBeLessThanOrEqual(RANK[r!])
    }
  )

  it.prop(
    "runTokenRole: never above any shaper's role then or now, nor the executor's or creator's now; none once one left",
    [principal, principal, fc.array(shaper, { maxLength: 5 }), fc.dictionary(principal, fc.option(role, { nil: undefined }))],
    ([executor, creator, shapers, now]) => {
      const roleNow = (uid: PrincipalUid) => now[uid]
      const token = runTokenRole(executor, creator, shapers, roleNow)
      const involved = [executor, creator, ...shapers.map((s) => s.uid)]
      if (involved.some((uid) => roleNow(uid) === undefined)) {
        expect(token).toBeUndefined()
        return
      }
      for (const uid of involved) expect(RANK[token!]).toBeLessThanOrEqual(RANK[roleNow(uid)!])
      for (const s of shapers) expect(RANK[token!]).toBeLessThanOrEqual(RANK[s.role])
      // And it is one of them: nothing is taken away beyond the weakest.
      expect([...involved.map(roleNow), ...shapers.map((s) => s.role)]).toContain(token)
    }
  )

  it("a member's follow-up lowers an admin's run to a member's; an outsider's edit leaves it no rights", () => {
    const roles: Record<string, Role> = { [alice]: "admin", [bob]: "member" }
    const now = (uid: PrincipalUid) => roles[uid]
    expect(runTokenRole(alice, alice, [], now)).toBe("admin")
    expect(runTokenRole(alice, alice, [{ uid: bob, role: "member" }], now)).toBe("member")
    // An admin's token that acted for a member's run shaped it as a member.
    expect(runTokenRole(alice, alice, [{ uid: alice, role: "member" }], now)).toBe("member")
    expect(runTokenRole(alice, alice, [{ uid: "Outsiderooooooooooooo0" as PrincipalUid, role: "admin" }], now)).toBeUndefined()
  })

  it.prop(
    "shapersToRecord: each principal once with its least role; the creator's own role now left out",
    [shaper, role, fc.array(shaper, { maxLength: 6 })],
    ([creator, creatorRole, shapers]) => {
      const recorded = shapersToRecord(creator, creatorRole, shapers)
      expect(new Set(recorded.map((s) => s.uid)).size).toBe(recorded.length)
      const all = [creator, ...shapers]
      for (const uid of new Set(all.map((s) => s.uid))) {
        const least = leastRole(all.filter((s) => s.uid === uid).map((s) => s.role))!
        const entry = recorded.find((s) => s.uid === uid)
        if (uid === creator.uid && least === creatorRole) expect(entry).toBeUndefined()
        else expect(entry).toEqual({ uid, role: least })
      }
    }
  )
})
