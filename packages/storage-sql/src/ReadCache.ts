/**
 * What a replica has read recently of rows that requests read far more often than anyone changes
 * them: authenticated tokens by their hash, principals, teams (docs/reference/access.md, "Token
 * cache"), webhooks and the automations of a webhook (docs/webhooks.md). A bounded map kept in
 * memory, so that a request does not read them again; CachedReads.ts wires it to the changes.
 *
 * Decisions:
 * - An entry lives at most `ttlMs` (5 s by default): the backstop when a change's notification
 *   goes unheard. Changes themselves empty the whole cache (`invalidate`): they are rare (admin
 *   operations), and emptying everything cannot miss an entry a change touched.
 * - A lookup that started before a change must not store what it read: `generation` is taken
 *   before the read and `put` refuses an entry read under an older generation.
 * - A change made here is often part of a longer transaction (its audit entry) that commits after
 *   the store's write returns; on PostgreSQL a lookup meanwhile reads, on another connection, what
 *   was true before. So a change `hold`s the cache: nothing is stored for a TTL after it (lookups
 *   read the database, as without a cache), by which time the change has committed.
 * - At most `maxEntries` entries; when full, the oldest entry is dropped. Unknown keys (tokens,
 *   webhook uids) are never cached: each is a miss (a read), as without the cache, so a sender of
 *   made-up keys cannot evict real entries.
 */

import { Context } from "effect"

/** How long an entry lives and how many there may be. */
export interface ReadCacheSettings {
  readonly ttlMs: number
  readonly maxEntries: number
}

export const DEFAULT_READ_CACHE: ReadCacheSettings = { ttlMs: 5_000, maxEntries: 10_000 }

/** Other settings than the defaults (tests; a host that wants no cache sets `maxEntries: 0`). */
export class ReadCacheConfig extends Context.Tag("@agent-runs/storage-sql/ReadCacheConfig")<
  ReadCacheConfig,
  ReadCacheSettings
>() {}

interface Entry<A> {
  readonly value: A
  readonly id: string
  readonly storedAt: number
}

export interface ReadCache<A> {
  /** The entry of this hash, while younger than the TTL. */
  readonly get: (hash: string, now: number) => A | undefined
  /** The generation a lookup starts under (pass it to `put`). */
  readonly generation: () => number
  /** Stores what a lookup started under `generation` read, unless identities changed since. */
  readonly put: (hash: string, id: string, value: A, generation: number, now: number) => void
  /** Replaces the value of the entry with this id (its token's record changed in a way that grants nothing). */
  readonly update: (id: string, f: (value: A) => A) => void
  /** Drops every entry and refuses what lookups under earlier generations read. */
  readonly invalidate: () => void
  /** `invalidate`, and stores nothing until a TTL after `now` (a change is being written). */
  readonly hold: (now: number) => void
  /** How many entries there are. */
  readonly size: () => number
}

export const make = <A>(settings: ReadCacheSettings): ReadCache<A> => {
  const entries = new Map<string, Entry<A>>()
  const hashes = new Map<string, string>()
  let generation = 0
  let heldUntil = -Infinity
  const invalidate = () => {
    generation++
    entries.clear()
    hashes.clear()
  }
  const remove = (hash: string) => {
    const entry = entries.get(hash)
    if (entry === undefined) return
    entries.delete(hash)
    hashes.delete(entry.id)
  }
  return {
    get: (hash, now) => {
      const entry = entries.get(hash)
      if (entry === undefined) return undefined
      if (now - entry.storedAt < settings.ttlMs && now >= entry.storedAt) return entry.value
      remove(hash)
      return undefined
    },
    generation: () => generation,
    put: (hash, id, value, at, now) => {
      if (at !== generation || settings.maxEntries <= 0 || now < heldUntil) return
      remove(hash)
      while (entries.size >= settings.maxEntries) remove(entries.keys().next().value!)
      entries.set(hash, { value, id, storedAt: now })
      hashes.set(id, hash)
    },
    update: (id, f) => {
      const hash = hashes.get(id)
      const entry = hash === undefined ? undefined : entries.get(hash)
      if (hash !== undefined && entry !== undefined) entries.set(hash, { ...entry, value: f(entry.value) })
    },
    invalidate,
    hold: (now) => {
      heldUntil = now + settings.ttlMs
      invalidate()
    },
    size: () => entries.size
  }
}
