/**
 * Port: idempotency keys (domain/Idempotency.ts) and the answers they replay. A key is taken by
 * one request at a time (concurrent requests with one key: one takes it, the others see it
 * running); answers are stored sealed at rest (a created token's secret is in one).
 */
import type { Effect } from "effect"
import { Context } from "effect"
import type { KeyClaim, KeyHold, StoredAnswer } from "../domain/Idempotency.js"
import type { StorageError } from "./Storage.js"

export class IdempotencyStore extends Context.Tag("@agent-runs/core/IdempotencyStore")<IdempotencyStore, {
  /**
   * Takes the claim's key, or tells what holds it. A row created before `expiredBefore(now)`, or
   * still running since before `abandonedBefore(now)`, no longer holds its key: it is replaced; so
   * is an answer that no longer opens (the server key changed).
   */
  readonly claim: (claim: KeyClaim) => Effect.Effect<KeyHold, StorageError>
  /** Stores the answer of the claim that took the key, while it holds it running (else nothing). */
  readonly answer: (claim: KeyClaim, answer: StoredAnswer) => Effect.Effect<void, StorageError>
  /** Frees the key the claim took, while it holds it running (its request failed and did nothing). */
  readonly release: (claim: KeyClaim) => Effect.Effect<void, StorageError>
  /** Removes at most `limit` keys created before `before` (epoch ms); how many it removed. */
  readonly prune: (before: number, limit: number) => Effect.Effect<number, StorageError>
}>() {}
