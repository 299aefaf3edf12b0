/**
 * Idempotent creates (docs/reference/idempotency.md, domain/Idempotency.ts): `once` runs a
 * request's work at most once per caller and key, and answers every repeat of the request with
 * the first answer.
 *
 * Decisions:
 * - A key is checked first (400 naming `Idempotency-Key`), then claimed: a repeat of a finished
 *   request gets its stored answer (`replayed`); the same key with another request (method, path,
 *   team, body) is a 422 naming the header; a repeat while the first still runs is a 409 with
 *   `retryable: true`. Keys are the caller's own (`scopeOf`).
 * - Only answers are remembered: a request that fails (any error: nothing was created) frees its
 *   key, so a retry runs again. An answer over `MAX_STORED_BODY_BYTES` is not kept either.
 * - From the claim to the stored answer nothing is interrupted (a client hanging up), so work done
 *   is always remembered. If the server dies in between, the key stays taken for
 *   `ABANDONED_AFTER_MS` (repeats get the 409), then a retry runs again: the one window in which
 *   a request can be done twice.
 * - A key answers for `KEY_TTL_MS` (24 hours) from its first request; engine/IdempotencyExpiry.ts
 *   removes older ones.
 */
import { Clock, Effect } from "effect"
import type { Viewer } from "../domain/Access.js"
import { Conflict, InvalidRequest, OperationNotSupported } from "../domain/Errors.js"
import {
  fingerprintInput,
  keyProblem,
  MAX_STORED_BODY_BYTES,
  type RequestFacts,
  scopeOf,
  type StoredAnswer
} from "../domain/Idempotency.js"
import { sha256Hex } from "../internal/Sha256.js"
import { storageUnavailable } from "../internal/Services.js"
import { IdempotencyStore } from "../ports/IdempotencyStore.js"

/** The header as errors name it. */
const HEADER = "Idempotency-Key"

/** An answer, and whether it is the stored answer of an earlier request. */
export interface OnceAnswer {
  readonly answer: StoredAnswer
  readonly replayed: boolean
}

export class Idempotency extends Effect.Service<Idempotency>()("@agent-runs/core/Idempotency", {
  effect: Effect.gen(function*() {
    const store = yield* IdempotencyStore

    /** Runs `work` under the taken key: its answer is stored, its failure frees the key. */
    const remembered = <E, R>(scope: string, key: string, work: Effect.Effect<StoredAnswer, E, R>) =>
      Effect.uninterruptible(Effect.onExit(work, (exit) => {
        const keep = exit._tag === "Success" && new TextEncoder().encode(exit.value.body).length <= MAX_STORED_BODY_BYTES
        const settle = keep && exit._tag === "Success" ? store.answer(scope, key, exit.value) : store.release(scope, key)
        // The work stands either way; a key whose answer could not be stored stays taken until abandoned.
        return Effect.catchAll(settle, (error) => Effect.logWarning(`idempotency key not settled: ${error.operation}`))
      }))

    const once = Effect.fn("Idempotency.once")(
      function*<E, R>(viewer: Viewer, key: string, request: RequestFacts, work: Effect.Effect<StoredAnswer, E, R>) {
        const problem = keyProblem(key)
        if (problem !== undefined) return yield* InvalidRequest.forField(HEADER, problem)
        const scope = scopeOf(viewer)
        const fingerprint = yield* sha256Hex(fingerprintInput(request))
        const now = yield* Clock.currentTimeMillis
        const hold = yield* storageUnavailable(store.claim({ scope, key, fingerprint, now }))
        switch (hold._tag) {
          case "Answered":
            return { answer: hold.answer, replayed: true } satisfies OnceAnswer
          case "Mismatch":
            return yield* new OperationNotSupported({
              message: `${HEADER}: this key was used with a different request in the last 24 hours; send a new key for a new request`
            })
          case "Running":
            return yield* new Conflict({
              message: `${HEADER}: a request with this key is still being processed; retry shortly`,
              retryable: true
            })
          case "Taken":
            return { answer: yield* remembered(scope, key, work), replayed: false } satisfies OnceAnswer
        }
      }
    )

    return { once } as const
  })
}) {}
