/**
 * A run's live events (`RunEvents.follow`) over a real storage adapter: timeline and conversation
 * events with ids that only grow, the end of the stream with the run, and resuming after an id.
 * Runs are moved as an executor would (`advance`), conversations written with
 * `appendConversation`. Call `runEventsServiceSuite(name, layer)` inside a vitest file.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Chunk, DateTime, Duration, Effect, Fiber, Layer, Option, Schema, Stream } from "effect"
import type { Viewer } from "../src/domain/Access.js"
import type { ConversationOp } from "../src/domain/ConversationLog.js"
import { foldConversation } from "../src/domain/ConversationLog.js"
import { ConversationStep } from "../src/domain/Conversation.js"
import { type ExecutionId, IdsLive, type RunId } from "../src/domain/Ids.js"
import { RunEvent } from "../src/domain/RunStateMachine.js"
import { type EventPosition, resumeFrom, type RunStreamItem, START } from "../src/domain/RunStream.js"
import { RunStore } from "../src/ports/RunStore.js"
import { Followups } from "../src/services/Followups.js"
import { RunEvents } from "../src/services/RunEvents.js"
import { Runs } from "../src/services/Runs.js"
import { advance, createRun, start } from "./FollowupsServiceSuite.js"
import type { Stores } from "./Stores.js"
import { failureOf, seedWorld } from "./World.js"

const T = Date.UTC(2026, 10, 27, 9)

/** The operations of a small exchange in one step: the user's prompt, the agent's answer and a tool call. */
const exchange = (prompt: string, answer: string): Array<ConversationOp> => [
  { op: "step", key: 1, parent: null, id: "s1", at: T },
  { op: "message", key: 1, role: "user", at: T, block: { type: "text", text: prompt } },
  { op: "message", key: 1, role: "assistant", at: T + 1, block: { type: "text", text: answer } },
  { op: "block", key: 1, block: { type: "action", id: "a1", category: "command", name: "run", input: { command: "ls" } } },
  { op: "end", key: 1, summary: "done", at: T + 2 }
]

const follow = (viewer: Viewer, runId: string, from: EventPosition = START) =>
  Effect.flatMap(RunEvents, (events) => events.follow(viewer, runId, from))

/** Every item of a stream, which must end by itself within `seconds`. */
const collect = (stream: Stream.Stream<RunStreamItem, unknown>, seconds = 10) =>
  Stream.runCollect(stream).pipe(
    Effect.map(Chunk.toReadonlyArray),
    Effect.timeoutFail({ duration: Duration.seconds(seconds), onTimeout: () => "the stream did not end" })
  )

const idOf = (item: RunStreamItem) => (item._tag === "End" ? undefined : item.id)

/** Checks that every id is past the one before: neither part goes down, one goes up by one. */
const expectGrowing = (items: ReadonlyArray<RunStreamItem>, from: EventPosition = START) => {
  let last = from
  for (const item of items) {
    const id = idOf(item)
    if (id === undefined) continue
    const next = resumeFrom(id)
    expect(next.timeline).toBeGreaterThanOrEqual(last.timeline)
    expect(next.conversation).toBeGreaterThanOrEqual(last.conversation)
    expect(next.conversation - last.conversation + (next.timeline > last.timeline ? 1 : 0)).toBe(1)
    last = next
  }
}

const summary = (items: ReadonlyArray<RunStreamItem>) =>
  items.map((item) =>
    item._tag === "Timeline" ? `timeline ${item.event.event_type}` : item._tag === "Conversation" ? `conversation ${item.event.op}` : `end ${item.end.state}`
  )

/** Folds the stream's conversation events of one execution back into steps. */
const foldEvents = (items: ReadonlyArray<RunStreamItem>): Array<ConversationStep> =>
  foldConversation(items.flatMap((item): Array<ConversationOp> => {
    if (item._tag !== "Conversation") return []
    const e = item.event
    const at = "at" in e ? DateTime.toEpochMillis(e.at) : 0
    switch (e.op) {
      case "step_started":
        return [{ op: "step", key: e.step, parent: e.parent_step, id: e.id, ...(e.description === undefined ? {} : { description: e.description }), at }]
      case "step_completed":
        return [{ op: "end", key: e.step, ...(e.summary === undefined ? {} : { summary: e.summary }), at }]
      case "message":
        return [{ op: "message", key: e.step, role: e.role, block: e.block, at }]
      case "block":
        return [{ op: "block", key: e.step, block: e.block }]
      case "output":
        return [{ op: "text", key: e.step, text: e.text }]
    }
  }))

const encodeSteps = Schema.encodeSync(Schema.Array(ConversationStep))

/** Registers the run events service suite against one storage adapter's layer. */
export const runEventsServiceSuite = <E>(name: string, storage: Layer.Layer<Stores, E>): void => {
  const services = Layer.mergeAll(RunEvents.Default, Runs.Default, Followups.Default).pipe(
    Layer.provideMerge(Layer.mergeAll(storage, IdsLive))
  )

  describe(`run events service (${name})`, () => {
    layer(services, { excludeTestServices: true, timeout: "60 seconds" })("RunEvents", (it) => {
      it.effect("an ended run sends its timeline, then its conversation, then end, and the stream ends; ids only grow", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const store = yield* RunStore
          const runId = yield* createRun(world.alice, "list the files")
          const execution = yield* start(runId)
          const ops = exchange("list the files", "here they are")
          yield* store.appendConversation(runId, execution, { seq: 1, ops: ops.slice(0, 3) })
          yield* store.appendConversation(runId, execution, { seq: 2, ops: ops.slice(3) })
          yield* advance(runId, RunEvent.Succeed({ executionId: execution }))
          const items = yield* collect(yield* follow(world.bob, runId))
          expect(summary(items)).toEqual([
            "timeline run_created",
            "timeline run_pending",
            "timeline run_queued",
            "timeline run_claimed",
            "timeline run_in_progress",
            "timeline run_succeeded",
            "conversation step_started",
            "conversation message",
            "conversation message",
            "conversation block",
            "conversation step_completed",
            "end SUCCEEDED"
          ])
          expectGrowing(items)
          expect(items.map(idOf).slice(4, 8)).toEqual(["5-0", "6-0", "6-1", "6-2"])
          expect(items.at(-1)).toEqual({ _tag: "End", end: { run_id: runId, state: "SUCCEEDED" } })
          const first = items[6]!
          expect(first._tag === "Conversation" && first.event).toMatchObject({ op: "step_started", execution_id: execution, step: 1, parent_step: null, id: "s1" })
          // The conversation events fold into the conversation the run shows.
          expect(encodeSteps(foldEvents(items))).toEqual(encodeSteps(yield* store.conversation(runId)))
        }))

      it.effect("Last-Event-ID resumes with exactly the events after it, whichever kind it names", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const store = yield* RunStore
          const runId = yield* createRun(world.alice, "again")
          const execution = yield* start(runId)
          yield* store.appendConversation(runId, execution, { seq: 1, ops: exchange("again", "sure") })
          yield* advance(runId, RunEvent.Fail({ executionId: execution, errorCode: "agent_failed", message: "no" }))
          const all = yield* collect(yield* follow(world.alice, runId))
          for (const [i, item] of all.entries()) {
            const id = idOf(item)
            if (id === undefined) continue
            const rest = yield* collect(yield* follow(world.alice, runId, resumeFrom(id)))
            expect(rest, `after ${id}`).toEqual(all.slice(i + 1))
          }
          // The ids of the timeline-only stream (a sequence) resume the timeline, with the whole conversation.
          const legacy = yield* collect(yield* follow(world.alice, runId, resumeFrom("4")))
          expect(summary(legacy).slice(0, 3)).toEqual(["timeline run_in_progress", "timeline run_failed", "conversation step_started"])
          expect(legacy.filter((i) => i._tag === "Conversation")).toHaveLength(5)
        }))

      it.effect("a live run: events arrive as they are recorded; the stream ends after the run's last event", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const store = yield* RunStore
          const runId = yield* createRun(world.alice, "live")
          const stream = yield* follow(world.alice, runId)
          const fiber = yield* Effect.fork(collect(stream, 20))
          const execution = yield* start(runId)
          const ops = exchange("live", "working")
          yield* Effect.sleep("700 millis")
          yield* store.appendConversation(runId, execution, { seq: 1, ops: ops.slice(0, 2) })
          yield* Effect.sleep("700 millis")
          yield* store.appendConversation(runId, execution, { seq: 2, ops: ops.slice(2) })
          expect(Option.isNone(yield* Fiber.poll(fiber))).toBe(true)
          yield* advance(runId, RunEvent.Succeed({ executionId: execution }))
          const items = yield* Fiber.join(fiber)
          expect(summary(items).filter((s) => s.startsWith("conversation"))).toHaveLength(5)
          expect(summary(items)).toContain("timeline run_succeeded")
          expect(summary(items).at(-1)).toBe("end SUCCEEDED")
          expectGrowing(items)
          // A follow-up continues the run: a new stream follows its next execution, after the last id.
          const lastId = items.flatMap((i) => (idOf(i) === undefined ? [] : [idOf(i)!])).at(-1)!
          yield* Effect.flatMap(Followups, (f) => f.send(world.alice, runId, { message: "more" }))
          const next = yield* Effect.fork(collect(yield* follow(world.alice, runId, resumeFrom(lastId)), 20))
          const second = yield* start(runId)
          yield* store.appendConversation(runId, second as ExecutionId, { seq: 1, ops: exchange("more", "done") })
          yield* advance(runId, RunEvent.Succeed({ executionId: second }))
          const more = yield* Fiber.join(next)
          expect(summary(more)[0]).toBe("timeline followup_received")
          expect(more.filter((i) => i._tag === "Conversation")).toHaveLength(5)
          expect(more.some((i) => i._tag === "Conversation" && i.event.execution_id === execution)).toBe(false)
          expectGrowing(more, resumeFrom(lastId))
        }))

      it.effect("only a viewer who can see the run follows it: hidden or unknown 404, a malformed id 400", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const other = yield* seedWorld()
          const runId = yield* createRun(world.alice, "mine", { team: false })
          expect((yield* failureOf(follow(world.bob, runId)))._tag).toBe("ResourceNotFound")
          expect((yield* failureOf(follow(other.alice, runId)))._tag).toBe("ResourceNotFound")
          expect((yield* failureOf(follow(world.alice, "not-a-run")))._tag).toBe("InvalidRequest")
          expect((yield* failureOf(follow(world.alice, "01890a5d-ac96-774b-bcce-b302099a8057" as RunId)))._tag).toBe("ResourceNotFound")
        }))
    })
  })
}
