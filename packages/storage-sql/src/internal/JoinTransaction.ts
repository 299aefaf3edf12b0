/**
 * A store's write in the caller's transaction when one is open, else in one of its own. A nested
 * `withTransaction` would add a `SAVEPOINT` (a statement, and its release) so that the inner write
 * could fail alone; the only caller that opens a transaction around a store's write (the audit
 * log's `recording`, which writes its entry with the change) lets every failure roll the whole
 * transaction back, so the savepoint buys nothing there. A write whose caller may catch its failure
 * and go on (a keyed create's `DuplicateKey`) keeps `withTransaction` instead.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"

export const joinTransaction = (sql: SqlClient.SqlClient) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(
    Effect.serviceOption(SqlClient.TransactionConnection),
    (open) => Option.isSome(open) ? effect : sql.withTransaction(effect)
  )
