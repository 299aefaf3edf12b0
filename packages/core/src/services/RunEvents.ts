/**
 * A run's live events (`GET /agent/runs/{runId}/events`; the events and their ids:
 * domain/RunStream.ts): its timeline events and its conversation as they are recorded, after a
 * position, until the run ends.
 *
 * Decisions:
 * - Storage is read at once, then every `FOLLOW_POLL` and at each store wake-up: the run's state
 *   first, then its timeline after the position, then its conversation log after it. The timeline
 *   events of one read are sent before its conversation events.
 * - An execution saves its conversation before its outcome is recorded, so a read that finds the
 *   run ended finds after it everything the run will have: the stream sends that, then `end`
 *   (`{run_id, state}`), and ends. A run ended before the stream opened sends what it has after the
 *   position, then `end`. A follow-up that continues the run later needs a new stream.
 * - A position beyond what is recorded sends only what comes past it.
 * - Only a viewer who can see the run may follow it (404 otherwise, as `GET /agent/runs/{runId}`);
 *   the transport re-checks access while the stream is open (packages/http EventStreams.ts).
 */
import { Effect, Option, Stream } from "effect"
import type { Viewer } from "../domain/Access.js"
import type { EventPosition, RunStreamItem } from "../domain/RunStream.js"
import { conversationEvent, eventId } from "../domain/RunStream.js"
import { requireVisibleRun } from "../domain/RunRecords.js"
import { isTerminal } from "../domain/RunState.js"
import { storageUnavailable } from "../internal/Services.js"
import { type LogPosition, RunStore } from "../ports/RunStore.js"

/** How often a stream reads storage between the store's wake-ups. */
export const FOLLOW_POLL = "500 millis"

export class RunEvents extends Effect.Service<RunEvents>()("@agent-runs/core/RunEvents", {
  effect: Effect.gen(function* () {
    const store = yield* RunStore

    /** The events of a run the viewer can see after `from`, as they are recorded, until the run ends. */
    const follow = Effect.fn("RunEvents.follow")(
      function* (viewer: Viewer, rawId: string, from: EventPosition) {
        const runId = (yield* requireVisibleRun(store, viewer, rawId)).item.run_id
        let timeline = from.timeline
        let conversation = from.conversation
        // Conversation events already sent (a resumed stream), counted from the log's start.
        let skip = from.conversation
        let logAfter: LogPosition | undefined
        const read = Effect.gen(function* () {
          const run = yield* store.get(runId)
          const items: Array<RunStreamItem> = []
          for (const event of yield* store.timeline(runId, timeline)) {
            timeline = event.sequence
            items.push({ _tag: "Timeline", id: eventId({ timeline, conversation }), event })
          }
          for (const part of yield* store.conversationLog(runId, logAfter)) {
            for (const op of part.ops) {
              if (skip > 0) {
                skip--
                continue
              }
              conversation += 1
              items.push({ _tag: "Conversation", id: eventId({ timeline, conversation }), event: conversationEvent(part.execution_id, op) })
            }
            logAfter = { ordinal: part.ordinal, seq: part.seq }
          }
          const ended = Option.isNone(run) || isTerminal(run.value.item.state)
          if (ended) items.push({ _tag: "End", end: { run_id: runId, state: Option.match(run, { onNone: () => "ERROR" as const, onSome: (r) => r.item.state }) } })
          return { items, ended }
        })
        const ticks = Stream.merge(
          Stream.concat(Stream.succeed(undefined), Stream.tick(FOLLOW_POLL)),
          Stream.catchAll(store.wakeups, () => Stream.empty)
        )
        return ticks.pipe(
          Stream.mapEffect(() => read, { concurrency: 1 }),
          Stream.takeUntil((batch) => batch.ended),
          Stream.flatMap((batch) => Stream.fromIterable(batch.items)),
          Stream.catchTag("StorageError", (error) => Stream.fromEffect(storageUnavailable(Effect.fail(error))))
        )
      },
      storageUnavailable
    )

    return { follow } as const
  })
}) {}
