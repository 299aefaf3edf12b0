/**
 * A signal that something replicas cache changed (ReadCache.ts): a token revoked, a principal
 * disabled or deleted, a role or a membership, a team, a webhook or an automation. Every replica's
 * caches drop what they hold. The PostgreSQL adapter sends `NOTIFY` (delivered at commit) and hears
 * every replica's on its wake-up connection; the SQLite adapter has no other replica to tell.
 */
import type { Effect, Stream } from "effect"
import { Context } from "effect"
import type { SqlError } from "@effect/sql/SqlError"

export class CacheChanges extends Context.Tag("@agent-runs/storage-sql/CacheChanges")<CacheChanges, {
  /** Tells every other replica that something cached changed (inside a transaction on PostgreSQL: sent at commit). */
  readonly publish: Effect.Effect<void, SqlError>
  /**
   * A signal per change any replica published (this one's included), and one whenever changes may
   * have gone unheard (the listening connection was lost and is back).
   */
  readonly signals: Stream.Stream<void>
}>() {}
