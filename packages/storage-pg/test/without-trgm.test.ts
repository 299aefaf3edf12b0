/**
 * A database where pg_trgm cannot be created (a role without CREATE on the database): the
 * service still starts, logs a warning naming pg_trgm, and `q` matches substrings only (in the
 * list and in the counts by state).
 */
import { makeRun, uid } from "@agent-runs/core/testing"
import type { PrincipalUid, TeamUid } from "@agent-runs/core/domain/Ids"
import type { RunListQuery } from "@agent-runs/core/domain/RunQuery"
import { RunStore } from "@agent-runs/core/ports/RunStore"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { expect, it } from "@effect/vitest"
import { Effect, Layer, Logger, LogLevel, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { PgStorage } from "../src/index.js"
import { SERVER } from "../testing/index.js"
import { freshDatabase, testKey } from "./harness.js"

const asPostgres = <A, E>(database: string, f: (sql: SqlClient.SqlClient) => Effect.Effect<A, E>) =>
  Effect.flatMap(SqlClient.SqlClient, f).pipe(
    Effect.provide(PgClient.layer({ url: Redacted.make(`${SERVER}/${database}`), maxConnections: 1 }))
  )

/** A login role that may create tables in the database's public schema, but no extension. */
const restrictedRole = Effect.acquireRelease(
  Effect.gen(function* () {
    const role = `agent_runs_no_ext_${randomBytes(4).toString("hex")}`
    yield* asPostgres("test", (sql) => sql`CREATE ROLE ${sql(role)} LOGIN`)
    return role
  }),
  (role) => asPostgres("test", (sql) => sql`DROP ROLE IF EXISTS ${sql(role)}`).pipe(Effect.orDie)
)

const query = (q: ReadonlyArray<string>): RunListQuery => ({
  limit: 10,
  sort_by: "relevance",
  sort_order: "desc",
  filters: { states: [], metadata: [], q }
})

it.live("without pg_trgm: the store starts, warns once, and q matches substrings only", () =>
  Effect.gen(function* () {
    const role = yield* restrictedRole
    const { name } = yield* freshDatabase
    yield* asPostgres(name, (sql) =>
      Effect.all([
        sql`REVOKE CREATE ON DATABASE ${sql(name)} FROM PUBLIC`,
        sql`GRANT USAGE, CREATE ON SCHEMA public TO ${sql(role)}`
      ]))

    const warnings: Array<string> = []
    const logger = Logger.make(({ logLevel, message }) => {
      if (LogLevel.greaterThanEqual(logLevel, LogLevel.Warning)) warnings.push(String(message))
    })
    const url = `${SERVER.replace("postgres://postgres@", `postgres://${role}@`)}/${name}`
    const storage = PgStorage.layer({ url: Redacted.make(url), secretKey: testKey() }).pipe(
      Layer.provide(Logger.replace(Logger.defaultLogger, logger))
    )

    yield* Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      expect(yield* sql`SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'`).toEqual([])
      expect(warnings.filter((w) => w.includes("pg_trgm"))).toHaveLength(1)

      const store = yield* RunStore
      const team = uid<TeamUid>()
      const creator = uid<PrincipalUid>()
      const t = 1_700_000_300_000
      const older = makeRun({ team, creator, created_at: t, title: "Deploy the service" })
      const newer = makeRun({ team, creator, created_at: t + 1, title: "Redeploy the service" })
      yield* store.create([{ run: older, events: [] }, { run: newer, events: [] }])
      const viewer = { principal_uid: creator, team_uid: team, role: "admin" as const, instance_admin: false }
      const ids = (q: ReadonlyArray<string>) =>
        Effect.map(store.list(query(q), viewer), (page) => page.rows.map((r) => r.item.run_id))
      // Substrings still match, every one equally relevant: ties by run id, newest first.
      expect(yield* ids(["deploy", "service"])).toEqual([newer.item.run_id, older.item.run_id])
      // A typo finds nothing without pg_trgm (0.375 similar: found with it).
      expect(yield* ids(["deplyo", "servce"])).toEqual([])
      // The counts by state match as the list does.
      expect((yield* store.countByState(query(["deploy", "service"]), viewer)).PENDING).toBe(2)
      expect((yield* store.countByState(query(["deplyo", "servce"]), viewer)).PENDING).toBe(0)
    }).pipe(Effect.provide(storage))
  }).pipe(Effect.scoped), 60_000)
