/**
 * Idempotency keys (IdempotencyStoreSql.ts): one row per (scope, key) — the caller, the key it
 * sent — with the fingerprint of the request that took it, the id of its claim, when, and once it
 * finished its answer (`status`, and `body` sealed under the server key; both NULL while it runs).
 * The prune reads `(created_at)`.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const key = sql.literal(sql.onDialectOrElse({ pg: () => `TEXT COLLATE "C"`, orElse: () => "TEXT" }))
  const bytes = sql.literal(sql.onDialectOrElse({ pg: () => "BYTEA", orElse: () => "BLOB" }))
  yield* sql`CREATE TABLE idempotency_keys (
    scope ${key} NOT NULL,
    idem_key ${key} NOT NULL,
    fingerprint TEXT NOT NULL,
    claim_id TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    status INTEGER NULL,
    body ${bytes} NULL,
    PRIMARY KEY (scope, idem_key)
  )`
  yield* sql`CREATE INDEX idempotency_keys_by_time ON idempotency_keys (created_at)`
})
