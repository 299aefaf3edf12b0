/**
 * Idempotent creates (docs/reference/idempotency.md, domain/Idempotency.ts): `once` runs a
 * request's work at most once per caller and key, and answers every repeat of the request with
 * the first answer.
 *
 * Decisions:
 * - A key is checked first (400 naming `Idempotency-Key`), then claimed: a repeat of a finished
 *   request gets its stored answer (`replayed`), as it was then; the same key with another request
 *   (method, path, team, decoded body) is a 422 naming the header; a repeat while the first still
 *   runs is a 409 with `retryable: true`. Keys are the caller's own (`scopeOf`: principal and
 *   credential).
 * - Only answers are remembered: a request refused (a typed error: the work wrote nothing) frees
 *   its key, so a retry runs again. An answer over `MAX_STORED_BODY_BYTES` frees it too.
 * - From the claim to the stored answer nothing is interrupted (a client hanging up), so work done
 *   is always remembered. When the outcome is unknown (a defect, or the server dying meanwhile)
 *   the key stays taken for `ABANDONED_AFTER_MS` (repeats get the 409), then a retry runs again:
 *   the one window in which a request can be done twice.
 * - A key answers for `KEY_TTL_MS` (24 hours) from its first request; engine/IdempotencyExpiry.ts
 *   removes older ones.
 */
import { Cause, Clock, Effect, Exit, Option } from "effect"
import type { Viewer } from "../domain/Access.js"
import { Conflict, InvalidRequest, OperationNotSupported } from "../domain/Errors.js"
import {
  fingerprintInput,
  type KeyClaim,
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

    /** What becomes of the key once the work ended: its answer stored, freed, or left taken (outcome unknown). */
    const settle = <E>(claim: KeyClaim, exit: Exit.Exit<StoredAnswer, E>) => {
      if (Exit.isSuccess(exit)) {
        return new TextEncoder().encode(exit.value.body).length <= MAX_STORED_BODY_BYTES ? store.answer(claim, exit.value) : store.release(claim)
      }
      const refused = Option.isSome(Cause.failureOption(exit.cause)) && !Cause.isDie(exit.cause) && !Cause.isInterrupted(exit.cause)
      return refused ? store.release(claim) : Effect.void
    }

    /** Runs `work` under the taken key, and settles the key. */
    const remembered = <E, R>(claim: KeyClaim, work: Effect.Effect<StoredAnswer, E, R>) =>
      Effect.onExit(work, (exit) =>
        // The work stands either way; a key whose answer could not be stored stays taken until abandoned.
        Effect.catchAll(settle(claim, exit), (error) => Effect.logWarning(`idempotency key not settled: ${error.operation}`)))

    /** Claims the key, and answers as what holds it says. */
    const answered = <E, R>(claim: KeyClaim, work: Effect.Effect<StoredAnswer, E, R>) =>
      Effect.gen(function*() {
        const hold = yield* storageUnavailable(store.claim(claim))
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
            return { answer: yield* remembered(claim, work), replayed: false } satisfies OnceAnswer
        }
      })

    const once = Effect.fn("Idempotency.once")(
      function*<E, R>(viewer: Viewer, key: string, request: RequestFacts, work: Effect.Effect<StoredAnswer, E, R>) {
        const problem = keyProblem(key)
        if (problem !== undefined) return yield* InvalidRequest.forField(HEADER, problem)
        const claim: KeyClaim = {
          scope: scopeOf(viewer),
          key,
          fingerprint: yield* sha256Hex(fingerprintInput(request)),
          claim_id: globalThis.crypto.randomUUID(),
          now: yield* Clock.currentTimeMillis
        }
        // From the claim on, nothing is interrupted: a key taken always has its work run and settled.
        return yield* Effect.uninterruptible(answered(claim, work))
      }
    )

    return { once } as const
  })
}) {}
