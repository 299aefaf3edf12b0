/**
 * Test databases on the real PostgreSQL server (127.0.0.1:5432, trust auth, user postgres):
 * each suite creates its own database and drops it afterwards.
 */
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

/** Every store on a fresh database. */
export const storageLayer = Layer.unwrapScoped(
  Effect.map(freshDatabase, ({ url }) => PgStorage.layer({ url: Redacted.make(url), secretKey: testKey() }))
)
