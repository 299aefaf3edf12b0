/** Port: opaque byte blobs by key (transcripts, attachments); a file-system adapter first. */
import type { Effect, Option, Stream } from "effect"
import { Context } from "effect"
import type { StorageError } from "./Storage.js"

export class BlobStore extends Context.Tag("@agent-runs/core/BlobStore")<BlobStore, {
  /** Appends bytes to a blob, creating it when missing. */
  readonly append: (key: string, bytes: Uint8Array) => Effect.Effect<void, StorageError>
  /** Writes a whole blob, replacing any previous one. */
  readonly put: (key: string, bytes: Uint8Array) => Effect.Effect<void, StorageError>
  /** The blob's bytes as a stream, or none when it does not exist. */
  readonly read: (key: string) => Effect.Effect<Option.Option<Stream.Stream<Uint8Array, StorageError>>, StorageError>
  /** Deletes a blob; false when there was none. */
  readonly remove: (key: string) => Effect.Effect<boolean, StorageError>
}>() {}
