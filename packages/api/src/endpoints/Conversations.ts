/** Conversations by id, and their raw transcripts. */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Conversation } from "@agent-runs/core"
import * as Problems from "../Problems.js"
import { Authentication, TeamHeaders } from "../Security.js"
import { doc, TranscriptRedirect } from "./Doc.js"
import * as P from "./Params.js"

/** The conversations group. */
export class ConversationsGroup extends HttpApiGroup.make("conversations")
  .add(
    HttpApiEndpoint.get("getConversation")`/agent/conversations/${P.conversationId}`
      .setHeaders(TeamHeaders)
      .addSuccess(Conversation.ConversationResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.OperationNotSupported, { status: 422 })
      .annotateContext(
        doc(
          "Get a conversation",
          "The normalized conversation and the runs that contributed to it. 422 operation_not_supported: its " +
            "format cannot be normalized."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("getConversationTranscript")`/agent/conversations/${P.conversationId}/transcript`
      .setHeaders(TeamHeaders)
      .addSuccess(TranscriptRedirect)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(
        doc(
          "Download a conversation's raw transcript",
          "Redirects (302) to a signed, time-limited download URL. 400: the conversation's format has no raw " +
            "transcript; 404: not found or no transcript."
        )
      )
  )
  .middleware(Authentication)
  .annotateContext(doc("Conversations", "Normalized conversations and raw transcripts."))
{}
