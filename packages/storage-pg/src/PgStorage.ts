/**
 * The storage ports on PostgreSQL: migrated at start, wake-ups through LISTEN/NOTIFY so that
 * several server replicas hear each other.
 */
import { PgClient } from "@effect/sql-pg"
import { Migrations, StorageKey, StorageSql, Wakeups } from "@agent-runs/storage-sql"
import type { SqlClient } from "@effect/sql"
import { Effect, Layer, Redacted, Stream } from "effect"
import type * as Pg from "pg"

/** The channel every replica listens on. */
export const WAKEUP_CHANNEL = "agent_runs_wakeup"

export interface PgStorageOptions {
  /** A `postgres://` connection URL. */
  readonly url: Redacted.Redacted<string> | string
  /** The 32-byte key that encrypts stored secrets (the service's `secretKey`). */
  readonly secretKey: StorageKey.SecretKey
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

/** Every store of @agent-runs/core over a PostgreSQL client: migrated first, wake-ups beside. */
const over = <E>(client: Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, E>, secretKey: StorageKey.SecretKey) => {
  const support = Layer.mergeAll(
    Layer.effectDiscard(Migrations.migrate),
    wakeups,
    StorageKey.layer(secretKey)
  ).pipe(Layer.provideMerge(client))
  return StorageSql.layer.pipe(Layer.provideMerge(support))
}

/** Every store of @agent-runs/core on one PostgreSQL database, through a pool of its own. */
export const layer = (options: PgStorageOptions) =>
  over(PgClient.layer({ url: Redacted.isRedacted(options.url) ? options.url : Redacted.make(options.url), maxConnections: options.maxConnections ?? 10 }), options.secretKey)

export interface PgStoragePoolOptions {
  /** A `pg` pool the host already has; the host ends it (after the service stops). */
  readonly pool: Pg.Pool
  /** The 32-byte key that encrypts stored secrets (the service's `secretKey`). */
  readonly secretKey: StorageKey.SecretKey
}

/**
 * Every store of @agent-runs/core over a host's own `pg` pool: the service shares its connections
 * (and holds one more for LISTEN) and never ends it. Its tables are created in the pool's database
 * (`search_path`) on start, as with `layer`.
 */
export const layerFromPool = (options: PgStoragePoolOptions) =>
  over(PgClient.layerFromPool({ acquire: Effect.succeed(options.pool) }), options.secretKey)
