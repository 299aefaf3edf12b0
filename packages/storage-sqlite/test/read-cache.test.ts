import { tokenCacheSuite, webhookCacheSuite } from "@agent-runs/core/testing"
import { ReadCache } from "@agent-runs/storage-sql"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { SqliteStorage } from "../src/index.js"
import { freshDatabase, testKey } from "./harness.js"

// One process: both "replicas" are the same stores, as the API and the engine share them.
const replicas = (ttlMs: number) =>
  Effect.gen(function* () {
    const { filename } = yield* freshDatabase
    const stores = yield* Layer.build(
      SqliteStorage.layer({ filename, secretKey: testKey() }).pipe(
        Layer.provide(Layer.succeed(ReadCache.ReadCacheConfig, { ...ReadCache.DEFAULT_READ_CACHE, ttlMs }))
      )
    )
    const sql = Context.get(stores, SqlClient.SqlClient)
    return {
      stores: [stores, stores] as const,
      revokeBehind: (hash: string) => sql`UPDATE tokens SET revoked_at = ${Date.now()} WHERE token_hash = ${hash}`
    }
  })

tokenCacheSuite("sqlite", replicas)
webhookCacheSuite("sqlite", replicas)
