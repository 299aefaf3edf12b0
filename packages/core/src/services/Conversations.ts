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
 * - `transcript` answers the run and the blob key of its transcript (`{run_id, key}`); the
 *   transport turns it into a signed download URL. A run the caller cannot see is a 404 `run`
 *   (or `conversation`) whether or not a transcript exists.
 * - `runByExternalReference`: the url is required and at most 2048 characters (400 naming `url`);
 *   no run, or only runs the caller cannot see, is the same 404 `run not found` (existence never
 *   leaks); with several visible runs reporting the same url, the latest report wins, so another
 *   team reporting the same url never hides the caller's run. The answer is the RunItem (the
 *   transport wraps it as `{run_id, run}`).
 */
import { Effect, Option } from "effect"
import type { Viewer } from "../domain/Access.js"
import { canSee } from "../domain/Access.js"
import { MAX_EXTERNAL_REFERENCE_URL_LENGTH } from "../domain/Artifact.js"
import { ConversationResponse, type ConversationStep } from "../domain/Conversation.js"
import { InvalidRequest, ResourceNotFound } from "../domain/Errors.js"
import type { ConversationId, RunId } from "../domain/Ids.js"
import { transcriptKey } from "../domain/BlobKeys.js"
import { storageUnavailable } from "../internal/Services.js"
import { Audit } from "./Audit.js"
import { BlobStore } from "../ports/BlobStore.js"
import { RunStore } from "../ports/RunStore.js"
import type { StoredRun } from "../ports/RunStore.js"
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
  effect: Effect.gen(function*() {
    const audit = yield* Audit
    const store = yield* RunStore
    const blobs = yield* BlobStore

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

    /** The conversation of `runs` (one conversation, oldest run first): their steps one after the other. */
    const conversationOf = (runs: ReadonlyArray<StoredRun>) =>
      Effect.gen(function*() {
        const conversationId = runs[0]?.item.conversation_id ?? null
        const steps: Array<ConversationStep> = []
        let saved = false
        for (const run of runs) {
          const own = yield* store.conversation(run.item.run_id)
          saved ||= run.has_conversation || own.length > 0
          steps.push(...own)
        }
        if (conversationId === null || !saved) {
          return yield* ResourceNotFound.of("conversation", conversationId ?? undefined)
        }
        return new ConversationResponse({
          conversation_id: conversationId,
          run_ids: runs.map((r) => r.item.run_id),
          steps
        })
      })

    /** The conversation of a run the viewer can see. */
    const ofRun = Effect.fn("Conversations.ofRun")(
      function*(viewer: Viewer, runId: string) {
        return yield* conversationOf([yield* runById(viewer, runId)])
      },
      storageUnavailable
    )

    /** A conversation by its id, across every execution of its run. */
    const get = Effect.fn("Conversations.get")(
      function*(viewer: Viewer, conversationId: ConversationId) {
        return yield* conversationOf(yield* runsByConversation(viewer, conversationId))
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

    return { ofRun, get, transcript, runByExternalReference } as const
  })
}) {}
