/**
 * OpenAI Chat Completions (`POST /v1/chat/completions`, opencode): a streamed answer is `data:`
 * chunks with `choices[0].delta` (`content`, or `tool_calls` whose arguments come in pieces), a
 * chunk with the `finish_reason`, a usage chunk with `choices: []`, then `data: [DONE]`. A tool's
 * result comes back as a `role: "tool"` message.
 */
import { openAiAuthError, openAiErrorBody } from "./responses.js"
import { splitText, userText } from "./text.js"
import { type Answer, type AnswerContext, type ParsedCall, type ProtocolModule, array, bearer, outputText, record, string, usage } from "./wire.js"

const textsOf = (content: unknown): ReadonlyArray<string> =>
  typeof content === "string"
    ? [content]
    : array(content).flatMap((part) => {
        const block = record(part)
        const text = string(block["text"])
        return (block["type"] ?? "text") === "text" && text !== undefined ? [text] : []
      })

/** `response_format` `{type: "json_schema", json_schema: {schema}}` → the schema; `{type: "json_object"}` → any JSON. */
const responseSchema = (format: Readonly<Record<string, unknown>>): unknown =>
  format["type"] === "json_schema" ? (record(format["json_schema"])["schema"] ?? {}) : format["type"] === "json_object" ? {} : undefined

const parse = (body: unknown): ParsedCall => {
  const request = record(body)
  const messages = array(request["messages"]).map(record)
  const trailing: Array<Readonly<Record<string, unknown>>> = []
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index]
    if (message === undefined || message["role"] !== "tool") break
    trailing.unshift(message)
  }
  return {
    model: string(request["model"]) ?? "",
    system: messages
      .filter((message) => message["role"] === "system" || message["role"] === "developer")
      .flatMap((message) => textsOf(message["content"]))
      .join("\n\n"),
    userTexts: messages
      .filter((message) => message["role"] === "user")
      .map((message) => userText(textsOf(message["content"])))
      .filter((text) => text !== ""),
    toolOutput: trailing.length === 0 ? undefined : trailing.map((message) => outputText(message["content"])).join("\n"),
    toolOutputs: messages.filter((message) => message["role"] === "tool").map((message) => outputText(message["content"])),
    tools: array(request["tools"]).flatMap((tool) => {
      const name = string(record(record(tool)["function"])["name"]) ?? string(record(tool)["name"])
      return name === undefined ? [] : [name]
    }),
    deferredTools: [],
    stream: request["stream"] === true,
    responseSchema: responseSchema(record(request["response_format"]))
  }
}

const usageOf = () => ({
  prompt_tokens: usage.input,
  completion_tokens: usage.output,
  total_tokens: usage.input + usage.output,
  prompt_tokens_details: { cached_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 0 }
})

const answer = async ({ model, stream, id, out }: AnswerContext, reply: Answer): Promise<void> => {
  const completionId = id("chatcmpl-fake-")
  const created = Math.floor(Date.now() / 1000)
  const finishReason = reply.kind === "text" ? "stop" : "tool_calls"
  const callId = id("call_fake_")
  const args = reply.kind === "tool" ? JSON.stringify(reply.input) : ""
  if (!stream) {
    out.json(200, {
      id: completionId,
      object: "chat.completion",
      created,
      model,
      choices: [
        {
          index: 0,
          message:
            reply.kind === "text"
              ? { role: "assistant", content: reply.text }
              : { role: "assistant", content: null, tool_calls: [{ id: callId, type: "function", function: { name: reply.name, arguments: args } }] },
          finish_reason: finishReason
        }
      ],
      usage: usageOf()
    })
    return
  }
  out.startStream()
  const chunk = (choices: ReadonlyArray<unknown>, extra: Record<string, unknown> = {}) =>
    out.event({ id: completionId, object: "chat.completion.chunk", created, model, choices, ...extra })
  const delta = (value: Record<string, unknown>, finish: string | null = null) => chunk([{ index: 0, delta: value, finish_reason: finish }])
  if (reply.kind === "text") {
    await delta({ role: "assistant", content: "" })
    for (const piece of splitText(reply.text)) await delta({ content: piece })
  } else {
    await delta({ role: "assistant", content: null, tool_calls: [{ index: 0, id: callId, type: "function", function: { name: reply.name, arguments: "" } }] })
    for (const piece of splitText(args, 2)) await delta({ tool_calls: [{ index: 0, function: { arguments: piece } }] })
  }
  await delta({}, finishReason)
  await chunk([], { usage: usageOf() })
  await out.event("[DONE]")
  out.end()
}

export const chat: ProtocolModule = {
  protocol: "chat",
  parse,
  answer,
  apiKey: (headers) => bearer(headers),
  authError: openAiAuthError,
  errorBody: openAiErrorBody
}
