/**
 * Port: the values a store keeps sealed under the server's secret key (team secrets, webhooks' and
 * outbound webhooks' signing secrets, idempotent answers), sealed again under the current key
 * while keys are rotated (docs/operations.md#rotating-the-secret-key).
 */
import type { Effect } from "effect"
import { Context } from "effect"
import type { StorageError } from "./Storage.js"

/** What a call of `reseal` did, and the cycle it belongs to. */
export interface ResealPass {
  /** Values sealed again under the current key by this call. */
  readonly resealed: number
  /** Whether this call reached the end of every sealed column: the cycle ended (the next call starts one). */
  readonly cycleEnded: boolean
  /** Values sealed again over the whole cycle so far (0 at its end: everything was under the current key). */
  readonly cycleResealed: number
  /** Values no key opens over the cycle so far (damaged, or sealed under a key not given): left as they are. */
  readonly unreadable: number
}

export class SealedValues extends Context.Tag("@agent-runs/core/SealedValues")<SealedValues, {
  /**
   * Goes on through the sealed values where the last call stopped (from the start after a
   * restart), sealing again under the current key those another key opens, each only if it did not
   * change meanwhile (a concurrent write wins), until `limit` are sealed again or every column is
   * read. Reads nothing without other keys (a cycle that ends at once).
   */
  readonly reseal: (limit: number) => Effect.Effect<ResealPass, StorageError>
}>() {}
