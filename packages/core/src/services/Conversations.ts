/**
 * Reading what runs produced (docs/reference/api.md): a run's normalized conversation, a conversation
 * by its id, where a run's raw transcript is, and the run behind an external reference.
 *
 * Decisions:
 * - A run's conversation is saved per execution and shown as one, in execution order; a run with
 *   no saved conversation (it never started) is a 404 `conversation` on both conversation
 *   endpoints. Follow-ups continue the same run and conversation; a run created with
 *   `conversation_id` continues that conversation in a run of its own. A conversation by id is
 *   the runs of it the caller can see, oldest first (`run_ids`), their steps one after the
 *   other; by run, the run's own steps. Its transcript is the newest such run's that has one.
 * - The raw transcript of a run is one blob per run, `transcripts/<run_id>.jsonl`, to which every
 *   execution appends what its agent printed; `transcriptKey` is where executors write and the
 *   download route reads. No blob yet: 404 `transcript`. Every conversation format this service
 *   produces has a raw transcript, so the documented 422 never arises here.
 * - The conversation is also answered as its JSON text in pieces (`ofRunJson`, `getJson`), for the
 *   HTTP endpoints to stream: the same text as `ofRun` / `get` encoded by the schema
 *   (ConversationJson.ts). Access, existence (404) and the first run's read are checked before the
 *   text starts; each later run of a conversation is read when the text gets to it, so at most one
 *   run's steps (or kept texts) are held at a time. A run's steps are held whole: the storage port folds a run's
 *   log into steps, and a step's text cannot start before its log is read to its end (its
 *   `summary` and `completed_at` come first in the text but last in the log; its messages come
 *   before its nested steps in the text but interleave with them in the log).
 * - Once a run has ended, the first read of its conversation's JSON keeps each execution's text
 *   (`RunStore.keepRendered`, ConversationText.ts), and later reads write that text as stored: no
 *   fold, no encoding. Storage serves a kept text only while it is of every part of the
 *   execution's log and of the current `RENDERED_STEPS_SHAPE`; a part that arrives later (a late
 *   write of a cancelled agent) makes the next read fold and keep again. So a read, by any role
 *   that may see the run, may write.
 * - `transcript` answers the run and the blob key of its transcript (`{run_id, key}`); the
 *   transport turns it into a signed download URL. A run the caller cannot see is a 404 `run`
 *   (or `conversation`) whether or not a transcript exists.
 * - `runByExternalReference`: the url is required and at most 2048 characters (400 naming `url`);
 *   no run, or only runs the caller cannot see, is the same 404 `run not found` (existence never
 *   leaks); with several visible runs reporting the same url, the latest report wins, so another
 *   team reporting the same url never hides the caller's run. The answer is the RunItem (the
 *   transport wraps it as `{run_id, run}`).
 */
import { Chunk, Effect, FiberSet, Option, Stream } from "effect"
import type { Viewer } from "../domain/Access.js"
import { canSee } from "../domain/Access.js"
import { MAX_EXTERNAL_REFERENCE_URL_LENGTH } from "../domain/Artifact.js"
import { ConversationResponse } from "../domain/Conversation.js"
import { CONVERSATION_JSON_END, conversationJsonHead } from "../domain/ConversationJson.js"
import { InvalidRequest, ResourceNotFound, type ResourceUnavailable } from "../domain/Errors.js"
import type { ConversationId, RunId } from "../domain/Ids.js"
import { transcriptKey } from "../domain/BlobKeys.js"
import { storageUnavailable, storageUnavailableStream } from "../internal/Services.js"
import { Audit } from "./Audit.js"
import { BlobStore } from "../ports/BlobStore.js"
import { RunStore } from "../ports/RunStore.js"
import type { StoredRun } from "../ports/RunStore.js"
import * as ConversationText from "./ConversationText.js"
import type { StorageError } from "../ports/Storage.js"
import { presentRun, requireVisibleRun, runOwnership } from "../domain/RunRecords.js"



/** Which run's transcript: by run id or by conversation id. */
export type TranscriptOf = { readonly runId: string } | { readonly conversationId: ConversationId }

/** Where a run's raw transcript is. */
export interface TranscriptLocation {
  readonly run_id: RunId
  /** The blob key (`transcriptKey(run_id)`). */
  readonly key: string
}

/** The conversations service. */
export class Conversations extends Effect.Service<Conversations>()("@agent-runs/core/Conversations", {
  dependencies: [Audit.Default],
  scoped: Effect.gen(function*() {
    const audit = yield* Audit
    const store = yield* RunStore
    const blobs = yield* BlobStore
    // The background keeps of ended executions' texts (ConversationText.ts), interrupted with the service.
    const text = ConversationText.make(store, yield* FiberSet.make())

    const visible = (viewer: Viewer, run: Option.Option<StoredRun>) =>
      Option.filter(run, (r) => canSee(viewer, runOwnership(r)))

    const runById = (viewer: Viewer, runId: string) => requireVisibleRun(store, viewer, runId)

    /** The runs of a conversation the viewer can see, oldest first (404 `conversation` when none). */
    const runsByConversation = (viewer: Viewer, conversationId: ConversationId) =>
      Effect.gen(function*() {
        const runs = (yield* store.findByConversation(conversationId)).filter((r) => canSee(viewer, runOwnership(r)))
        if (runs.length === 0) return yield* ResourceNotFound.of("conversation", conversationId)
        return runs
      })

    /**
     * The conversation of `runs` (one conversation, oldest run first): its id, its runs, and each
     * run's part of it (`read`, `empty` when it has no steps), run by run. The first run's part is
     * read now, and so is every run's when none is marked as having a conversation (to tell a
     * conversation with no steps yet from none, 404); otherwise each later run's is read when
     * `parts` gets to it, so a streamed response holds one run's at a time.
     */
    const conversationOf = <A>(
      runs: ReadonlyArray<StoredRun>,
      read: (run: StoredRun) => Effect.Effect<A, StorageError>,
      empty: (part: A) => boolean
    ) =>
      Effect.gen(function*() {
        const conversationId = runs[0]?.item.conversation_id ?? null
        const [first, ...later] = runs
        const firstPart = first === undefined ? undefined : yield* read(first)
        const marked = runs.some((r) => r.has_conversation) || (firstPart !== undefined && !empty(firstPart))
        const laterParts = marked ? undefined : yield* Effect.forEach(later, read)
        const saved = marked || (laterParts ?? []).some((part) => !empty(part))
        if (conversationId === null || !saved) {
          return yield* ResourceNotFound.of("conversation", conversationId ?? undefined)
        }
        const rest: Stream.Stream<A, StorageError> = laterParts === undefined
          ? Stream.mapEffect(Stream.fromIterable(later), read)
          : Stream.fromIterable(laterParts)
        return {
          conversation_id: conversationId,
          run_ids: runs.map((r) => r.item.run_id),
          parts: firstPart === undefined ? rest : Stream.concat(Stream.succeed(firstPart), rest)
        }
      })

    /** A run's steps. */
    const stepsOf = (run: StoredRun) => store.conversation(run.item.run_id)

    /** The conversation of `runs` as one value. */
    const responseOf = (runs: ReadonlyArray<StoredRun>) =>
      Effect.gen(function*() {
        const conversation = yield* conversationOf(runs, stepsOf, (steps) => steps.length === 0)
        const steps = Chunk.toReadonlyArray(yield* Stream.runCollect(conversation.parts)).flat()
        // Built from stored steps, checked when they were stored.
        return new ConversationResponse({ conversation_id: conversation.conversation_id, run_ids: conversation.run_ids, steps }, true)
      })

    /** A run's executions for writing its conversation's JSON. */
    const executionsOf = (run: StoredRun) =>
      Effect.map(store.executionConversations(run.item.run_id), (executions): ConversationText.RunExecutions => ({ run, executions }))

    /**
     * The conversation of `runs` as the JSON text of its `ConversationResponse`, in pieces
     * (ConversationJson.ts), each later run's steps read as the text gets to them. What fails
     * before the text is the effect's failure; a storage failure while reading a later run fails
     * the text after its start with `ResourceUnavailable` (logged, and reported to `Health`, as
     * every storage failure is): the transport has sent its status by then.
     */
    const jsonOf = (runs: ReadonlyArray<StoredRun>) =>
      Effect.map(conversationOf(runs, executionsOf, ConversationText.runEmpty), (conversation): Stream.Stream<string, ResourceUnavailable> => {
        const steps = conversation.parts.pipe(
          // Whether any step was written before a run's: the comma between steps across runs.
          Stream.mapAccum(true, (first, own) => [first && ConversationText.runEmpty(own), text.runJson(own, first)]),
          Stream.flatten()
        )
        return Stream.make(conversationJsonHead(conversation.conversation_id, conversation.run_ids)).pipe(
          Stream.concat(storageUnavailableStream(steps)),
          Stream.concat(Stream.make(CONVERSATION_JSON_END))
        )
      })

    /** The conversation of a run the viewer can see. */
    const ofRun = Effect.fn("Conversations.ofRun")(
      function*(viewer: Viewer, runId: string) {
        return yield* responseOf([yield* runById(viewer, runId)])
      },
      storageUnavailable
    )

    /** A conversation by its id, across every execution of its run. */
    const get = Effect.fn("Conversations.get")(
      function*(viewer: Viewer, conversationId: ConversationId) {
        return yield* responseOf(yield* runsByConversation(viewer, conversationId))
      },
      storageUnavailable
    )

    /**
     * `ofRun` as JSON text, for streaming (`jsonOf`): the run's visibility and its conversation's
     * existence are checked, and its steps read, before the text starts.
     */
    const ofRunJson = Effect.fn("Conversations.ofRunJson")(
      function*(viewer: Viewer, runId: string) {
        return yield* jsonOf([yield* runById(viewer, runId)])
      },
      storageUnavailable
    )

    /** `get` as JSON text, for streaming (`jsonOf`): the checks and the first run's steps before the text. */
    const getJson = Effect.fn("Conversations.getJson")(
      function*(viewer: Viewer, conversationId: ConversationId) {
        return yield* jsonOf(yield* runsByConversation(viewer, conversationId))
      },
      storageUnavailable
    )

    /** Where the raw transcript of a run the viewer can see is, when it exists (404 otherwise). */
    const transcript = Effect.fn("Conversations.transcript")(
      function*(viewer: Viewer, of: TranscriptOf) {
        const runs = "runId" in of
          ? [yield* runById(viewer, of.runId)]
          : yield* runsByConversation(viewer, of.conversationId)
        for (const run of [...runs].reverse()) {
          const key = transcriptKey(run.item.run_id)
          if (Option.isNone(yield* blobs.read(key))) continue
          // Someone else's run's transcript (an admin's, a teammate's): recorded as read.
          if (run.item.creator.uid !== viewer.principal_uid) {
            yield* audit.read(viewer, "transcript.read", { type: "run", id: run.item.run_id })
          }
          return { run_id: run.item.run_id, key } satisfies TranscriptLocation
        }
        return yield* ResourceNotFound.of("transcript", runs[runs.length - 1]!.item.run_id)
      },
      storageUnavailable
    )

    /** The run that reported an EXTERNAL_REFERENCE artifact with this url. */
    const runByExternalReference = Effect.fn("Conversations.runByExternalReference")(
      function*(viewer: Viewer, url: string | undefined) {
        if (url === undefined || url === "") return yield* InvalidRequest.forField("url", "is required")
        if (url.length > MAX_EXTERNAL_REFERENCE_URL_LENGTH) {
          return yield* InvalidRequest.forField("url", `must be at most ${MAX_EXTERNAL_REFERENCE_URL_LENGTH} characters`)
        }
        const run = visible(viewer, yield* store.findByExternalReference(url, viewer))
        if (Option.isNone(run)) return yield* ResourceNotFound.of("run")
        return presentRun(run.value)
      },
      storageUnavailable
    )

    return { ofRun, get, ofRunJson, getJson, transcript, runByExternalReference } as const
  })
}) {}
