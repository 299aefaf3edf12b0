/**
 * Test support for code that needs a real PostgreSQL database (127.0.0.1:5432, trust auth, user
 * postgres; `AGENT_RUNS_TEST_PG` overrides the server URL): a database created for a scope and
 * dropped (with FORCE) when the scope closes.
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { randomBytes } from "node:crypto"

/** The PostgreSQL server tests use. */
export const SERVER = process.env.AGENT_RUNS_TEST_PG ?? "postgres://postgres@127.0.0.1:5432"

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

