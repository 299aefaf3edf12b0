/**
 * The storage ports on PostgreSQL: migrated at start, wake-ups through LISTEN/NOTIFY so that
 * several server replicas hear each other (PgWakeups.ts).
 */
import { PgClient } from "@effect/sql-pg"
import { type CacheChanges, Migrations, Reader, StorageKey, StorageSql, type Wakeups } from "@agent-runs/storage-sql"
import type { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import * as Reactivity from "@effect/experimental/Reactivity"
import { Clock, Duration, Effect, Layer, Redacted } from "effect"
import * as Pg from "pg"
import * as PgWakeups from "./PgWakeups.js"

/** The channel every replica listens on. */
export const WAKEUP_CHANNEL = PgWakeups.WAKEUP_CHANNEL

export interface PgStorageOptions {
  /** A `postgres://` connection URL. */
  readonly url: Redacted.Redacted<string> | string
  /** The 32-byte key that encrypts stored secrets (the service's `secretKey`). */
  readonly secretKey: StorageKey.SecretKey
  /** Keys that open what they sealed but never seal, while keys are rotated (docs/operations.md). */
  readonly otherSecretKeys?: ReadonlyArray<StorageKey.SecretKey> | undefined
  /** Connections in the pool (default 10). */
  readonly maxConnections?: number
  /** How long the first connection at start may take before start-up fails (default 10 s). */
  readonly connectTimeout?: Duration.DurationInput
}

/** Every store of @agent-runs/core over a PostgreSQL client: migrated first, wake-ups beside. */
const over = <E>(
  client: Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, E>,
  secretKey: StorageKey.SecretKey,
  otherSecretKeys: ReadonlyArray<StorageKey.SecretKey> | undefined,
  listener: () => Pg.Client
) => {
  const wakeups: Layer.Layer<Wakeups.Wakeups | CacheChanges.CacheChanges, never, SqlClient.SqlClient> = PgWakeups.layer(
    listener
  )
  const support = Layer.mergeAll(
    Layer.effectDiscard(Migrations.migrate),
    Reader.sameClient,
    wakeups,
    StorageKey.layer(secretKey, otherSecretKeys)
  ).pipe(Layer.provideMerge(client))
  return StorageSql.layer.pipe(Layer.provideMerge(support))
}

/**
 * Fails unless PostgreSQL accepts a connection within `timeout`: a pool's first query waits as long
 * as the server stays silent (its connection timeout would also cut short waits for a busy pool's
 * connections), so a throwaway client with a timeout tries first.
 */
const reachable = (url: Redacted.Redacted<string>, timeout: Duration.DurationInput) =>
  Effect.gen(function* () {
    const started = yield* Clock.currentTimeMillis
    yield* PgClient.make({ url, maxConnections: 1, connectTimeout: timeout }).pipe(
      Effect.scoped,
      Effect.provide(Reactivity.layer),
      // Timed out: `pg` then says "Connection terminated unexpectedly"; say what happened instead.
      Effect.catchAll((error) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.fail(
            now - started >= Duration.toMillis(timeout) - 100
              ? new SqlError({
                cause: new Error(`no answer within ${Duration.format(timeout)}`),
                message: "PgClient: Connection timed out"
              })
              : error
          ))
      )
    )
  })

/** Every store of @agent-runs/core on one PostgreSQL database, through a pool of its own. */
export const layer = (options: PgStorageOptions) => {
  const url = Redacted.isRedacted(options.url) ? options.url : Redacted.make(options.url)
  const client = PgClient.layer({ url, maxConnections: options.maxConnections ?? 10 }).pipe(
    Layer.provide(Layer.effectDiscard(reachable(url, options.connectTimeout ?? Duration.seconds(10))))
  )
  // TCP keep-alive on the LISTEN connection: a silently dead one would leave identity changes and
  // wake-ups unheard without an error (PgWakeups.ts notices a lost connection by its events).
  return over(client, options.secretKey, options.otherSecretKeys, () => new Pg.Client({ connectionString: Redacted.value(url), keepAlive: true }))
}

export interface PgStoragePoolOptions {
  /** A `pg` pool the host already has; the host ends it (after the service stops). */
  readonly pool: Pg.Pool
  /** The 32-byte key that encrypts stored secrets (the service's `secretKey`). */
  readonly secretKey: StorageKey.SecretKey
  /** Keys that open what they sealed but never seal, while keys are rotated (docs/operations.md). */
  readonly otherSecretKeys?: ReadonlyArray<StorageKey.SecretKey> | undefined
}

/**
 * Every store of @agent-runs/core over a host's own `pg` pool: the service shares its connections
 * (and holds one more for LISTEN) and never ends it. Its tables are created in the pool's database
 * (`search_path`) on start, as with `layer`.
 */
export const layerFromPool = (options: PgStoragePoolOptions) =>
  over(
    PgClient.layerFromPool({ acquire: Effect.succeed(options.pool) }),
    options.secretKey,
    options.otherSecretKeys,
    () => new Pg.Client({ ...options.pool.options, keepAlive: true })
  )
