import { runDocShapeSuite } from "@agent-runs/core/testing"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { SqliteStorage } from "../src/index.js"
import { freshDatabase, testKey } from "./harness.js"

runDocShapeSuite("sqlite", () =>
  Effect.gen(function* () {
    const { filename } = yield* freshDatabase
    const store = yield* Layer.build(SqliteStorage.layer({ filename, secretKey: testKey() }))
    const sql = Context.get(store, SqlClient.SqlClient)
    return {
      store,
      age: (runIds) =>
        sql`UPDATE runs SET doc_shape = NULL,
          doc = json_set(doc, '$.is_sandbox_running', json('true'), '$.is_run_type_cancellable', json('false'))
          WHERE run_id IN ${sql.in(runIds)}`,
      ageArtifacts: (runIds) =>
        sql`UPDATE run_artifacts SET doc_shape = NULL, doc = json_set(doc, '$.legacy', json('1'))
          WHERE run_id IN ${sql.in(runIds)}`,
      ageRendered: (runIds) =>
        sql`UPDATE conversations SET rendered_shape = 'older', rendered = '{"id":"legacy"}' WHERE run_id IN ${sql.in(runIds)}`
    }
  }))
