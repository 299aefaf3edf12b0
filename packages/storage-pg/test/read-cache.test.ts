import { tokenCacheSuite, webhookCacheSuite } from "@agent-runs/core/testing"
import { ReadCache } from "@agent-runs/storage-sql"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Redacted } from "effect"
import { PgStorage } from "../src/index.js"
import { freshDatabase, testKey } from "./harness.js"

// Two replicas: two pools on one database, each with its own cache and LISTEN connection.
const replicas = (ttlMs: number) =>
  Effect.gen(function* () {
    const { url } = yield* freshDatabase
    const secretKey = testKey()
    const replica = Layer.build(
      PgStorage.layer({ url: Redacted.make(url), secretKey, maxConnections: 4 }).pipe(
        Layer.provide(Layer.succeed(ReadCache.ReadCacheConfig, { ...ReadCache.DEFAULT_READ_CACHE, ttlMs }))
      )
    )
    const first = yield* replica
    const second = yield* replica
    const sql = Context.get(first, SqlClient.SqlClient)
    return {
      stores: [first, second] as const,
      revokeBehind: (hash: string) => sql`UPDATE tokens SET revoked_at = ${Date.now()} WHERE token_hash = ${hash}`
    }
  })

tokenCacheSuite("postgresql", replicas)
webhookCacheSuite("postgresql", replicas)
