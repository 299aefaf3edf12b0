/**
 * Test fixtures shared by the application-service suites: a fresh team per test with one
 * principal of each role, seeded through the stores, and `failureOf` for effects that must fail.
 */
import { DateTime, Effect, Either } from "effect"
import type { Viewer } from "../src/domain/Access.js"
import type { PrincipalUid, TeamUid } from "../src/domain/Ids.js"
import { Principal, type Role, Team } from "../src/domain/Identity.js"
import { IdentityStore } from "../src/ports/IdentityStore.js"
import { uid } from "./RunStoreConformance.js"

/** The creation time of seeded teams and principals. */
export const T0 = DateTime.unsafeMake(Date.UTC(2026, 10, 1))

/** A team of its own for one test: an admin, two members and a viewer. */
export interface World {
  readonly team: TeamUid
  readonly admin: Viewer
  readonly alice: Viewer
  readonly bob: Viewer
  readonly viewer: Viewer
  /** A service account of the team, role member. */
  readonly robot: Viewer
}

export const viewerOf = (team: TeamUid, principal: PrincipalUid, role: Role): Viewer => ({
  principal_uid: principal,
  team_uid: team,
  role,
  instance_admin: false
})

export const seedWorld = (options: { readonly maxConcurrentRuns?: number; readonly metadataFiltering?: boolean } = {}) =>
  Effect.gen(function* () {
    const identities = yield* IdentityStore
    const team = uid<TeamUid>()
    yield* identities.createTeam(
      new Team({
        uid: team,
        name: `team ${team}`,
        features: { metadata_filtering: options.metadataFiltering ?? true, scheduled_agents: true },
        max_concurrent_runs: options.maxConcurrentRuns ?? 8,
        created_at: T0
      })
    )
    const member = (role: Role, name: string, type: "user" | "service_account" = "user") =>
      Effect.gen(function* () {
        const principal = uid<PrincipalUid>()
        yield* identities.createPrincipal(
          new Principal({
            uid: principal,
            type,
            display_name: name,
            instance_admin: false,
            memberships: [{ team_uid: team, role }],
            created_at: T0
          })
        )
        return viewerOf(team, principal, role)
      })
    return {
      team,
      admin: yield* member("admin", "Ada Admin"),
      alice: yield* member("member", "Alice"),
      bob: yield* member("member", "Bob"),
      viewer: yield* member("viewer", "Vic Viewer"),
      robot: yield* member("member", "Robot", "service_account")
    } satisfies World
  })

/** The failure of an effect that must fail (a success fails the test with a short message). */
export const failureOf = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<E, never, R> =>
  Effect.flatMap(
    Effect.either(self),
    Either.match({ onLeft: Effect.succeed, onRight: () => Effect.dieMessage("expected a failure, but it succeeded") })
  )

