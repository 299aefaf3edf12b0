/**
 * Test databases on the real PostgreSQL server (127.0.0.1:5432, trust auth, user postgres):
 * each suite creates its own database and drops it afterwards.
 */
import { RawStorage } from "@agent-runs/core/testing"
import { PgClient } from "@effect/sql-pg"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { PgStorage } from "../src/index.js"

const SERVER = process.env.AGENT_RUNS_TEST_PG ?? "postgres://postgres@127.0.0.1:5432"

const admin = <A, E>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, E>) =>
  Effect.flatMap(SqlClient.SqlClient, f).pipe(
    Effect.provide(PgClient.layer({ url: Redacted.make(`${SERVER}/test`), maxConnections: 1 }))
  )

/** A database created for the scope and dropped when it closes; yields its URL. */
export const freshDatabase = Effect.acquireRelease(
  Effect.gen(function* () {
    const name = `agent_runs_test_${Date.now()}_${randomBytes(4).toString("hex")}`
    yield* admin((sql) => sql`CREATE DATABASE ${sql(name)}`)
    return { name, url: `${SERVER}/${name}` }
  }),
  ({ name }) => admin((sql) => sql`DROP DATABASE IF EXISTS ${sql(name)} WITH (FORCE)`).pipe(Effect.orDie)
)

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
