/**
 * Test databases on the real PostgreSQL server (127.0.0.1:5432, trust auth, user postgres):
 * each suite creates its own database and drops it afterwards.
 */
import { RawStorage } from "@agent-runs/core/testing"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { PgStorage } from "../src/index.js"
import { freshDatabase } from "../testing/index.js"

export { freshDatabase }

/** A random 32-byte secret key. */
export const testKey = () => Redacted.make(new Uint8Array(randomBytes(32)))

/**
 * The database's stored values: every row of every table of the schema as text. A BYTEA value
 * prints as hex, so the text is also searched for the needle's UTF-8 bytes in hex.
 */
const rawStorage = Layer.effect(
  RawStorage,
  Effect.map(SqlClient.SqlClient, (sql) => ({
    contains: (needle: string) =>
      Effect.gen(function* () {
        const hex = Buffer.from(needle, "utf8").toString("hex")
        const tables = yield* sql<{ name: string }>`SELECT tablename AS name FROM pg_tables
          WHERE schemaname = current_schema()`
        for (const { name } of tables) {
          const hits = yield* sql`SELECT 1 FROM ${sql(name)} t
            WHERE strpos(t::text, ${needle}) > 0 OR strpos(t::text, ${hex}) > 0 LIMIT 1`
          if (hits.length > 0) return true
        }
        return false
      }).pipe(Effect.orDie)
  }))
)

/** Every store on a fresh database, and its raw rows. */
export const storageLayer = Layer.unwrapScoped(
  Effect.map(freshDatabase, ({ url }) =>
    rawStorage.pipe(Layer.provideMerge(PgStorage.layer({ url: Redacted.make(url), secretKey: testKey() }))))
)
