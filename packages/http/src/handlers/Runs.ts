/**
 * Handlers of the runs group: each endpoint calls one core service with the authenticated viewer.
 * The event stream (core's RunEvents) is bounded and re-checks its caller's access as it goes
 * (EventStreams.ts); it ends when the run ends.
 */
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import type { HttpRouter } from "@effect/platform"
import { Conversations, Followups, RunDeletion, RunEvents, Runs, RunStream, Timeline } from "@agent-runs/core"
import { DateTime, Duration, Effect, Schema, Stream } from "effect"
import { Api } from "@agent-runs/api/Api"
import { RunsGroup } from "@agent-runs/api/endpoints/Runs"
import { conversationResponses } from "../ConversationResponses.js"
import { transcriptLink, transcriptRedirect } from "../Downloads.js"
import { EventStreamLimitsTag, makeStreamSlots } from "../EventStreams.js"
import { DeleteResponse, RunByExternalReferenceResponse, TranscriptLinkResponse } from "@agent-runs/api/Models"
import { idempotent } from "../Idempotent.js"
import { respond, respondJsonText } from "../Respond.js"
import { Authentication, bearerAuth, CurrentViewer } from "@agent-runs/api/Security"

/** How often an idle event stream sends a comment, so proxies keep it open. */
export const SSE_KEEPALIVE = "15 seconds"

const encoder = new TextEncoder()
const encodeTimelineEvent = Schema.encodeSync(Timeline.TimelineEvent)
const encodeConversationEvent = Schema.encodeSync(RunStream.ConversationEvent)

/**
 * One Server-Sent Event per item: `timeline` and `conversation` events with their id (the
 * position after them, core's RunStream.ts), then `end` without one.
 */
const sseEvent = (item: RunStream.RunStreamItem): Uint8Array => {
  switch (item._tag) {
    case "Timeline":
      return encoder.encode(`id: ${item.id}\nevent: timeline\ndata: ${JSON.stringify(encodeTimelineEvent(item.event))}\n\n`)
    case "Conversation":
      return encoder.encode(`id: ${item.id}\nevent: conversation\ndata: ${JSON.stringify(encodeConversationEvent(item.event))}\n\n`)
    case "End":
      return encoder.encode(`event: end\ndata: ${JSON.stringify(item.end)}\n\n`)
  }
}

export const RunsLive = HttpApiBuilder.group(Api, "runs", (handlers) =>
  Effect.gen(function*() {
    const runs = yield* Runs.Runs
    const deletion = yield* RunDeletion.RunDeletion
    const followups = yield* Followups.Followups
    const conversations = yield* Conversations.Conversations
    const runEvents = yield* RunEvents.RunEvents
    const authentication = yield* Authentication
    const streamLimits = yield* EventStreamLimitsTag
    const slots = makeStreamSlots(streamLimits)
    const once = yield* idempotent
    const created = once(RunsGroup, "createRun")
    const followedUp = once(RunsGroup, "createRunFollowup")
    const listed = respondJsonText(RunsGroup, "listRuns")
    const run = respondJsonText(RunsGroup, "getRun")
    const timeline = respond(RunsGroup, "getRunTimeline")
    const conversation = yield* conversationResponses
    /** The transcript of a run the caller may see (404 otherwise): the redirect and the link check alike. */
    const runTranscript = (runId: string) =>
      Effect.flatMap(CurrentViewer, (viewer) => conversations.transcript(viewer, { runId }))
    const create = ({ headers, payload }: {
      readonly headers: { readonly "idempotency-key"?: string | undefined }
      readonly payload: Parameters<typeof runs.create>[1]
    }) => Effect.flatMap(CurrentViewer, (viewer) => created(viewer, { key: headers["idempotency-key"], payload }, runs.create(viewer, payload)))

    return handlers
      .handle("createRun", create)
      .handle("createRunDeprecated", create)
      .handle("listRuns", ({ urlParams }) =>
        Effect.flatMap(CurrentViewer, (viewer) =>
          Effect.map(runs.listJson(viewer, urlParams), (page) => listed(Runs.listJsonText(page)))))
      .handle("countRuns", ({ urlParams }) =>
        Effect.flatMap(CurrentViewer, (viewer) => runs.counts(viewer, urlParams)))
      .handle("getRun", ({ path }) => Effect.flatMap(CurrentViewer, (viewer) => Effect.map(runs.getJson(viewer, path.runId), run)))
      .handle("getRunTimeline", ({ path }) =>
        Effect.flatMap(CurrentViewer, (viewer) => Effect.flatMap(runs.timeline(viewer, path.runId), timeline)))
      .handle("getRunConversation", ({ path }) => conversation.ofRun(path.runId))
      .handle("getRunTranscript", ({ path }) =>
        Effect.flatMap(runTranscript(path.runId), (transcript) => transcriptRedirect(transcript.run_id)))
      .handle("getRunTranscriptLink", ({ path }) =>
        Effect.flatMap(runTranscript(path.runId), (transcript) => transcriptLink(transcript.run_id)).pipe(
          Effect.map((link) =>
            new TranscriptLinkResponse({ url: link.url, expires_at: DateTime.unsafeMake(link.expiresAtMillis) })
          )
        ))
      .handle("createRunFollowup", ({ headers, path, payload }) =>
        Effect.flatMap(CurrentViewer, (viewer) =>
          followedUp(viewer, { key: headers["idempotency-key"], payload }, followups.send(viewer, path.runId, payload))))
      .handle("cancelRun", ({ path }) => Effect.flatMap(CurrentViewer, (viewer) => runs.cancel(viewer, path.runId)))
      .handle("deleteRun", ({ path }) =>
        Effect.flatMap(CurrentViewer, (viewer) => deletion.remove(viewer, path.runId)).pipe(Effect.as(new DeleteResponse({ success: true }))))
      .handle("getRunByExternalReference", ({ urlParams }) =>
        Effect.flatMap(CurrentViewer, (viewer) => conversations.runByExternalReference(viewer, urlParams.url)).pipe(
          Effect.map((run) => new RunByExternalReferenceResponse({ run_id: run.run_id, run }))
        ))
      .handle("streamRunEvents", ({ headers, path }) =>
        Effect.gen(function*() {
          const viewer = yield* CurrentViewer
          const events = yield* runEvents.follow(viewer, path.runId, RunStream.resumeFrom(headers["last-event-id"]))
          // A slot until the response ends (the request's scope closes after its body is written).
          yield* Effect.acquireRelease(slots.acquire(viewer.principal_uid), () => slots.release(viewer.principal_uid))
          // The request as the authentication middleware saw it, to authenticate it again later.
          const request = yield* Effect.context<HttpRouter.HttpRouter.Provided>()
          const token = yield* HttpApiBuilder.securityDecode(bearerAuth)
          /** Why the caller may no longer follow the run, or undefined while it may (or storage cannot tell). */
          const recheck = authentication.bearerAuth(token).pipe(
            Effect.flatMap((current) => runs.get(current, path.runId)),
            Effect.as(undefined),
            Effect.catchAll((error) => Effect.succeed(error._tag === "ResourceUnavailable" ? undefined : error.message)),
            Effect.provide(request)
          )
          const lostAccess = Effect.gen(function*() {
            while (true) {
              yield* Effect.sleep(Duration.millis(streamLimits.recheckMs))
              const reason = yield* recheck
              if (reason !== undefined) return reason
            }
          })
          const closing = Stream.fromEffect(lostAccess).pipe(
            Stream.map((reason) => encoder.encode(`: closed: ${reason.replace(/[\r\n]+/g, " ")}\n\n`))
          )
          const keepalive = Stream.tick(SSE_KEEPALIVE).pipe(Stream.drop(1), Stream.as(encoder.encode(": keep-alive\n\n")))
          // The opening comment sends the headers at once, so clients see the stream open even
          // when no event is due yet (resuming at the latest event). The stream ends with the run
          // (after its last events and `end`), or once access is lost.
          const body = Stream.concat(
            Stream.succeed(encoder.encode(": open\n\n")),
            Stream.merge(
              Stream.merge(Stream.map(events, sseEvent), keepalive, { haltStrategy: "left" }),
              closing,
              { haltStrategy: "either" }
            )
          )
          return HttpServerResponse.stream(body, {
            contentType: "text/event-stream",
            headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
          })
        }))
  }))
