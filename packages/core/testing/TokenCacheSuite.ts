/**
 * Authentication with a cache of tokens (docs/reference/access.md, "Token cache"), attacked: a
 * token is authenticated (and so cached) on one replica, then revoked, its principal disabled or
 * deleted, its membership removed or its role lowered through another replica's services; the
 * first replica must refuse it, or grant only what is left, at once on one process and within
 * the change's notification across processes, far within the cache's TTL (`replicas` builds them
 * with a TTL of a minute). And the cache is real: a token revoked behind the stores' back (a
 * direct write) keeps working until its entry's TTL (`shortTtl`) passes, and no longer.
 *
 * `replicas(ttlMs)` builds the stores of two replicas with that TTL (one process: the same stores
 * twice) and `revokeBehind(tokenHash)`, which revokes a token in their storage without the stores.
 * Call `tokenCacheSuite(name, replicas)` inside a vitest file.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Either, Layer, Option, Schedule } from "effect"
import type { Scope } from "effect"
import type { Viewer } from "../src/domain/Access.js"
import { decodeRequest } from "../src/domain/Common.js"
import { IdsLive, type TokenId } from "../src/domain/Ids.js"
import { CreateTokenRequest, PatchPrincipalRequest, Team } from "../src/domain/Identity.js"
import { IdentityStore } from "../src/ports/IdentityStore.js"
import { Identities } from "../src/services/Identities.js"
import { Principals } from "../src/services/Principals.js"
import { TeamMembers } from "../src/services/TeamMembers.js"
import { hashToken, Tokens } from "../src/services/Tokens.js"
import type { Stores } from "./Stores.js"
import { seedWorld, type World } from "./World.js"

/** The cache's TTL in the tests of changes: a refusal within the wait below was a notification's doing. */
export const LONG_TTL_MS = 60_000
/** How long a change may take to reach the other replica (its notification), far below `LONG_TTL_MS`. */
const NOTIFIED_WITHIN = Duration.seconds(10)
/** The cache's TTL in the test of the TTL. */
export const SHORT_TTL_MS = 3_000

/** Two replicas' stores, and a write behind their back. */
export interface CacheReplicas {
  readonly stores: readonly [Context.Context<Stores>, Context.Context<Stores>]
  /** Revokes the token with this hash in storage without going through the stores. */
  readonly revokeBehind: (tokenHash: string) => Effect.Effect<void, unknown>
}

type Services = Identities | Tokens | Principals | TeamMembers

const servicesOf = (stores: Context.Context<Stores>) =>
  Layer.build(
    Layer.mergeAll(Identities.Default, Tokens.Default, Principals.Default, TeamMembers.Default).pipe(
      Layer.provideMerge(Layer.mergeAll(Layer.succeedContext(stores), IdsLive))
    )
  )

const decodeToken = decodeRequest(CreateTokenRequest)
const decodePatch = decodeRequest(PatchPrincipalRequest)

const root = (world: World): Viewer => ({ ...world.admin, instance_admin: true })

/** What authenticating `token` on a replica gives: the viewer, or the failure's tag. */
const authenticateOn = (replica: Context.Context<Services>, token: string, team?: string) =>
  Effect.flatMap(Context.get(replica, Identities).authenticate(token, team), (viewer) => Effect.succeed(viewer)).pipe(
    Effect.either,
    Effect.map(Either.mapLeft((e) => e._tag))
  )

/** Authenticates on `replica` until `done` holds (or fails after `NOTIFIED_WITHIN`). */
const eventually = (
  replica: Context.Context<Services>,
  token: string,
  done: (outcome: Either.Either<Viewer, string>) => boolean,
  team?: string
) =>
  authenticateOn(replica, token, team).pipe(
    Effect.filterOrFail(done, () => "not yet"),
    Effect.retry(Schedule.spaced("20 millis")),
    Effect.timeoutFail({ duration: NOTIFIED_WITHIN, onTimeout: () => new Error("the other replica still accepts the token") })
  )

/** `read` until its value satisfies `done` (or fails after `NOTIFIED_WITHIN`). */
const until = <A, E>(read: Effect.Effect<A, E>, done: (a: A) => boolean) =>
  read.pipe(
    Effect.filterOrFail(done, () => "not yet"),
    Effect.retry(Schedule.spaced("20 millis")),
    Effect.timeoutFail({ duration: NOTIFIED_WITHIN, onTimeout: () => new Error("the other replica still reads the old value") })
  )

export const tokenCacheSuite = <E>(
  name: string,
  replicas: (ttlMs: number) => Effect.Effect<CacheReplicas, E, Scope.Scope>
) =>
  describe(`token cache (${name})`, () => {
    /** Two replicas' services, a team, and a token of bob's authenticated (cached) on the second. */
    const setup = (ttlMs: number) =>
      Effect.gen(function*() {
        const { revokeBehind, stores: [first, second] } = yield* replicas(ttlMs)
        const changer = yield* servicesOf(first)
        const checker = yield* servicesOf(second)
        const world = yield* seedWorld().pipe(Effect.provide(first))
        const request = yield* decodeToken({})
        const { token, token_id } = yield* Context.get(changer, Tokens).create(root(world), world.bob.principal_uid, request)
        const cached = yield* authenticateOn(checker, token)
        expect(Either.getOrThrow(cached).role).toBe("member")
        return { changer, checker, world, token, tokenId: token_id as TokenId, revokeBehind, first, second }
      })

    it.scopedLive("a revoked token is refused by the replica that cached it", () =>
      Effect.gen(function*() {
        const { changer, checker, token, tokenId, world } = yield* setup(LONG_TTL_MS)
        yield* Context.get(changer, Tokens).revoke(root(world), tokenId)
        expect(yield* eventually(checker, token, Either.isLeft)).toEqual(Either.left("AuthenticationRequired"))
      }))

    it.scopedLive("a disabled or deleted principal's cached token is refused", () =>
      Effect.gen(function*() {
        const { changer, checker, token, world } = yield* setup(LONG_TTL_MS)
        const principals = Context.get(changer, Principals)
        yield* principals.update(root(world), world.bob.principal_uid, yield* decodePatch({ disabled: true }))
        expect(yield* eventually(checker, token, Either.isLeft)).toEqual(Either.left("AuthenticationRequired"))
        yield* principals.update(root(world), world.bob.principal_uid, yield* decodePatch({ disabled: false }))
        yield* eventually(checker, token, Either.isRight)
        yield* principals.remove(root(world), world.bob.principal_uid)
        expect(yield* eventually(checker, token, Either.isLeft)).toEqual(Either.left("AuthenticationRequired"))
      }))

    it.scopedLive("a lowered role and a removed membership take effect on the replica that cached the token", () =>
      Effect.gen(function*() {
        const { changer, checker, token, world } = yield* setup(LONG_TTL_MS)
        const members = Context.get(changer, TeamMembers)
        yield* members.setRole(root(world), world.team, world.bob.principal_uid, "viewer")
        const lowered = yield* eventually(checker, token, (o) => Either.isRight(o) && o.right.role === "viewer")
        expect(Either.getOrThrow(lowered).role).toBe("viewer")
        yield* members.remove(root(world), world.team, world.bob.principal_uid)
        expect(yield* eventually(checker, token, Either.isLeft, world.team)).toEqual(Either.left("NotAuthorized"))
      }))

    it.scopedLive("a principal's memberships and a team, cached on one replica, follow a change made through the other", () =>
      Effect.gen(function*() {
        const { changer, first, second, world } = yield* setup(LONG_TTL_MS)
        const reader = Context.get(second, IdentityStore)
        const roleOfBob = Effect.map(
          reader.getPrincipal(world.bob.principal_uid),
          (p) => Option.getOrThrow(p).memberships.find((m) => m.team_uid === world.team)?.role
        )
        const limitOfTeam = Effect.map(reader.getTeam(world.team), (t) => Option.getOrThrow(t).max_concurrent_runs)
        expect(yield* roleOfBob).toBe("member")
        const limit = yield* limitOfTeam
        yield* Context.get(changer, TeamMembers).setRole(root(world), world.team, world.bob.principal_uid, "viewer")
        yield* until(roleOfBob, (role) => role === "viewer")
        expect(yield* limitOfTeam).toBe(limit) // cached again, after the change above emptied the cache
        const team = Option.getOrThrow(yield* Context.get(first, IdentityStore).getTeam(world.team))
        yield* Context.get(first, IdentityStore).updateTeam(new Team({ ...team, max_concurrent_runs: limit + 1 }))
        yield* until(limitOfTeam, (n) => n === limit + 1)
      }))

    it.scopedLive("the cache answers without reading storage until its entry's TTL passes", () =>
      Effect.gen(function*() {
        const { checker, revokeBehind, token } = yield* setup(SHORT_TTL_MS)
        yield* revokeBehind(yield* hashToken(token))
        // Revoked in storage, but no store was told: the cached entry still answers.
        expect(Either.isRight(yield* authenticateOn(checker, token))).toBe(true)
        yield* Effect.sleep(Duration.millis(SHORT_TTL_MS + 100))
        expect(yield* authenticateOn(checker, token)).toEqual(Either.left("AuthenticationRequired"))
      }))
  })
