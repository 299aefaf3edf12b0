/**
 * The server key that encrypts stored secrets (AES-256-GCM): 32 bytes, from
 * `AGENT_RUNS_SECRET_KEY` or generated into the data directory by the server; and, while keys are
 * rotated (docs/operations.md#rotating-the-secret-key), the other keys that still open what they
 * sealed but never seal anything.
 */
import { Context, Layer, Redacted } from "effect"

export class StorageKey extends Context.Tag("@agent-runs/storage-sql/StorageKey")<StorageKey, {
  readonly key: Redacted.Redacted<Uint8Array>
  readonly others: ReadonlyArray<Redacted.Redacted<Uint8Array>>
}>() {}

/** The key as the storage adapters take it: 32 bytes, plain or redacted. */
export type SecretKey = Redacted.Redacted<Uint8Array> | Uint8Array

const redacted = (key: SecretKey) => key instanceof Uint8Array ? Redacted.make(key) : key

/** Provides the key, and the keys that only open, redacted. */
export const layer = (key: SecretKey, others: ReadonlyArray<SecretKey> = []): Layer.Layer<StorageKey> =>
  Layer.succeed(StorageKey, { key: redacted(key), others: others.map(redacted) })
