/**
 * The server key that encrypts stored secrets (AES-256-GCM): 32 bytes, from
 * `AGENT_RUNS_SECRET_KEY` or generated into the data directory by the server.
 */
import { Context, Layer, Redacted } from "effect"

export class StorageKey extends Context.Tag("@agent-runs/storage-sql/StorageKey")<StorageKey, {
  readonly key: Redacted.Redacted<Uint8Array>
}>() {}

/** The key as the storage adapters take it: 32 bytes, plain or redacted. */
export type SecretKey = Redacted.Redacted<Uint8Array> | Uint8Array

/** Provides the key, redacted. */
export const layer = (key: SecretKey): Layer.Layer<StorageKey> =>
  Layer.succeed(StorageKey, { key: key instanceof Uint8Array ? Redacted.make(key) : key })
