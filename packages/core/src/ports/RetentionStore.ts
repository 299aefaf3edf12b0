/**
 * Port: removing what is past its retention (docs/retention.md), in bounded batches, and the queue
 * of blobs that removed rows leave behind.
 *
 * Rows and blobs cannot change in one transaction, so removal is two steps that cannot orphan
 * either: the transaction that removes rows queues the keys of their blobs (`blobsToRemove`); the
 * sweeper removes the queued blobs, then forgets their keys. A crash in between leaves keys queued,
 * and removing a blob that is gone already is a no-op.
 */
import type { Effect } from "effect"
import { Context } from "effect"
import type { PrincipalUid, RunId, TeamUid } from "../domain/Ids.js"
import type { RunState } from "../domain/RunState.js"
import type { StaleWrite, StorageError } from "./Storage.js"

export class RetentionStore extends Context.Tag("@agent-runs/core/RetentionStore")<RetentionStore, {
  /**
   * Removes at most `limit` of a team's ended runs (SUCCEEDED, FAILED, BLOCKED, ERROR, CANCELLED)
   * last changed before `before` and with no ancestor still kept (its spend counts in their
   * budgets), oldest first, with everything the database holds of them
   * (timeline, conversation, artifacts, metadata, follow-ups, their outbound webhook deliveries),
   * and queues their blobs (`runBlobKeys`); how many runs it removed. A run that changes meanwhile
   * (a follow-up takes it up again) is left alone.
   */
  readonly expireRuns: (team: TeamUid, before: number, limit: number) => Effect.Effect<number, StorageError>
  /**
   * Removes one ended run now, whatever its age, as `expireRuns` removes runs (in the caller's
   * transaction when one is open: the audit entry of the deletion commits with it); the keys of
   * the blobs it queued. `StaleWrite` (and nothing written) when it is not there, not ended, or
   * has an ancestor still kept.
   */
  readonly removeRun: (runId: RunId) => Effect.Effect<ReadonlyArray<string>, StaleWrite | StorageError>
  /**
   * Removes at most `limit` of the deliveries of a team's webhooks received before `before`, and
   * at most `limit` of its payloads as old, queuing their blobs; the larger of the two counts.
   */
  readonly expireDeliveries: (team: TeamUid, before: number, limit: number) => Effect.Effect<number, StorageError>
  /** The runs a principal created, in every team, by id after `after`, at most `limit`, with their states. */
  readonly runsCreatedBy: (
    principal: PrincipalUid,
    after: RunId | undefined,
    limit: number
  ) => Effect.Effect<ReadonlyArray<{ readonly run_id: RunId; readonly state: RunState }>, StorageError>
  /** The runs a principal executed as (an agent identity), in every team, as `runsCreatedBy` pages. */
  readonly runsExecutedBy: (
    principal: PrincipalUid,
    after: RunId | undefined,
    limit: number
  ) => Effect.Effect<ReadonlyArray<{ readonly run_id: RunId; readonly state: RunState }>, StorageError>
  /** At most `limit` blob keys queued for removal. */
  readonly blobsToRemove: (limit: number) => Effect.Effect<ReadonlyArray<string>, StorageError>
  /** Forgets queued keys whose blobs are removed. */
  readonly blobsRemoved: (keys: ReadonlyArray<string>) => Effect.Effect<void, StorageError>
  /** Puts keys whose blobs could not be removed at the back of the queue, so that they do not hold the others up. */
  readonly blobsDeferred: (keys: ReadonlyArray<string>) => Effect.Effect<void, StorageError>
}>() {}
