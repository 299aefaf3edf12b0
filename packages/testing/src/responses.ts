/**
 * OpenAI Responses (`POST /v1/responses`, Codex): a streamed answer is the SSE events
 * `response.created`, `response.in_progress`, `response.output_item.added`, text deltas or
 * function-call argument deltas, `response.output_item.done` and `response.completed` (with
 * usage). A tool's result comes back as a `function_call_output` input item.
 */
import { splitText, userText } from "./text.js"
import { type Answer, type AnswerContext, type ParsedCall, type ProtocolModule, array, bearer, outputText, record, string, usage } from "./wire.js"

/** The OpenAI error body (also used by Chat Completions). */
export const openAiErrorBody = (status: number, message: string): unknown => ({
  error: {
    message,
    type: status === 429 ? "rate_limit_error" : status >= 500 ? "server_error" : "invalid_request_error",
    param: null,
    code: status === 401 ? "invalid_api_key" : status === 429 ? "rate_limit_exceeded" : null
  }
})

/** What the real OpenAI API answers a wrong key with. */
export const openAiAuthError = () => ({
  status: 401,
  body: openAiErrorBody(401, "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.")
})

const textsOf = (content: unknown): ReadonlyArray<string> =>
  typeof content === "string"
    ? [content]
    : array(content).flatMap((part) => {
        const text = string(record(part)["text"])
        return text === undefined ? [] : [text]
      })

const toolOutputTypes = new Set(["function_call_output", "custom_tool_call_output", "local_shell_call_output"])

/** `{type: "json_schema", schema}` → the schema; `{type: "json_object"}` → any JSON. */
const jsonSchema = (format: Readonly<Record<string, unknown>>): unknown =>
  format["type"] === "json_schema" ? (format["schema"] ?? {}) : format["type"] === "json_object" ? {} : undefined

const parse = (body: unknown): ParsedCall => {
  const request = record(body)
  const rawInput = request["input"]
  const items = typeof rawInput === "string" ? [{ type: "message", role: "user", content: rawInput }] : array(rawInput).map(record)
  const messages = items.filter((item) => (item["type"] ?? "message") === "message")
  const instructions = string(request["instructions"])
  const system = [
    ...(instructions === undefined ? [] : [instructions]),
    ...messages.filter((message) => message["role"] === "developer" || message["role"] === "system").flatMap((message) => textsOf(message["content"]))
  ]
  const trailing: Array<Readonly<Record<string, unknown>>> = []
  for (let index = items.length - 1; index >= 0; index -= 1) {
    const item = items[index]
    if (item === undefined || !toolOutputTypes.has(String(item["type"]))) break
    trailing.unshift(item)
  }
  return {
    model: string(request["model"]) ?? "",
    system: system.join("\n\n"),
    userTexts: messages
      .filter((message) => message["role"] === "user")
      .map((message) => userText(textsOf(message["content"])))
      .filter((text) => text !== ""),
    toolOutput: trailing.length === 0 ? undefined : trailing.map((item) => outputText(record(item)["output"])).join("\n"),
    toolOutputs: items.filter((item) => toolOutputTypes.has(String(item["type"]))).map((item) => outputText(item["output"])),
    tools: array(request["tools"]).flatMap((tool): ReadonlyArray<string> => {
      const name = string(record(tool)["name"]) ?? string(record(tool)["type"])
      // A namespace (Codex groups each MCP server's tools so: `{type: "namespace", name:
      // "mcp__SERVER", tools: [...]}`) offers its inner tools, named `NAMESPACE__TOOL`.
      if (record(tool)["type"] === "namespace") {
        return array(record(tool)["tools"]).flatMap((inner) => {
          const innerName = string(record(inner)["name"])
          return innerName === undefined ? [] : [name === undefined ? innerName : `${name}__${innerName}`]
        })
      }
      return name === undefined ? [] : [name]
    }),
    deferredTools: [],
    stream: request["stream"] === true,
    responseSchema: jsonSchema(record(record(request["text"])["format"]))
  }
}

const usageOf = () => ({
  input_tokens: usage.input,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: usage.output,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: usage.input + usage.output
})

const answer = async ({ model, stream, id, out }: AnswerContext, reply: Answer): Promise<void> => {
  const responseId = id("resp_fake_")
  const createdAt = Math.floor(Date.now() / 1000)
  const itemId = id(reply.kind === "text" ? "msg_fake_" : "fc_fake_")
  const item =
    reply.kind === "text"
      ? { id: itemId, type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text: reply.text, annotations: [] }] }
      : { id: itemId, type: "function_call", status: "completed", call_id: id("call_fake_"), name: reply.name, arguments: JSON.stringify(reply.input) }
  const response = (status: string, output: ReadonlyArray<unknown>, withUsage: boolean) => ({
    id: responseId,
    object: "response",
    created_at: createdAt,
    status,
    model,
    output,
    usage: withUsage ? usageOf() : null
  })
  if (!stream) {
    out.json(200, response("completed", [item], true))
    return
  }
  out.startStream()
  let sequence = 0
  const send = (data: Record<string, unknown>) => out.event({ ...data, sequence_number: sequence++ }, String(data["type"]))
  await send({ type: "response.created", response: response("in_progress", [], false) })
  await send({ type: "response.in_progress", response: response("in_progress", [], false) })
  if (reply.kind === "text") {
    await send({ type: "response.output_item.added", output_index: 0, item: { ...item, status: "in_progress", content: [] } })
    const part = { item_id: itemId, output_index: 0, content_index: 0 }
    await send({ type: "response.content_part.added", ...part, part: { type: "output_text", text: "", annotations: [] } })
    for (const piece of splitText(reply.text)) await send({ type: "response.output_text.delta", ...part, delta: piece })
    await send({ type: "response.output_text.done", ...part, text: reply.text })
    await send({ type: "response.content_part.done", ...part, part: { type: "output_text", text: reply.text, annotations: [] } })
  } else {
    const args = JSON.stringify(reply.input)
    await send({ type: "response.output_item.added", output_index: 0, item: { ...item, status: "in_progress", arguments: "" } })
    for (const piece of splitText(args, 2)) await send({ type: "response.function_call_arguments.delta", item_id: itemId, output_index: 0, delta: piece })
    await send({ type: "response.function_call_arguments.done", item_id: itemId, output_index: 0, arguments: args })
  }
  await send({ type: "response.output_item.done", output_index: 0, item })
  await send({ type: "response.completed", response: response("completed", [item], true) })
  out.end()
}

export const responses: ProtocolModule = {
  protocol: "responses",
  parse,
  answer,
  apiKey: (headers) => bearer(headers),
  authError: openAiAuthError,
  errorBody: openAiErrorBody
}
