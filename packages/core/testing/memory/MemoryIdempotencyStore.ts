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
  const take = (claim: KeyClaim): KeyHold => {
    state.idempotencyKeys.set(rowKey(claim.scope, claim.key), {
      fingerprint: claim.fingerprint,
      claim_id: claim.claim_id,
      created_at: claim.now
    })
    return { _tag: "Taken" }
  }

  /** The stored answer; the key taken afresh when it no longer opens. */
  const opened = (claim: KeyClaim, answer: NonNullable<IdempotencyRow["answer"]>) =>
    sealer.open(answer.body, rowKey(claim.scope, claim.key)).pipe(
      Effect.map((body): KeyHold => ({ _tag: "Answered", answer: { status: answer.status, body: Redacted.value(body) } })),
      Effect.orElse(() => Effect.sync(() => take(claim)))
    )

  const claim = (claim: KeyClaim) =>
    Effect.suspend((): Effect.Effect<KeyHold, StorageError> => {
      const row = state.idempotencyKeys.get(rowKey(claim.scope, claim.key))
      if (row === undefined || !holds(row, claim.now)) return Effect.succeed(take(claim))
      if (row.fingerprint !== claim.fingerprint) return Effect.succeed({ _tag: "Mismatch" })
      return row.answer === undefined ? Effect.succeed({ _tag: "Running" }) : opened(claim, row.answer)
    })

  /** The row the claim took, while it runs. */
  const running = (claim: KeyClaim) => {
    const row = state.idempotencyKeys.get(rowKey(claim.scope, claim.key))
    return row !== undefined && row.claim_id === claim.claim_id && row.answer === undefined ? row : undefined
  }

  const answer = (claim: KeyClaim, stored: StoredAnswer) =>
    sealer.seal(Redacted.make(stored.body), rowKey(claim.scope, claim.key)).pipe(
      Effect.map((body) => {
        const row = running(claim)
        if (row !== undefined) state.idempotencyKeys.set(rowKey(claim.scope, claim.key), { ...row, answer: { status: stored.status, body } })
      }),
      Effect.mapError((cause) => new StorageError({ operation: "IdempotencyStore.answer", cause }))
    )

  const release = (claim: KeyClaim) =>
    Effect.sync(() => {
      if (running(claim) !== undefined) state.idempotencyKeys.delete(rowKey(claim.scope, claim.key))
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
