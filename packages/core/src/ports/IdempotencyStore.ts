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
   * still running since before `abandonedBefore(now)`, no longer holds its key: it is replaced.
   */
  readonly claim: (claim: KeyClaim) => Effect.Effect<KeyHold, StorageError>
  /** Stores the answer of the request that took the key (a key already answered keeps its answer). */
  readonly answer: (scope: string, key: string, answer: StoredAnswer) => Effect.Effect<void, StorageError>
  /** Frees a key still running (its request failed and did nothing); an answered key stays. */
  readonly release: (scope: string, key: string) => Effect.Effect<void, StorageError>
  /** Removes at most `limit` keys created before `before` (epoch ms); how many it removed. */
  readonly prune: (before: number, limit: number) => Effect.Effect<number, StorageError>
}>() {}
