/**
 * The storage ports on PostgreSQL: migrated at start, wake-ups through LISTEN/NOTIFY so that
 * several server replicas hear each other.
 */
import { PgClient } from "@effect/sql-pg"
import { Migrations, StorageKey, StorageSql, Wakeups } from "@agent-runs/storage-sql"
import type { Redacted} from "effect";
import { Effect, Layer, Stream } from "effect"

/** The channel every replica listens on. */
export const WAKEUP_CHANNEL = "agent_runs_wakeup"

export interface PgStorageOptions {
  /** A `postgres://` connection URL. */
  readonly url: Redacted.Redacted<string>
  /** The 32-byte key that encrypts stored secrets. */
  readonly secretKey: Redacted.Redacted<Uint8Array>
  /** Connections in the pool (default 10). */
  readonly maxConnections?: number
}

const wakeups = Layer.effect(
  Wakeups.Wakeups,
  Effect.gen(function* () {
    const pg = yield* PgClient.PgClient
    return {
      // Not `pg.notify`: it sends `NOTIFY channel, $1`, which PostgreSQL refuses (NOTIFY takes no
      // parameters). `pg_notify` through the client also joins the caller's transaction, so the
      // signal goes out at commit; the payload is not empty because `pg.listen` drops empty ones.
      notify: Effect.asVoid(pg`SELECT pg_notify(${WAKEUP_CHANNEL}, 'run')`),
      signals: pg.listen(WAKEUP_CHANNEL).pipe(Stream.as(undefined))
    }
  })
)

/** Every store of @agent-runs/core on one PostgreSQL database. */
export const layer = (options: PgStorageOptions) => {
  const client = PgClient.layer({
    url: options.url,
    maxConnections: options.maxConnections ?? 10
  })
  const support = Layer.mergeAll(
    Layer.effectDiscard(Migrations.migrate),
    wakeups,
    Layer.succeed(StorageKey.StorageKey, { key: options.secretKey })
  ).pipe(Layer.provideMerge(client))
  return StorageSql.layer.pipe(Layer.provideMerge(support))
}
