/**
 * The server key that encrypts stored secrets (AES-256-GCM): 32 bytes, from
 * `AGENT_RUNS_SECRET_KEY` or generated into the data directory by the server.
 */
import type { Redacted } from "effect"
import { Context } from "effect"

export class StorageKey extends Context.Tag("@agent-runs/storage-sql/StorageKey")<StorageKey, {
  readonly key: Redacted.Redacted<Uint8Array>
}>() {}
