/**
 * The conversations service (`Conversations`) over a real storage adapter: a run's conversation
 * across its executions, a conversation by id, where a run's raw transcript is, and the run
 * behind an external reference, with the caller's access checked. Conversations are seeded with
 * `appendConversation`, artifacts with `addArtifact`, transcripts in an in-memory BlobStore (the
 * file-system adapter has its own tests). Call `conversationsServiceSuite(name, layer)` inside a
 * vitest file.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Chunk, DateTime, Effect, Layer, Option, Ref, Schedule, Schema, Stream } from "effect"
import type { Viewer } from "../src/domain/Access.js"
import type { Artifact } from "../src/domain/Artifact.js"
import { ConversationResponse, ConversationStep } from "../src/domain/Conversation.js"
import { transcriptKey } from "../src/domain/BlobKeys.js"
import { Conversations } from "../src/services/Conversations.js"
import type { InvalidRequest, ResourceNotFound } from "../src/domain/Errors.js"
import { Followups } from "../src/services/Followups.js"
import { type ConversationId, type ExecutionId, IdsLive, type RunId } from "../src/domain/Ids.js"
import { BlobStore } from "../src/ports/BlobStore.js"
import { RunStore } from "../src/ports/RunStore.js"
import { RunFollowupRequest } from "../src/domain/Run.js"
import { RunEvent } from "../src/domain/RunStateMachine.js"
import { Runs } from "../src/services/Runs.js"
import { opsOf } from "./ConversationOps.js"
import { advance, createRun, start } from "./FollowupsServiceSuite.js"
import { uid, uuid } from "./RunStoreConformance.js"
import type { Stores } from "./Stores.js"
import { failureOf, seedWorld } from "./World.js"

/** A BlobStore in memory, for the suite (the file-system one is tested on its own). */
export const memoryBlobStore = Layer.effect(
  BlobStore,
  Effect.map(Ref.make(new Map<string, Uint8Array>()), (blobs) =>
    BlobStore.of({
      append: (key, bytes) =>
        Ref.update(blobs, (m) => {
          const old = m.get(key) ?? new Uint8Array(0)
          const joined = new Uint8Array(old.byteLength + bytes.byteLength)
          joined.set(old)
          joined.set(bytes, old.byteLength)
          return new Map(m).set(key, joined)
        }),
      appendAt: (key, offset, bytes) =>
        Ref.modify(blobs, (m) => {
          const old = m.get(key) ?? new Uint8Array(0)
          const tail = bytes.subarray(Math.min(Math.max(old.byteLength - offset, 0), bytes.byteLength))
          const joined = new Uint8Array(old.byteLength + tail.byteLength)
          joined.set(old)
          joined.set(tail, old.byteLength)
          return [joined.byteLength, new Map(m).set(key, joined)]
        }),
      size: (key) => Effect.map(Ref.get(blobs), (m) => m.get(key)?.byteLength ?? 0),
      put: (key, bytes) => Ref.update(blobs, (m) => new Map(m).set(key, bytes)),
      read: (key) =>
        Effect.map(Ref.get(blobs), (m) => Option.map(Option.fromNullable(m.get(key)), (bytes) => Stream.make(bytes))),
      remove: (key) =>
        Ref.modify(blobs, (m) => {
          const next = new Map(m)
          return [next.delete(key), next]
        })
    }))
)

/** The text of a run's transcript in the BlobStore ("" when it has none). */
export const transcriptText = (runId: RunId) =>
  Effect.gen(function*() {
    const blob = yield* (yield* BlobStore).read(transcriptKey(runId))
    if (Option.isNone(blob)) return ""
    const chunks = Chunk.toReadonlyArray(yield* Stream.runCollect(blob.value))
    return chunks.map((c) => new TextDecoder().decode(c)).join("")
  })

const T = DateTime.unsafeMake(Date.UTC(2026, 10, 2, 10, 0, 0, 123))

const step = (id: string, text: string): ConversationStep => ({
  id,
  description: `step ${id}`,
  started_at: T,
  messages: [
    { role: "user", timestamp: T, content: [{ type: "text", text: `please ${text}` }] },
    {
      role: "assistant",
      timestamp: T,
      content: [
        { type: "text", text },
        { type: "action", id: `${id}-a`, category: "command", name: "run", input: { command: "npm test" } },
        { type: "action_result", action_id: `${id}-a`, category: "command", name: "run", state: "completed", output: "ok" }
      ]
    }
  ],
  steps: [{ id: `${id}.1`, started_at: T, messages: [], steps: [] }]
})

const encodeSteps = Schema.encodeSync(Schema.Array(ConversationStep))

/** Appends `steps` as part `seq` of the execution's conversation log (step keys after `firstKey`). */
const save = (runId: RunId, execution: ExecutionId, steps: ReadonlyArray<ConversationStep>, seq = 1, firstKey = 1) =>
  Effect.flatMap(RunStore, (store) => store.appendConversation(runId, execution, { seq, ops: opsOf(steps, firstKey) }))

const conversationIdOf = (runId: RunId) =>
  Effect.flatMap(RunStore, (store) => store.get(runId)).pipe(
    Effect.map((run) => Option.getOrThrow(run).item.conversation_id as ConversationId)
  )

const externalReference = (url: string): Artifact => ({
  artifact_type: "EXTERNAL_REFERENCE",
  created_at: DateTime.unsafeMake(Date.now()),
  data: { url }
})

const reportReference = (runId: RunId, url: string) =>
  Effect.flatMap(RunStore, (store) => store.addArtifact(runId, externalReference(url)))

const byReference = (viewer: Viewer, url: string | undefined) =>
  Effect.flatMap(Conversations, (c) => c.runByExternalReference(viewer, url))

/** A started run with one saved step; answers its id and execution. */
const startedWithConversation = (viewer: Viewer, options: { readonly team?: boolean } = {}) =>
  Effect.gen(function* () {
    const runId = yield* createRun(viewer, "work", options)
    const execution = yield* start(runId)
    yield* save(runId, execution, [step("s1", "first")])
    return { runId, execution }
  })

/** Registers the conversations service suite against one storage adapter's layer. */
export const conversationsServiceSuite = <E>(name: string, storage: Layer.Layer<Stores, E>): void => {
  const services = Layer.mergeAll(Conversations.Default, Followups.Default, Runs.Default).pipe(
    Layer.provideMerge(Layer.mergeAll(storage, IdsLive, memoryBlobStore))
  )

  describe(`conversations service (${name})`, () => {
    layer(services, { excludeTestServices: true, timeout: "60 seconds" })("Conversations", (it) => {
      it.effect("a run's conversation: its saved steps, its conversation id and the run", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const conversations = yield* Conversations
          const { runId } = yield* startedWithConversation(world.alice)
          const conversationId = yield* conversationIdOf(runId)
          const response = yield* conversations.ofRun(world.bob, runId)
          expect(response.conversation_id).toBe(conversationId)
          expect(response.run_ids).toEqual([runId])
          expect(encodeSteps(response.steps)).toEqual(encodeSteps([step("s1", "first")]))
          // by its conversation id, the same (viewers read too)
          const byId = yield* conversations.get(world.viewer, conversationId)
          expect(byId.conversation_id).toBe(conversationId)
          expect(encodeSteps(byId.steps)).toEqual(encodeSteps(response.steps))
        }))

      it.effect("a started run with nothing saved yet has an empty conversation; one that never started has none (404)", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const conversations = yield* Conversations
          const queued = yield* createRun(world.alice)
          const missing = yield* failureOf(conversations.ofRun(world.alice, queued))
          expect(missing._tag).toBe("ResourceNotFound")
          expect((missing as ResourceNotFound).resource).toBe("conversation")
          const byId = yield* failureOf(conversations.get(world.alice, yield* conversationIdOf(queued)))
          expect((byId as ResourceNotFound).resource).toBe("conversation")
          const running = yield* createRun(world.alice)
          yield* start(running)
          expect((yield* conversations.ofRun(world.alice, running)).steps).toEqual([])
        }))

      it.effect("a conversation spans every execution of its run, in execution order", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const conversations = yield* Conversations
          const { execution: first, runId } = yield* startedWithConversation(world.alice)
          yield* advance(runId, RunEvent.Succeed({ executionId: first }))
          const continued = yield* Effect.flatMap(Followups, (f) =>
            f.send(world.alice, runId, new RunFollowupRequest({ message: "now part two" })))
          expect(continued.route).toBe("new_execution")
          const second = yield* start(runId)
          yield* save(runId, second, [step("s2", "second")])
          // the first execution's conversation appended to later keeps its place
          yield* save(runId, first, [step("s1b", "first, more")], 2, 3)
          const expected = encodeSteps([step("s1", "first"), step("s1b", "first, more"), step("s2", "second")])
          const ofRun = yield* conversations.ofRun(world.alice, runId)
          expect(encodeSteps(ofRun.steps)).toEqual(expected)
          expect(ofRun.run_ids).toEqual([runId])
          const byId = yield* conversations.get(world.alice, yield* conversationIdOf(runId))
          expect(encodeSteps(byId.steps)).toEqual(expected)
          expect(byId.conversation_id).toBe(ofRun.conversation_id)
        }))

      it.effect("an ended run's conversation text is kept at its first read and read the same; a late part is in the next", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const conversations = yield* Conversations
          const store = yield* RunStore
          const { execution, runId } = yield* startedWithConversation(world.alice)
          yield* advance(runId, RunEvent.Succeed({ executionId: execution }))
          const text = Effect.flatMap(conversations.ofRunJson(world.alice, runId), (pieces) =>
            Effect.map(Stream.runCollect(pieces), (all) => Chunk.join(all, "")))
          const encoded = Effect.map(conversations.ofRun(world.alice, runId), (r) => JSON.stringify(Schema.encodeSync(ConversationResponse)(r)))
          const kept = Effect.map(store.executionConversations(runId), (all) => all.every((e) => e._tag === "Rendered"))
          // The text is kept in the background after the last piece: waits for it (at most 5 s).
          const keptNow = kept.pipe(Effect.repeat({ until: (done) => done, schedule: Schedule.spaced("10 millis") }), Effect.timeout("5 seconds"))
          const first = yield* text
          expect(first).toBe(yield* encoded)
          yield* keptNow
          expect(yield* text).toBe(first)

          yield* save(runId, execution, [step("late", "a late line")], 2, 3)
          expect(yield* kept).toBe(false)
          const withLate = yield* text
          expect(withLate).toBe(yield* encoded)
          expect(withLate).toContain("a late line")
          yield* keptNow
          expect(yield* text).toBe(withLate)
        }))

      it.effect("hidden and unknown runs and conversations are 404, a malformed run id 400", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const other = yield* seedWorld()
          const conversations = yield* Conversations
          const { runId } = yield* startedWithConversation(world.alice, { team: false })
          const conversationId = yield* conversationIdOf(runId)
          for (const viewer of [world.bob, world.viewer, other.admin]) {
            const ofRun = yield* failureOf(conversations.ofRun(viewer, runId))
            expect([ofRun._tag, (ofRun as ResourceNotFound).resource]).toEqual(["ResourceNotFound", "run"])
            const byId = yield* failureOf(conversations.get(viewer, conversationId))
            expect([byId._tag, (byId as ResourceNotFound).resource]).toEqual(["ResourceNotFound", "conversation"])
          }
          expect((yield* conversations.ofRun(world.admin, runId)).run_ids).toEqual([runId])
          expect((yield* failureOf(conversations.ofRun(world.alice, uuid())))._tag).toBe("ResourceNotFound")
          expect((yield* failureOf(conversations.get(world.alice, uuid<ConversationId>())))._tag).toBe("ResourceNotFound")
          const malformed = yield* failureOf(conversations.ofRun(world.alice, "run-1"))
          expect([malformed._tag, (malformed as InvalidRequest).field]).toEqual(["InvalidRequest", "runId"])
        }))

      it.effect("transcript: the blob key of a visible run's transcript once it exists, by run or conversation", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const other = yield* seedWorld()
          const conversations = yield* Conversations
          const blobs = yield* BlobStore
          const { runId } = yield* startedWithConversation(world.alice, { team: false })
          const conversationId = yield* conversationIdOf(runId)
          expect(transcriptKey(runId)).toBe(`transcripts/${runId}.jsonl`)
          const none = yield* failureOf(conversations.transcript(world.alice, { runId }))
          expect([none._tag, (none as ResourceNotFound).resource]).toEqual(["ResourceNotFound", "transcript"])
          const noneById = yield* failureOf(conversations.transcript(world.alice, { conversationId }))
          expect((noneById as ResourceNotFound).resource).toBe("transcript")

          yield* blobs.append(transcriptKey(runId), new TextEncoder().encode("{\"type\":\"message\"}\n"))
          const location = { run_id: runId, key: `transcripts/${runId}.jsonl` }
          expect(yield* conversations.transcript(world.alice, { runId })).toEqual(location)
          expect(yield* conversations.transcript(world.admin, { conversationId })).toEqual(location)
          // hidden: 404 of the run (or conversation), whether or not a transcript exists
          for (const viewer of [world.bob, other.admin]) {
            const hidden = yield* failureOf(conversations.transcript(viewer, { runId }))
            expect([hidden._tag, (hidden as ResourceNotFound).resource]).toEqual(["ResourceNotFound", "run"])
            const hiddenById = yield* failureOf(conversations.transcript(viewer, { conversationId }))
            expect((hiddenById as ResourceNotFound).resource).toBe("conversation")
          }
          expect((yield* failureOf(conversations.transcript(world.alice, { runId: uuid() })))._tag).toBe(
            "ResourceNotFound"
          )
          const malformed = yield* failureOf(conversations.transcript(world.alice, { runId: "x" }))
          expect((malformed as InvalidRequest).field).toBe("runId")
        }))

      it.effect("external reference: the visible run that reported the url, the latest report first", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const url = `https://tracker.example/issues/${uid()}`
          const older = yield* createRun(world.alice, "older")
          const newer = yield* createRun(world.bob, "newer")
          yield* reportReference(older, url)
          const found = yield* byReference(world.bob, url)
          expect(found.run_id).toBe(older)
          expect(found.artifacts.map((a) => a.artifact_type)).toEqual(["EXTERNAL_REFERENCE"])
          yield* Effect.sleep("5 millis")
          yield* reportReference(newer, url)
          expect((yield* byReference(world.viewer, url)).run_id).toBe(newer)
          expect((yield* byReference(world.alice, url)).run_id).toBe(newer)
        }))

      it.effect("external reference: another team's run, or a run hidden in the team, is a 404 like no run at all", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const other = yield* seedWorld()
          const url = `https://github.example/acme/app/pull/${uid()}`
          const mine = yield* createRun(world.alice, "private", { team: false })
          yield* reportReference(mine, url)
          const unknown = yield* failureOf(byReference(world.alice, `${url}/nothing`))
          for (const viewer of [world.bob, world.viewer, other.admin]) {
            const hidden = yield* failureOf(byReference(viewer, url))
            expect(hidden._tag).toBe("ResourceNotFound")
            expect(hidden.message).toBe(unknown.message)
          }
          expect((yield* byReference(world.alice, url)).run_id).toBe(mine)
          expect((yield* byReference(world.admin, url)).run_id).toBe(mine)
          // another team reporting the same url later does not hide the first team's run
          const theirs = yield* createRun(other.alice, "theirs")
          yield* Effect.sleep("5 millis")
          yield* reportReference(theirs, url)
          expect((yield* byReference(world.alice, url)).run_id).toBe(mine)
          expect((yield* byReference(other.bob, url)).run_id).toBe(theirs)
        }))

      it.effect("external reference: the url is required and at most 2048 characters (400 naming url)", () =>
        Effect.gen(function* () {
          const world = yield* seedWorld()
          const longest = `https://x.example/${"a".repeat(2048 - 18)}`
          expect(longest).toHaveLength(2048)
          const run = yield* createRun(world.alice)
          yield* reportReference(run, longest)
          expect((yield* byReference(world.alice, longest)).run_id).toBe(run)
          for (const url of [undefined, "", `${longest}b`]) {
            const error = yield* failureOf(byReference(world.alice, url))
            expect(error._tag).toBe("InvalidRequest")
            expect((error as InvalidRequest).field).toBe("url")
          }
        }))
    })
  })
}
