/** Handlers of the conversations group. */
import { HttpApiBuilder } from "@effect/platform"
import { Conversations } from "@agent-runs/core"
import { Effect } from "effect"
import { Api } from "@agent-runs/api/Api"
import { conversationResponses } from "../ConversationResponses.js"
import { transcriptRedirect } from "../Downloads.js"
import { CurrentViewer } from "@agent-runs/api/Security"

export const ConversationsLive = HttpApiBuilder.group(Api, "conversations", (handlers) =>
  Effect.zipWith(Conversations.Conversations, conversationResponses, (conversations, conversation) =>
    handlers
      .handle("getConversation", ({ path }) => conversation.byId(path.conversation_id))
      .handle("getConversationTranscript", ({ path }) =>
        Effect.gen(function*() {
          const viewer = yield* CurrentViewer
          const transcript = yield* conversations.transcript(viewer, { conversationId: path.conversation_id })
          return yield* transcriptRedirect(transcript.run_id)
        }))))
