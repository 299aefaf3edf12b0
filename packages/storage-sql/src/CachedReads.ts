/**
 * A store's reads answered from its ReadCaches, and its writes that empty them: here at once, and
 * on every replica through `CacheChanges`.
 *
 * Decisions:
 * - A write `hold`s the caches before it runs (ReadCache.ts: its transaction may commit later),
 *   publishes the change, and empties them again once it ran, failed or not.
 * - Any replica's change, and any moment changes may have gone unheard, empties every cache of the
 *   store: changes are rare (admin operations), and emptying all cannot miss an entry one touched.
 */
import { Clock, Effect, Option, Stream } from "effect"
import type { Scope } from "effect"
import type { SqlError } from "@effect/sql/SqlError"
import { CacheChanges } from "./CacheChanges.js"
import { DEFAULT_READ_CACHE, type ReadCache, ReadCacheConfig, type ReadCacheSettings } from "./ReadCache.js"

/** The caches' settings: `ReadCacheConfig` when the host gives it, else the defaults. */
export const cacheSettings: Effect.Effect<ReadCacheSettings> = Effect.map(
  Effect.serviceOption(ReadCacheConfig),
  Option.getOrElse(() => DEFAULT_READ_CACHE)
)

/**
 * `read` of `key` answered from `from` while its entry is fresh (no read, no span); what it finds
 * is kept under the id `idOf` gives it (ReadCache.ts). What it does not find is not kept.
 */
export const cachedRead = <A, E, R>(
  from: ReadCache<A>,
  key: string,
  read: Effect.Effect<Option.Option<A>, E, R>,
  idOf: (found: A) => string = () => key
): Effect.Effect<Option.Option<A>, E, R> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const cached = from.get(key, now)
    if (cached !== undefined) return Effect.succeed(Option.some(cached))
    const generation = from.generation()
    return Effect.tap(read, (found) => {
      if (Option.isSome(found)) from.put(key, idOf(found.value), found.value, generation, now)
    })
  })

/** How a store's writes keep its caches true. */
export interface Invalidation {
  /** `write`, after which what the caches hold may differ (see the decisions above). */
  readonly changing: <A, E, R>(write: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>
}

/** Empties `caches` whenever any replica signals a change (for the scope's life); gives `changing`. */
export const invalidation = (
  caches: ReadonlyArray<Pick<ReadCache<unknown>, "invalidate" | "hold">>
): Effect.Effect<Invalidation, never, CacheChanges | Scope.Scope> =>
  Effect.gen(function* () {
    const changes = yield* CacheChanges
    const invalidate = () => caches.forEach((c) => c.invalidate())
    yield* changes.signals.pipe(Stream.runForEach(() => Effect.sync(invalidate)), Effect.forkScoped)
    return {
      changing: (write) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => caches.forEach((c) => c.hold(now)))).pipe(
          Effect.zipRight(write),
          Effect.tap(() => changes.publish),
          Effect.ensuring(Effect.sync(invalidate))
        )
    }
  })
