import { it, expect } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Redacted } from "effect"
import { PgStorage } from "../src/index.js"
import { freshDatabase, storageLayer, testKey } from "./harness.js"

it.effect("migrates a fresh database and answers", () =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM agent_runs_migrations`
    expect(rows[0]!.n).toBe(26)
  }).pipe(Effect.provide(storageLayer)))

it.effect("replicas starting at once on a fresh database migrate it once, and both start", () =>
  Effect.gen(function* () {
    const { url } = yield* freshDatabase
    const replica = Layer.build(PgStorage.layer({ url: Redacted.make(url), secretKey: testKey() }))
    const [first] = yield* Effect.all([replica, replica, replica], { concurrency: "unbounded" })
    const sql = Context.get(first!, SqlClient.SqlClient)
    const rows = yield* sql<{ n: number; distinct: number }>`SELECT count(*)::int AS n, count(DISTINCT name)::int AS distinct
      FROM agent_runs_migrations`
    expect(rows[0]).toEqual({ n: 26, distinct: 26 })
  }).pipe(Effect.scoped), { timeout: 60_000 })
