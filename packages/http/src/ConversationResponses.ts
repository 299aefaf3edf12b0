/**
 * The answers of the two conversation endpoints, `GET /agent/runs/{runId}/conversation` and
 * `GET /agent/conversations/{conversation_id}`: the conversation's JSON streamed as its steps are
 * read (core's `Conversations.ofRunJson` and `getJson`, StreamedJson.ts), byte for byte the body
 * the endpoints' schema encodes. A run or conversation the caller cannot see, or one with no
 * conversation, is still a 404 problem: those are known before the first byte.
 */
import { Conversations, type Ids } from "@agent-runs/core"
import { Effect } from "effect"
import { ConversationsGroup } from "@agent-runs/api/endpoints/Conversations"
import { RunsGroup } from "@agent-runs/api/endpoints/Runs"
import { CurrentViewer } from "@agent-runs/api/Security"
import { streamedJson } from "./StreamedJson.js"

export const conversationResponses = Effect.map(Conversations.Conversations, (conversations) => {
  const ofRun = streamedJson(RunsGroup, "getRunConversation")
  const byId = streamedJson(ConversationsGroup, "getConversation")
  return {
    /** A run's conversation. */
    ofRun: (runId: string) =>
      Effect.flatMap(CurrentViewer, (viewer) =>
        Effect.map(conversations.ofRunJson(viewer, runId), (text) => ofRun(text, { run_id: runId }))),
    /** A conversation by its id. */
    byId: (conversationId: Ids.ConversationId) =>
      Effect.flatMap(CurrentViewer, (viewer) =>
        Effect.map(conversations.getJson(viewer, conversationId), (text) => byId(text, { conversation_id: conversationId })))
  } as const
})
