/**
 * The events of a run's live stream (`GET /agent/runs/{runId}/events`, docs/reference/api.md): its
 * timeline events and its conversation as it grows, then the end of the run.
 *
 * Decisions:
 * - A conversation event is one operation of the run's conversation log (ConversationLog.ts), in
 *   the order the log holds them (executions in order, each execution's operations in order),
 *   with the execution it belongs to and its times as ISO dates: folding them in order gives the
 *   conversation `GET …/conversation` shows. `step` is the step's number in its execution (ids
 *   chosen by agents may repeat; numbers do not).
 * - Ids: `T-C`, where T is the sequence of the latest timeline event sent and C the number of
 *   conversation events sent, both counted from the run's start. Each event's id is the position
 *   after it, so ids only grow (one part grows by one at each event, the other stays), and
 *   `Last-Event-ID: T-C` resumes with exactly the events after it. A bare number `T` (the ids of
 *   the timeline-only stream) resumes after timeline event T with the whole conversation.
 * - The run's end: once the run is in an ended state, the stream sends what remains and `end`.
 */
import { DateTime, Schema } from "effect"
import { ContentBlock, MessageRole } from "./Conversation.js"
import type { ConversationOp } from "./ConversationLog.js"
import { Timestamp } from "./Common.js"
import type { TimelineEvent } from "./Timeline.js"
import { RunState } from "./RunState.js"

/** Where a stream stands: the latest timeline sequence and the number of conversation events sent. */
export interface EventPosition {
  readonly timeline: number
  readonly conversation: number
}

export const START: EventPosition = { timeline: 0, conversation: 0 }

/** The SSE id of a position. */
export const eventId = (position: EventPosition): string => `${position.timeline}-${position.conversation}`

/** The position to resume after from `Last-Event-ID` (absent or unreadable: the start). */
export const resumeFrom = (lastEventId: string | undefined): EventPosition => {
  const text = lastEventId?.trim() ?? ""
  const pair = /^(\d{1,15})-(\d{1,15})$/.exec(text)
  if (pair !== null) return { timeline: Number(pair[1]), conversation: Number(pair[2]) }
  if (/^\d{1,15}$/.test(text)) return { timeline: Number(text), conversation: 0 }
  return START
}

const at = { at: Timestamp }
const base = { execution_id: Schema.String, step: Schema.Int }

/** One operation of the conversation, as the stream sends it (`event: conversation`). */
export const ConversationEvent = Schema.Union(
  Schema.Struct({
    op: Schema.Literal("step_started"),
    ...base,
    parent_step: Schema.NullOr(Schema.Int),
    id: Schema.String,
    description: Schema.optional(Schema.String),
    ...at
  }),
  Schema.Struct({ op: Schema.Literal("step_completed"), ...base, summary: Schema.optional(Schema.String), ...at }),
  Schema.Struct({ op: Schema.Literal("message"), ...base, role: MessageRole, block: ContentBlock, ...at }),
  Schema.Struct({ op: Schema.Literal("block"), ...base, block: ContentBlock }),
  Schema.Struct({ op: Schema.Literal("output"), ...base, text: Schema.String })
).annotations({ identifier: "ConversationEvent" })
export type ConversationEvent = typeof ConversationEvent.Type

const date = (millis: number) => DateTime.unsafeMake(Number.isFinite(millis) && Math.abs(millis) <= 8.64e15 ? millis : 0)

/** The stream's form of an operation of `executionId`'s log. */
export const conversationEvent = (executionId: string, op: ConversationOp): ConversationEvent => {
  const execution_id = executionId
  switch (op.op) {
    case "step":
      return {
        op: "step_started",
        execution_id,
        step: op.key,
        parent_step: op.parent,
        id: op.id,
        ...(op.description === undefined ? {} : { description: op.description }),
        at: date(op.at)
      }
    case "end":
      return { op: "step_completed", execution_id, step: op.key, ...(op.summary === undefined ? {} : { summary: op.summary }), at: date(op.at) }
    case "message":
      return { op: "message", execution_id, step: op.key, role: op.role, block: op.block, at: date(op.at) }
    case "block":
      return { op: "block", execution_id, step: op.key, block: op.block }
    case "text":
      return { op: "output", execution_id, step: op.key, text: op.text }
  }
}

/** The `event: end` of a stream: the run ended in `state`. */
export const RunStreamEnd = Schema.Struct({ run_id: Schema.String, state: RunState }).annotations({ identifier: "RunStreamEnd" })
export type RunStreamEnd = typeof RunStreamEnd.Type

/** What a run's stream carries, each event with its id (the position after it). */
export type RunStreamItem =
  | { readonly _tag: "Timeline"; readonly id: string; readonly event: TimelineEvent }
  | { readonly _tag: "Conversation"; readonly id: string; readonly event: ConversationEvent }
  | { readonly _tag: "End"; readonly end: RunStreamEnd }
