/**
 * A signal that identities changed (a token revoked, a principal disabled or deleted, a role or a
 * membership changed): every replica's cache of authenticated tokens (IdentityStoreSql.ts) drops
 * what it holds. The PostgreSQL adapter sends `NOTIFY` (delivered at commit) and hears every
 * replica's on its wake-up connection; the SQLite adapter has no other replica to tell.
 */
import type { Effect, Stream } from "effect"
import { Context } from "effect"
import type { SqlError } from "@effect/sql/SqlError"

export class IdentityChanges extends Context.Tag("@agent-runs/storage-sql/IdentityChanges")<IdentityChanges, {
  /** Tells every other replica that identities changed (inside a transaction on PostgreSQL: sent at commit). */
  readonly publish: Effect.Effect<void, SqlError>
  /**
   * A signal per change any replica published (this one's included), and one whenever changes may
   * have gone unheard (the listening connection was lost and is back).
   */
  readonly signals: Stream.Stream<void>
}>() {}
