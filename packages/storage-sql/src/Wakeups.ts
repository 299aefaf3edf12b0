/**
 * A hint that a run may have become claimable. The SQLite adapter signals in process; the
 * PostgreSQL adapter sends NOTIFY (delivered at commit) and LISTENs, so every replica hears it.
 * Dispatchers also poll, so a lost hint only delays a claim.
 */
import type { Effect, Stream } from "effect"
import { Context } from "effect"
import type { SqlError } from "@effect/sql/SqlError"

export class Wakeups extends Context.Tag("@agent-runs/storage-sql/Wakeups")<Wakeups, {
  /** Signals that a run may be claimable (inside a transaction on PostgreSQL: sent at commit). */
  readonly notify: Effect.Effect<void, SqlError>
  /**
   * On PostgreSQL, `notify` as an SQL expression (`pg_notify(…)`), for a statement that signals as
   * it writes (sent when it commits); none where signals do not go through the database.
   */
  readonly notifyExpression: string | undefined
  /** Every signal, from this process or (PostgreSQL) any replica. */
  readonly signals: Stream.Stream<void, SqlError>
}>() {}
