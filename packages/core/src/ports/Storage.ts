/**
 * What every storage port shares: its failures, and the exactly-once keys written in the same
 * transaction as the runs they create.
 */
import { Data } from "effect"
import type { Delivery } from "../domain/Webhook.js"
import type { RunId, ScheduleId, WebhookUid } from "../domain/Ids.js"
import type { RunState } from "../domain/RunState.js"

/** The storage itself failed (connection, constraint the caller could not foresee, corruption). */
export class StorageError extends Data.TaggedError("StorageError")<{
  readonly operation: string
  readonly cause: unknown
}> {}

/** A conditional write lost: the row changed since it was read, or its lease token is no longer current. */
export class StaleWrite extends Data.TaggedError("StaleWrite")<{
  readonly what: string
}> {}

/**
 * An exactly-once key was already taken: the tick was fired, or the delivery was seen, before.
 * `holder`, when the store knows it, is the run written under the key then (a cron tick's first run).
 */
export class DuplicateKey extends Data.TaggedError("DuplicateKey")<{
  readonly key: ExactlyOnceKey
  readonly holder?: KeyHolder | undefined
}> {}

/** The run written under an exactly-once key, and its state now. */
export interface KeyHolder {
  readonly run_id: RunId
  readonly state: RunState
}

/**
 * A key that makes run creation happen at most once: a cron tick (schedule id, scheduled time), or
 * a webhook delivery (webhook uid, delivery identity, and for a signed delivery the key of its
 * signed content) together with its log entry. A delivery is a duplicate when either key was taken.
 */
export type ExactlyOnceKey =
  | { readonly _tag: "ScheduleTick"; readonly schedule_id: ScheduleId; readonly scheduled_for: number }
  | {
    readonly _tag: "Delivery"
    readonly webhook_uid: WebhookUid
    readonly identity: string
    readonly content_key?: string | undefined
    readonly delivery: Delivery
  }

/** The exactly-once key of a cron tick: (schedule id, scheduled time in epoch ms). */
export type ScheduleTickKey = Extract<ExactlyOnceKey, { readonly _tag: "ScheduleTick" }>
