/**
 * Port: removing what is past its retention (docs/retention.md), in bounded batches, and the queue
 * of blobs that removed rows leave behind.
 *
 * Rows and blobs cannot change in one transaction, so removal is two steps that cannot orphan
 * either: the transaction that removes rows queues the keys of their blobs (`blobsToRemove`); the
 * sweeper removes the queued blobs, then forgets their keys. A crash in between leaves keys queued,
 * and removing a blob that is gone already is a no-op.
 */
import type { Effect, Option } from "effect"
import { Context } from "effect"
import type { RunId, TeamUid } from "../domain/Ids.js"
import type { StorageError } from "./Storage.js"

export class RetentionStore extends Context.Tag("@agent-runs/core/RetentionStore")<RetentionStore, {
  /**
   * Removes at most `limit` of a team's ended runs (SUCCEEDED, FAILED, BLOCKED, ERROR, CANCELLED)
   * last changed before `before`, oldest first, with everything the database holds of them
   * (timeline, conversation, artifacts, metadata, follow-ups, their outbound webhook deliveries),
   * and queues their blobs (`runBlobKeys`); how many runs it removed. A run that changes meanwhile
   * (a follow-up takes it up again) is left alone.
   */
  readonly expireRuns: (team: TeamUid, before: number, limit: number) => Effect.Effect<number, StorageError>
  /**
   * Removes one ended run now, whatever its age, as `expireRuns` removes runs (in the caller's
   * transaction when one is open: the audit entry of the deletion commits with it); the keys of
   * the blobs it queued, or none when the run is not there or not ended.
   */
  readonly removeRun: (runId: RunId) => Effect.Effect<Option.Option<ReadonlyArray<string>>, StorageError>
  /**
   * Removes at most `limit` of the deliveries of a team's webhooks received before `before`, and
   * at most `limit` of its payloads as old, queuing their blobs; the larger of the two counts.
   */
  readonly expireDeliveries: (team: TeamUid, before: number, limit: number) => Effect.Effect<number, StorageError>
  /** At most `limit` blob keys queued for removal. */
  readonly blobsToRemove: (limit: number) => Effect.Effect<ReadonlyArray<string>, StorageError>
  /** Forgets queued keys whose blobs are removed. */
  readonly blobsRemoved: (keys: ReadonlyArray<string>) => Effect.Effect<void, StorageError>
}>() {}
