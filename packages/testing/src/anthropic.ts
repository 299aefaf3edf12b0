/**
 * Anthropic Messages (`POST /v1/messages`, Claude Code): a streamed answer is the SSE events
 * `message_start`, `content_block_start|delta|stop` (text deltas, or a `tool_use` block whose input
 * comes as `input_json_delta` pieces), `message_delta` (stop reason, usage) and `message_stop`.
 *
 * Claude Code's deferred tools are read from its announcements, a text part of a user or system
 * message: "The following deferred tools are [now] available via ToolSearch. …:" and then one
 * name a line (a shortened list's row `mcp__SERVER__* (42)` counts as `mcp__SERVER__*`).
 */
import { splitText, userPartText, userText, withoutSystemReminders } from "./text.js"
import { type Answer, type AnswerContext, type ParsedCall, type ProtocolModule, array, bearer, lastIndexOf, outputText, record, string, usage } from "./wire.js"

const errorTypes: Readonly<Record<number, string>> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  529: "overloaded_error"
}

const errorBody = (status: number, message: string): unknown => ({
  type: "error",
  error: { type: errorTypes[status] ?? (status >= 500 ? "api_error" : "invalid_request_error"), message }
})

const textsOf = (content: unknown): ReadonlyArray<string> =>
  typeof content === "string"
    ? [content]
    : array(content).flatMap((part) => {
        const block = record(part)
        const text = string(block["text"])
        return block["type"] === "text" && text !== undefined ? [text] : []
      })

const deferredAnnouncement = /The following deferred tools are (?:now )?available via [^\n]*\n([\s\S]*?)(?:<\/system-reminder>|$)/g
/** A line of such a list: a name alone, or a shortened list's row `mcp__SERVER__* (42)`. */
const deferredRow = /^([\w.*-]+)(?: \(\d+\))?$/

/** The tool names Claude Code's deferred-tool announcements in these texts list, each once. */
const deferredToolsOf = (texts: ReadonlyArray<string>): ReadonlyArray<string> => {
  const lists = texts.flatMap((text) => [...text.matchAll(deferredAnnouncement)].map((match) => match[1] ?? ""))
  const names = lists.flatMap((list) => list.split("\n").flatMap((line) => deferredRow.exec(line.trim())?.[1] ?? []))
  return [...new Set(names)]
}

/** `{type: "json_schema", schema}` → the schema. */
const jsonSchema = (format: Readonly<Record<string, unknown>>): unknown => (format["type"] === "json_schema" ? (format["schema"] ?? {}) : undefined)

const parse = (body: unknown): ParsedCall => {
  const request = record(body)
  const system = request["system"]
  const messages = array(request["messages"]).map(record)
  const userTexts = messages
    .filter((message) => message["role"] === "user")
    .map((message) => userText(textsOf(message["content"])))
    .filter((text) => text !== "")
  // Claude Code also sends `role: "system"` messages among the messages: they count as system text.
  const last = messages.filter((message) => message["role"] !== "system").at(-1)
  const blocks = last?.["role"] === "user" ? array(last["content"]).map(record) : []
  // The tool results count when no user text follows them in the message (after an interrupt,
  // Claude Code sends the rejected call's result and the next user text in one message).
  const lastResult = lastIndexOf(blocks, (block) => block["type"] === "tool_result")
  const textAfter = blocks.slice(lastResult + 1).some((block) => block["type"] === "text" && userPartText(String(block["text"] ?? "")) !== "")
  const results = textAfter ? [] : blocks.filter((block) => block["type"] === "tool_result")
  const texts = [...textsOf(system), ...messages.flatMap((message) => textsOf(message["content"]))]
  return {
    model: string(request["model"]) ?? "",
    system: [...textsOf(system), ...messages.filter((message) => message["role"] === "system").flatMap((message) => textsOf(message["content"]))].join("\n\n"),
    userTexts,
    toolOutput: results.length === 0 ? undefined : results.map((block) => withoutSystemReminders(outputText(block["content"]))).join("\n"),
    toolOutputs: messages
      .filter((message) => message["role"] === "user")
      .flatMap((message) => array(message["content"]).map(record).filter((block) => block["type"] === "tool_result"))
      .map((block) => withoutSystemReminders(outputText(block["content"]))),
    tools: array(request["tools"]).flatMap((tool) => {
      const name = string(record(tool)["name"])
      return name === undefined ? [] : [name]
    }),
    deferredTools: deferredToolsOf(texts),
    stream: request["stream"] === true,
    responseSchema: jsonSchema(record(record(request["output_config"])["format"]))
  }
}

const usageOf = () => ({
  input_tokens: usage.input,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
  output_tokens: usage.output,
  service_tier: "standard"
})

const answer = async ({ model, stream, id, out }: AnswerContext, reply: Answer): Promise<void> => {
  const messageId = id("msg_fake_")
  const block =
    reply.kind === "text"
      ? { type: "text" as const, text: reply.text }
      : { type: "tool_use" as const, id: id("toolu_fake_"), name: reply.name, input: reply.input }
  const stopReason = reply.kind === "text" ? "end_turn" : "tool_use"
  if (!stream) {
    out.json(200, {
      id: messageId,
      type: "message",
      role: "assistant",
      model,
      content: [block],
      stop_reason: stopReason,
      stop_sequence: null,
      usage: usageOf()
    })
    return
  }
  out.startStream()
  const send = (data: Record<string, unknown>) => out.event(data, String(data["type"]))
  await send({
    type: "message_start",
    message: {
      id: messageId,
      type: "message",
      role: "assistant",
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...usageOf(), output_tokens: 1 }
    }
  })
  if (block.type === "text") {
    await send({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } })
    for (const piece of splitText(block.text)) {
      await send({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: piece } })
    }
  } else {
    await send({ type: "content_block_start", index: 0, content_block: { ...block, input: {} } })
    for (const piece of splitText(JSON.stringify(block.input), 2)) {
      await send({ type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: piece } })
    }
  }
  await send({ type: "content_block_stop", index: 0 })
  await send({ type: "message_delta", delta: { stop_reason: stopReason, stop_sequence: null }, usage: usageOf() })
  await send({ type: "message_stop" })
  out.end()
}

export const anthropic: ProtocolModule = {
  protocol: "anthropic",
  parse,
  answer,
  apiKey: (headers) => headers["x-api-key"] ?? bearer(headers),
  authError: () => ({ status: 401, body: errorBody(401, "invalid x-api-key") }),
  errorBody
}
