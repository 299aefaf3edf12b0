import { runDocShapeSuite } from "@agent-runs/core/testing"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Redacted } from "effect"
import { PgStorage } from "../src/index.js"
import { freshDatabase, testKey } from "./harness.js"

runDocShapeSuite("postgresql", () =>
  Effect.gen(function* () {
    const { url } = yield* freshDatabase
    const store = yield* Layer.build(PgStorage.layer({ url: Redacted.make(url), secretKey: testKey(), maxConnections: 2 }))
    const sql = Context.get(store, SqlClient.SqlClient)
    return {
      store,
      age: (runIds) =>
        sql`UPDATE runs SET doc_shape = NULL,
          doc = (doc::jsonb || '{"is_sandbox_running": true, "is_run_type_cancellable": false}'::jsonb)::text
          WHERE run_id IN ${sql.in(runIds)}`,
      ageArtifacts: (runIds) =>
        sql`UPDATE run_artifacts SET doc_shape = NULL, doc = (doc::jsonb || '{"legacy": 1}'::jsonb)::text
          WHERE run_id IN ${sql.in(runIds)}`,
      ageRendered: (runIds) =>
        sql`UPDATE conversations SET rendered_shape = 'older', rendered = '{"id":"legacy"}' WHERE run_id IN ${sql.in(runIds)}`
    }
  }))
