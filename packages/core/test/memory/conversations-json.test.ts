/**
 * The conversation as streamed JSON text (`Conversations.ofRunJson` and `getJson`) on the
 * in-memory storage: the text of `ofRun` / `get` encoded by the schema, over a conversation of
 * several runs and executions; a later run's steps read only when the text gets to them; a
 * storage failure there ends the text (after its start) with `ResourceUnavailable`, while the
 * checks and the first run's read fail before any text.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Chunk, DateTime, Effect, Either, Layer, Option, Ref, Schedule, Schema, Stream } from "effect"
import type { Viewer } from "../../src/domain/Access.js"
import { ConversationResponse, type ConversationStep } from "../../src/domain/Conversation.js"
import type { ResourceNotFound } from "../../src/domain/Errors.js"
import { type ConversationId, type ExecutionId, IdsLive, type RunId } from "../../src/domain/Ids.js"
import { RunAgentRequest, RunItem } from "../../src/domain/Run.js"
import * as ConversationText from "../../src/services/ConversationText.js"
import { RunEvent } from "../../src/domain/RunStateMachine.js"
import { RunStore } from "../../src/ports/RunStore.js"
import { StorageError } from "../../src/ports/Storage.js"
import { Conversations } from "../../src/services/Conversations.js"
import { Runs } from "../../src/services/Runs.js"
import { opsOf } from "../../testing/ConversationOps.js"
import { memoryBlobStore } from "../../testing/ConversationsServiceSuite.js"
import { advance, createRun, start } from "../../testing/FollowupsServiceSuite.js"
import { memoryStorage } from "../../testing/memory/MemoryStorage.js"
import { uuid } from "../../testing/RunStoreConformance.js"
import { failureOf, seedWorld } from "../../testing/World.js"

/** The store's conversation reads, the runs whose reads fail, and the renderings kept. */
class Reads extends Effect.Service<Reads>()("test/Reads", {
  effect: Effect.map(
    Effect.all([Ref.make<ReadonlyArray<RunId>>([]), Ref.make<ReadonlySet<RunId>>(new Set()), Ref.make(0)]),
    ([made, failing, kept]) => ({ made, failing, kept })
  )
}) {}

/**
 * The memory RunStore, its conversation reads (`conversation`, `executionConversations`) recorded
 * and failing for the runs in `Reads.failing`, and its `keepRendered` writes counted.
 */
const observedStore = Layer.effect(
  RunStore,
  Effect.gen(function*() {
    const store = yield* RunStore
    const reads = yield* Reads
    const observed = <A>(runId: RunId, read: Effect.Effect<A, StorageError>) =>
      Effect.gen(function*() {
        yield* Ref.update(reads.made, (made) => [...made, runId])
        if ((yield* Ref.get(reads.failing)).has(runId)) {
          return yield* new StorageError({ operation: "RunStore.conversation", cause: "the disk is gone" })
        }
        return yield* read
      })
    return RunStore.of({
      ...store,
      conversation: (runId) => observed(runId, store.conversation(runId)),
      executionConversations: (runId) => observed(runId, store.executionConversations(runId)),
      keepRendered: (runId, rendered) => Effect.zipRight(Ref.update(reads.kept, (n) => n + 1), store.keepRendered(runId, rendered))
    })
  })
)

const services = Layer.mergeAll(Conversations.Default, Runs.Default).pipe(
  Layer.provideMerge(observedStore),
  Layer.provideMerge(Layer.mergeAll(memoryStorage, IdsLive, memoryBlobStore, Reads.Default))
)

const T = DateTime.unsafeMake(Date.UTC(2026, 10, 29, 9, 0, 0, 250))

/** A step with `n` messages and a nested step, ended with a summary. */
const step = (id: string, n: number): ConversationStep => ({
  id,
  description: `step ${id}`,
  summary: `${id} done`,
  started_at: T,
  completed_at: T,
  messages: Array.from({ length: n }, (_, i) => ({
    role: i % 3 === 2 ? "tool" as const : "assistant" as const,
    timestamp: T,
    content: i % 3 === 2
      ? [{ type: "action_result" as const, action_id: `${id}-${i}`, category: "files" as const, name: "read", state: "failed" as const, output: { error: "no such file" } }]
      : [{ type: "text" as const, text: `${id}: message ${i}` }, { type: "action" as const, id: `${id}-${i}`, category: "files" as const, name: "read", input: { path: "a \"b\"" } }]
  })),
  steps: [{ id: `${id}.1`, started_at: T, messages: [], steps: [] }]
})

const save = (runId: RunId, execution: ExecutionId, steps: ReadonlyArray<ConversationStep>) =>
  Effect.flatMap(RunStore, (store) => store.appendConversation(runId, execution, { seq: 1, ops: opsOf(steps) }))

const textOf = <E>(text: Stream.Stream<string, E>) => Effect.map(Stream.runCollect(text), (pieces) => Chunk.join(pieces, ""))

const encoded = (response: ConversationResponse) => JSON.stringify(Schema.encodeSync(ConversationResponse)(response))

/** A conversation of two runs: the first with two executions, the second continuing it; answers both ids. */
const twoRuns = (viewer: Viewer) =>
  Effect.gen(function*() {
    const first = yield* createRun(viewer, "start")
    yield* save(first, yield* start(first), [step("a", 700), step("b", 3)])
    // a second execution of the first run (as a follow-up's)
    yield* save(first, uuid<ExecutionId>(), [step("c", 10)])
    const conversationId = (yield* (yield* Conversations).ofRun(viewer, first)).conversation_id
    const second = (yield* (yield* Runs).create(viewer, new RunAgentRequest({ prompt: "go on", conversation_id: conversationId, team: true }))).run_id
    yield* save(second, yield* start(second), [step("d", 400)])
    return { first, second, conversationId }
  })

/** `twoRuns` of a new world's alice, with the services the tests of kept texts use. */
const twoRunsWithServices = Effect.gen(function*() {
  const world = yield* seedWorld()
  const { first } = yield* twoRuns(world.alice)
  return { world, first, conversations: yield* Conversations, store: yield* RunStore, reads: yield* Reads }
})

describe("the conversation as streamed JSON text", () => {
  layer(services, { excludeTestServices: true, timeout: "60 seconds" })("Conversations", (it) => {
    it.effect("is the text of the conversation encoded by its schema, by run and by conversation id", () =>
      Effect.gen(function*() {
        const world = yield* seedWorld()
        const conversations = yield* Conversations
        const { conversationId, first, second } = yield* twoRuns(world.alice)
        const whole = yield* conversations.get(world.bob, conversationId)
        expect(whole.run_ids).toEqual([first, second])
        expect(whole.steps.map((s) => s.id)).toEqual(["a", "b", "c", "d"])
        expect(yield* textOf(yield* conversations.getJson(world.bob, conversationId))).toBe(encoded(whole))
        for (const runId of [first, second]) {
          expect(yield* textOf(yield* conversations.ofRunJson(world.alice, runId))).toBe(encoded(yield* conversations.ofRun(world.alice, runId)))
        }
      }))

    it.effect("reads a later run's steps when the text gets to them, and a failure there ends the text", () =>
      Effect.gen(function*() {
        const world = yield* seedWorld()
        const conversations = yield* Conversations
        const reads = yield* Reads
        const { conversationId, first, second } = yield* twoRuns(world.alice)
        yield* Ref.set(reads.made, [])
        const text = yield* conversations.getJson(world.alice, conversationId)
        expect(yield* Ref.get(reads.made)).toEqual([first])
        yield* textOf(text)
        expect(yield* Ref.get(reads.made)).toEqual([first, second])

        yield* Ref.set(reads.failing, new Set([second]))
        const cut = yield* conversations.getJson(world.alice, conversationId)
        const pieces: Array<string> = []
        const failure = yield* Effect.either(Stream.runForEach(cut, (piece) => Effect.sync(() => pieces.push(piece))))
        expect(Either.isLeft(failure) && failure.left._tag).toBe("ResourceUnavailable")
        const written = pieces.join("")
        expect(written.startsWith(`{"conversation_id":"${conversationId}"`)).toBe(true)
        expect(written).toContain(`"summary":"c done"`)
        expect(() => JSON.parse(written)).toThrow()

        // The first run's read fails before any text: the effect's failure, as a status.
        yield* Ref.set(reads.failing, new Set([first]))
        expect((yield* failureOf(conversations.getJson(world.alice, conversationId)))._tag).toBe("ResourceUnavailable")
        expect((yield* failureOf(conversations.ofRunJson(world.alice, first)))._tag).toBe("ResourceUnavailable")
        yield* Ref.set(reads.failing, new Set())
      }))

    it.effect("an ended run's executions are kept rendered at the first read; a part written after is rendered again", () =>
      Effect.gen(function*() {
        const { conversations, first, reads, store, world } = yield* twoRunsWithServices
        const tags = Effect.map(store.executionConversations(first), (executions) => executions.map((e) => e._tag))
        // The text is kept in the background after the response: waits (at most 5 s) for `n` kept.
        const keptReach = (n: number) =>
          Ref.get(reads.kept).pipe(Effect.repeat({ until: (kept) => kept >= n, schedule: Schedule.spaced("5 millis") }), Effect.timeout("5 seconds"))
        const expected = () => Effect.map(conversations.ofRun(world.alice, first), encoded)
        yield* Ref.set(reads.kept, 0)
        // Running: folded at every read, nothing kept.
        expect(yield* textOf(yield* conversations.ofRunJson(world.alice, first))).toBe(yield* expected())
        expect([yield* tags, yield* Ref.get(reads.kept)]).toEqual([["Folded", "Folded"], 0])

        const execution = Option.getOrThrow(yield* store.get(first)).lease!.execution_id
        yield* advance(first, RunEvent.Succeed({ executionId: execution }))
        const once = yield* textOf(yield* conversations.ofRunJson(world.alice, first))
        expect(once).toBe(yield* expected())
        yield* keptReach(2)
        expect([yield* tags, yield* Ref.get(reads.kept)]).toEqual([["Rendered", "Rendered"], 2])
        // Served as kept: the same text, nothing rendered again.
        expect(yield* textOf(yield* conversations.ofRunJson(world.alice, first))).toBe(once)
        expect(yield* Ref.get(reads.kept)).toBe(2)

        // A late part of the first execution: folded and rendered again, with it.
        const [ended] = (yield* store.conversationLog(first)).map((p) => p.execution_id)
        yield* store.appendConversation(first, ended as ExecutionId, { seq: 2, ops: opsOf([step("late", 1)]) })
        expect(yield* tags).toEqual(["Folded", "Rendered"])
        const again = yield* textOf(yield* conversations.ofRunJson(world.alice, first))
        expect(again).toBe(yield* expected())
        expect(again).toContain(`"summary":"late done"`)
        yield* keptReach(3)
        expect([yield* tags, yield* Ref.get(reads.kept)]).toEqual([["Rendered", "Rendered"], 3])
      }))

    it.effect("a failed run with a debug window open is folded at every read: its debug agent still writes", () =>
      Effect.gen(function*() {
        const { conversations, first, reads, store, world } = yield* twoRunsWithServices
        const run = Option.getOrThrow(yield* store.get(first))
        const execution = run.lease!.execution_id
        const until = DateTime.unsafeMake(Date.now() + 60_000)
        yield* advance(first, RunEvent.Fail({ executionId: execution, errorCode: "environment_setup_failed", message: "setup broke" }))
        const failed = Option.getOrThrow(yield* store.get(first))
        const debugging = { ...failed, item: new RunItem({ ...failed.item, status_message: { message: "debug", session_debug_until: until } }, true) }
        yield* store.update(first, { state: "FAILED" }, debugging, [])
        expect(ConversationText.logsEnded(debugging, Date.now())).toBe(false)
        expect(ConversationText.logsEnded(debugging, DateTime.toEpochMillis(until) + 1)).toBe(true)
        yield* Ref.set(reads.kept, 0)
        expect(yield* textOf(yield* conversations.ofRunJson(world.alice, first))).toBe(encoded(yield* conversations.ofRun(world.alice, first)))
        yield* Effect.sleep("50 millis")
        expect(yield* Ref.get(reads.kept)).toBe(0)
      }))

    it.effect("checks access and existence before any text: hidden, unknown and never-started are 404", () =>
      Effect.gen(function*() {
        const world = yield* seedWorld()
        const conversations = yield* Conversations
        const mine = yield* createRun(world.alice, "private", { team: false })
        yield* save(mine, yield* start(mine), [step("a", 2)])
        const conversationId = (yield* conversations.ofRun(world.alice, mine)).conversation_id as ConversationId
        const hidden = yield* failureOf(conversations.ofRunJson(world.bob, mine))
        expect([hidden._tag, (hidden as ResourceNotFound).resource]).toEqual(["ResourceNotFound", "run"])
        const hiddenById = yield* failureOf(conversations.getJson(world.bob, conversationId))
        expect([hiddenById._tag, (hiddenById as ResourceNotFound).resource]).toEqual(["ResourceNotFound", "conversation"])
        const queued = yield* createRun(world.alice)
        const never = yield* failureOf(conversations.ofRunJson(world.alice, queued))
        expect([never._tag, (never as ResourceNotFound).resource]).toEqual(["ResourceNotFound", "conversation"])
        // started with nothing saved yet: an empty conversation
        const running = yield* createRun(world.alice)
        yield* start(running)
        const empty = JSON.parse(yield* textOf(yield* conversations.ofRunJson(world.alice, running)))
        expect(empty.steps).toEqual([])
      }))
  })
})
