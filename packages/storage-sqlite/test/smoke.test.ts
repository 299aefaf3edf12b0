import { it, expect } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { storageLayer } from "./harness.js"

it.effect("migrates a fresh database and answers", () =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ n: number }>`SELECT count(*) AS n FROM agent_runs_migrations`
    expect(rows[0]!.n).toBe(26)
  }).pipe(Effect.provide(storageLayer)))
