/**
 * IdempotencyStore over SqlClient: one row of `idempotency_keys` per (scope, key) (migration
 * 0016). A claim is one transaction: it drops the key's row when it no longer holds the key
 * (expired, or abandoned while running), inserts its own unless a row is there (`ON CONFLICT DO
 * NOTHING`: of two concurrent claims one inserts, the other then reads its row), and otherwise
 * reads what holds the key. Answers are sealed under the server key, bound to their (scope, key).
 */
import { abandonedBefore, expiredBefore, type KeyClaim, type KeyHold, type StoredAnswer } from "@agent-runs/core/domain/Idempotency"
import { IdempotencyStore } from "@agent-runs/core/ports/IdempotencyStore"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Redacted, Schema } from "effect"
import * as Crypto from "./Crypto.js"
import { Bytes, decodeRows, operation } from "./internal/Catalog.js"
import { StorageKey } from "./StorageKey.js"

/** The row an answer is bound to. */
const rowAad = (scope: string, key: string) => Crypto.aad("idempotency", scope, key)

const HeldRow = Schema.Struct({
  fingerprint: Schema.String,
  status: Schema.NullOr(Schema.Number),
  body: Schema.NullOr(Bytes)
})

/** IdempotencyStore, needing `SqlClient` and `StorageKey`. */
export const layer = Layer.effect(
  IdempotencyStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const { key: storageKey } = yield* StorageKey

    const holder = (claim: KeyClaim, row: typeof HeldRow.Type | undefined) =>
      Effect.gen(function* () {
        if (row === undefined) return { _tag: "Running" } as const
        if (row.fingerprint !== claim.fingerprint) return { _tag: "Mismatch" } as const
        if (row.status === null || row.body === null) return { _tag: "Running" } as const
        const body = yield* Crypto.open(storageKey, row.body, rowAad(claim.scope, claim.key))
        return { _tag: "Answered", answer: { status: row.status, body: Redacted.value(body) } } as const
      })

    const claim = Effect.fn("IdempotencyStore.claim")(
      function* (claim: KeyClaim) {
        const hold: KeyHold = yield* sql.withTransaction(Effect.gen(function* () {
          yield* sql`DELETE FROM idempotency_keys WHERE scope = ${claim.scope} AND idem_key = ${claim.key}
            AND (created_at < ${expiredBefore(claim.now)} OR (status IS NULL AND created_at < ${abandonedBefore(claim.now)}))`
          const inserted = yield* sql`INSERT INTO idempotency_keys ${
            sql.insert({ scope: claim.scope, idem_key: claim.key, fingerprint: claim.fingerprint, created_at: claim.now })
          } ON CONFLICT DO NOTHING RETURNING scope`
          if (inserted.length > 0) return { _tag: "Taken" } as const
          const rows = yield* sql`SELECT fingerprint, status, body FROM idempotency_keys
            WHERE scope = ${claim.scope} AND idem_key = ${claim.key}`.pipe(Effect.flatMap(decodeRows(HeldRow)))
          return yield* holder(claim, rows[0])
        }))
        return hold
      },
      operation("IdempotencyStore.claim")
    )

    const answer = Effect.fn("IdempotencyStore.answer")(
      function* (scope: string, key: string, stored: StoredAnswer) {
        const sealed = yield* Crypto.seal(storageKey, Redacted.make(stored.body), rowAad(scope, key))
        yield* sql`UPDATE idempotency_keys SET status = ${stored.status}, body = ${sealed}
          WHERE scope = ${scope} AND idem_key = ${key} AND status IS NULL`
      },
      operation("IdempotencyStore.answer")
    )

    const release = Effect.fn("IdempotencyStore.release")(
      function* (scope: string, key: string) {
        yield* sql`DELETE FROM idempotency_keys WHERE scope = ${scope} AND idem_key = ${key} AND status IS NULL`
      },
      operation("IdempotencyStore.release")
    )

    const prune = Effect.fn("IdempotencyStore.prune")(
      function* (before: number, limit: number) {
        const removed = yield* sql`DELETE FROM idempotency_keys WHERE (scope, idem_key) IN (
          SELECT scope, idem_key FROM idempotency_keys WHERE created_at < ${before} ORDER BY created_at LIMIT ${limit}
        ) RETURNING scope`
        return removed.length
      },
      operation("IdempotencyStore.prune")
    )

    return IdempotencyStore.of({ claim, answer, release, prune })
  })
)
