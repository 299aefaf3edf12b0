/**
 * IdempotencyStore over SqlClient: one row of `idempotency_keys` per (scope, key) (migration
 * 0016). A claim is one transaction: it drops the key's row when it no longer holds the key
 * (expired, or abandoned while running), inserts its own unless a row is there (`ON CONFLICT DO
 * NOTHING`: of two concurrent claims one inserts, the other then reads its row), and otherwise
 * reads what holds the key. Answers are sealed under the server key, bound to their (scope, key);
 * an answer that no longer opens (another server key) is dropped and the key taken afresh. Only the
 * claim that took a key (its `claim_id`) answers or frees it.
 */
import { abandonedBefore, expiredBefore, type KeyClaim, type KeyHold, type StoredAnswer } from "@agent-runs/core/domain/Idempotency"
import { IdempotencyStore } from "@agent-runs/core/ports/IdempotencyStore"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Redacted, Schema } from "effect"
import * as Crypto from "./Crypto.js"
import { Bytes, decodeRows, operation } from "./internal/Catalog.js"
import { StorageKey } from "./StorageKey.js"

/** The row an answer is bound to. */
export const rowAad = (scope: string, key: string) => Crypto.aad("idempotency", scope, key)

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
    const ring = yield* StorageKey
    const storageKey = ring.key

    const own = (claim: KeyClaim) => sql`scope = ${claim.scope} AND idem_key = ${claim.key}`

    /** What holds the key, read after the claim's insert found a row; undefined when its answer no longer opens. */
    const holder = (claim: KeyClaim, row: typeof HeldRow.Type | undefined) =>
      Effect.gen(function* () {
        if (row === undefined) return { _tag: "Running" } as const
        if (row.fingerprint !== claim.fingerprint) return { _tag: "Mismatch" } as const
        if (row.status === null || row.body === null) return { _tag: "Running" } as const
        const body = yield* Effect.option(Crypto.openWith(ring, row.body, rowAad(claim.scope, claim.key)))
        if (body._tag === "None") return undefined
        return { _tag: "Answered", answer: { status: row.status, body: Redacted.value(body.value) } } as const
      })

    const insert = (claim: KeyClaim) =>
      sql`INSERT INTO idempotency_keys ${
        sql.insert({ scope: claim.scope, idem_key: claim.key, fingerprint: claim.fingerprint, claim_id: claim.claim_id, created_at: claim.now })
      } ON CONFLICT DO NOTHING RETURNING scope`

    const claim = Effect.fn("IdempotencyStore.claim")(
      function* (claim: KeyClaim) {
        const hold: KeyHold = yield* sql.withTransaction(Effect.gen(function* () {
          yield* sql`DELETE FROM idempotency_keys WHERE ${own(claim)}
            AND (created_at < ${expiredBefore(claim.now)} OR (status IS NULL AND created_at < ${abandonedBefore(claim.now)}))`
          if ((yield* insert(claim)).length > 0) return { _tag: "Taken" } as const
          const rows = yield* sql`SELECT fingerprint, status, body FROM idempotency_keys WHERE ${own(claim)}`.pipe(
            Effect.flatMap(decodeRows(HeldRow))
          )
          const held = yield* holder(claim, rows[0])
          if (held !== undefined) return held
          yield* sql`DELETE FROM idempotency_keys WHERE ${own(claim)}`
          yield* insert(claim)
          return { _tag: "Taken" } as const
        }))
        return hold
      },
      operation("IdempotencyStore.claim")
    )

    const answer = Effect.fn("IdempotencyStore.answer")(
      function* (claim: KeyClaim, stored: StoredAnswer) {
        const sealed = yield* Crypto.seal(storageKey, Redacted.make(stored.body), rowAad(claim.scope, claim.key))
        yield* sql`UPDATE idempotency_keys SET status = ${stored.status}, body = ${sealed}
          WHERE ${own(claim)} AND claim_id = ${claim.claim_id} AND status IS NULL`
      },
      operation("IdempotencyStore.answer")
    )

    const release = Effect.fn("IdempotencyStore.release")(
      function* (claim: KeyClaim) {
        yield* sql`DELETE FROM idempotency_keys WHERE ${own(claim)} AND claim_id = ${claim.claim_id} AND status IS NULL`
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
