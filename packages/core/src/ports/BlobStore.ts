/** Port: opaque byte blobs by key (transcripts, attachments); a file-system adapter first. */
import type { Effect, Option, Stream } from "effect"
import { Context } from "effect"
import type { StorageError } from "./Storage.js"

export class BlobStore extends Context.Tag("@agent-runs/core/BlobStore")<BlobStore, {
  /** Appends bytes to a blob, creating it when missing. */
  readonly append: (key: string, bytes: Uint8Array) => Effect.Effect<void, StorageError>
  /**
   * Writes `bytes` at byte `offset` of an append-only blob (creating it when missing) and answers
   * the blob's size afterwards: only the part of `bytes` beyond the blob's current end is appended,
   * so a write repeated after a lost answer is a no-op (its bytes are there already). A blob
   * shorter than `offset` gets `bytes` at its end. The "one writer" rule of `append` holds.
   */
  readonly appendAt: (key: string, offset: number, bytes: Uint8Array) => Effect.Effect<number, StorageError>
  /** The blob's size in bytes; 0 when it does not exist. */
  readonly size: (key: string) => Effect.Effect<number, StorageError>
  /** Writes a whole blob, replacing any previous one. */
  readonly put: (key: string, bytes: Uint8Array) => Effect.Effect<void, StorageError>
  /** The blob's bytes as a stream, or none when it does not exist. */
  readonly read: (key: string) => Effect.Effect<Option.Option<Stream.Stream<Uint8Array, StorageError>>, StorageError>
  /** Deletes a blob; false when there was none. */
  readonly remove: (key: string) => Effect.Effect<boolean, StorageError>
}>() {}
