/**
 * A run's timeline (docs/reference/run-lifecycle.md, `GET /agent/runs/{runId}/timeline`): its setup and lifecycle
 * events in order. `sequence` starts at 1 and strictly increases per run; `message` and `data`
 * are omitted when an event has none.
 */
import { Schema } from "effect"
import { JsonObject, Timestamp } from "./Common.js"
import { ExecutionId, RunId } from "./Ids.js"

/** Every timeline event type. */
export const TimelineEventType = Schema.Literal(
  "run_created",
  "run_pending",
  "run_queued",
  "run_claimed",
  "environment_setup_started",
  "environment_setup_succeeded",
  "environment_setup_failed",
  "run_in_progress",
  "followup_received",
  "debug_session_started",
  "run_blocked",
  "run_succeeded",
  "run_failed",
  "run_errored",
  "run_cancelled",
  "lease_expired",
  "handed_over",
  "requeued"
)
export type TimelineEventType = typeof TimelineEventType.Type

// A set, not `Schema.is`: about 15 ns an event instead of 1 µs, on every timeline read.
const knownEventTypes: ReadonlySet<string> = new Set(TimelineEventType.literals)

/**
 * Whether this release knows an event type: a later release's (written by its replicas during a
 * rolling deploy, or before a rollback) is left out of what this one reads and sends.
 */
export const isKnownEventType = (type: string): type is TimelineEventType => knownEventTypes.has(type)

/** One timeline event; `execution_id` is the execution (first run or follow-up continuation) it belongs to. */
export const TimelineEvent = Schema.Struct({
  sequence: Schema.Int.pipe(Schema.greaterThanOrEqualTo(1)),
  event_type: TimelineEventType,
  occurred_at: Timestamp,
  execution_id: ExecutionId,
  message: Schema.optional(Schema.String),
  data: Schema.optional(JsonObject)
}).annotations({ identifier: "TimelineEvent" })
export type TimelineEvent = typeof TimelineEvent.Type

/** GetRunTimelineResponse: the events of one run in `sequence` order. */
export class RunTimeline extends Schema.Class<RunTimeline>("RunTimeline")({
  run_id: RunId,
  events: Schema.Array(TimelineEvent)
}) {}
