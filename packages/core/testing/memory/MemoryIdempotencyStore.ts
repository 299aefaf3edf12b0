/**
 * IdempotencyStore in memory: the keys in the shared state, answers sealed like secrets. Every
 * claim is one synchronous step, so concurrent claims of one key take it once.
 */
import { Effect, Redacted } from "effect"
import { abandonedBefore, expiredBefore, type KeyClaim, type KeyHold, type StoredAnswer } from "../../src/domain/Idempotency.js"
import { IdempotencyStore } from "../../src/ports/IdempotencyStore.js"
import { StorageError } from "../../src/ports/Storage.js"
import { aad, type Sealer } from "./MemoryCrypto.js"
import type { IdempotencyRow, MemoryState } from "./MemoryState.js"

const rowKey = (scope: string, key: string) => aad("idempotency", scope, key)

/** Whether a row still holds its key at `now`. */
const holds = (row: IdempotencyRow, now: number) =>
  row.created_at >= expiredBefore(now) && (row.answer !== undefined || row.created_at >= abandonedBefore(now))

export const makeMemoryIdempotencyStore = (state: MemoryState, sealer: Sealer) => {
  const opened = (claim: KeyClaim, answer: NonNullable<IdempotencyRow["answer"]>) =>
    sealer.open(answer.body, rowKey(claim.scope, claim.key)).pipe(
      Effect.map((body): KeyHold => ({ _tag: "Answered", answer: { status: answer.status, body: Redacted.value(body) } })),
      Effect.mapError((cause) => new StorageError({ operation: "IdempotencyStore.claim", cause }))
    )

  const claim = (claim: KeyClaim) =>
    Effect.suspend((): Effect.Effect<KeyHold, StorageError> => {
      const id = rowKey(claim.scope, claim.key)
      const row = state.idempotencyKeys.get(id)
      if (row === undefined || !holds(row, claim.now)) {
        state.idempotencyKeys.set(id, { fingerprint: claim.fingerprint, created_at: claim.now })
        return Effect.succeed({ _tag: "Taken" })
      }
      if (row.fingerprint !== claim.fingerprint) return Effect.succeed({ _tag: "Mismatch" })
      return row.answer === undefined ? Effect.succeed({ _tag: "Running" }) : opened(claim, row.answer)
    })

  const answer = (scope: string, key: string, stored: StoredAnswer) =>
    sealer.seal(Redacted.make(stored.body), rowKey(scope, key)).pipe(
      Effect.map((body) => {
        const row = state.idempotencyKeys.get(rowKey(scope, key))
        if (row !== undefined && row.answer === undefined) {
          state.idempotencyKeys.set(rowKey(scope, key), { ...row, answer: { status: stored.status, body } })
        }
      }),
      Effect.mapError((cause) => new StorageError({ operation: "IdempotencyStore.answer", cause }))
    )

  const release = (scope: string, key: string) =>
    Effect.sync(() => {
      const row = state.idempotencyKeys.get(rowKey(scope, key))
      if (row !== undefined && row.answer === undefined) state.idempotencyKeys.delete(rowKey(scope, key))
    })

  const prune = (before: number, limit: number) =>
    Effect.sync(() => {
      const old = [...state.idempotencyKeys].filter(([, row]) => row.created_at < before)
        .sort(([, a], [, b]) => a.created_at - b.created_at)
        .slice(0, Math.max(0, limit))
      for (const [id] of old) state.idempotencyKeys.delete(id)
      return old.length
    })

  return IdempotencyStore.of({ claim, answer, release, prune })
}
