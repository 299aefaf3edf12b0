/**
 * The storage ports on SQLite: one database file in WAL mode, migrated at start, with in-process
 * wake-ups. The embedded default: no other service needed.
 *
 * Two connections: the writer's (every transaction, and the writes) and a read-only one for the
 * reads made outside a transaction (storage-sql's Reader.ts), which sees the last commit without
 * waiting for the writer's transactions.
 */
import { SqliteClient } from "@effect/sql-sqlite-node"
import { SqlClient } from "@effect/sql"
import { Directories } from "@agent-runs/node-fs"
import { CacheChanges, Migrations, Reader, StorageKey, StorageSql, Wakeups } from "@agent-runs/storage-sql"
import { Effect, Layer, PubSub, Stream } from "effect"
import { dirname } from "node:path"
import * as ReadConnection from "./ReadConnection.js"

export interface SqliteStorageOptions {
  /** The database file (created when missing, with its directory). */
  readonly filename: string
  /** The 32-byte key that encrypts stored secrets (the service's `secretKey`). */
  readonly secretKey: StorageKey.SecretKey
  /** Keys that open what they sealed but never seal, while keys are rotated (docs/operations.md). */
  readonly otherSecretKeys?: ReadonlyArray<StorageKey.SecretKey> | undefined
}

/** Wake-ups within this process: SQLite has no cross-process notification. */
const wakeups = Layer.scoped(
  Wakeups.Wakeups,
  Effect.gen(function* () {
    const hub = yield* Effect.acquireRelease(PubSub.sliding<void>(16), PubSub.shutdown)
    return {
      notify: PubSub.publish(hub, undefined).pipe(Effect.asVoid),
      notifyExpression: undefined,
      signals: Stream.fromPubSub(hub)
    }
  })
)

/**
 * Changes of what is cached (CacheChanges): this process's own writes empty its caches themselves,
 * and no other process serves the same file (docs/storage.md), so there is nothing to tell or hear.
 */
const cacheChanges = Layer.succeed(CacheChanges.CacheChanges, { publish: Effect.void, signals: Stream.never })

/** Connection settings every session needs, then the migrations. */
const prepare = Layer.effectDiscard(
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`PRAGMA foreign_keys = ON`
    yield* sql`PRAGMA busy_timeout = 5000`
    yield* sql`PRAGMA synchronous = NORMAL`
    yield* Migrations.migrate
  })
)

/** The read-only connection (opened once the writer has migrated the file and set WAL mode). */
const reader = (filename: string) => Layer.scoped(Reader.Reader, ReadConnection.make(filename))

/** Every store of @agent-runs/core on one SQLite file. */
export const layer = (options: SqliteStorageOptions) => {
  if (options.filename === ":memory:" || options.filename === "") {
    // Its two connections (reader, writer) would open two different in-memory databases.
    return Layer.fail(new Error(`the SQLite database must be a file, not "${options.filename}"`))
  }
  const client = Layer.unwrapEffect(Effect.try({
    try: () => {
      Directories.ensureDirectory(dirname(options.filename))
      return SqliteClient.layer({ filename: options.filename })
    },
    catch: (cause) => new Error(`cannot create the directory of ${options.filename}: ${(cause as Error).message}`)
  }))
  const support = Layer.mergeAll(
    prepare,
    wakeups,
    cacheChanges,
    StorageKey.layer(options.secretKey, options.otherSecretKeys)
  ).pipe(Layer.provideMerge(client))
  return StorageSql.layer.pipe(Layer.provideMerge(reader(options.filename).pipe(Layer.provideMerge(support))))
}

