/**
 * Gemini (`POST /v1beta/models/MODEL:streamGenerateContent?alt=sse` and `…:generateContent`,
 * Gemini CLI): a streamed answer is `data:` chunks of `{candidates: [{content: {role: "model",
 * parts}}]}`, the last with `finishReason: "STOP"` and `usageMetadata`. A tool's result comes
 * back as a `functionResponse` part of a user content.
 */
import { splitText, userPartText, userText } from "./text.js"
import { type Answer, type AnswerContext, type ParsedCall, type ProtocolModule, array, lastIndexOf, outputText, record, string, usage } from "./wire.js"

const statuses: Readonly<Record<number, string>> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  429: "RESOURCE_EXHAUSTED",
  500: "INTERNAL",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED"
}

const errorBody = (status: number, message: string): unknown => ({
  error: { code: status, message, status: statuses[status] ?? (status >= 500 ? "INTERNAL" : "FAILED_PRECONDITION") }
})

/** `/v1beta/models/MODEL:METHOD` → model and method. */
export const geminiPath = (pathname: string): { readonly model: string; readonly method: string } | undefined => {
  const match = /^\/v1(?:beta|alpha|)\/models\/([^/:]+):([A-Za-z]+)$/.exec(pathname)
  return match === null ? undefined : { model: decodeURIComponent(match[1] ?? ""), method: match[2] ?? "" }
}

const textsOf = (parts: unknown): ReadonlyArray<string> =>
  array(parts).flatMap((part) => {
    const block = record(part)
    const text = string(block["text"])
    return text === undefined || block["thought"] === true ? [] : [text]
  })

const responseText = (response: unknown): string => {
  const value = record(response)
  const output = value["output"] ?? value["error"] ?? value["content"]
  return output === undefined ? outputText(response) : outputText(output)
}

const parse = (body: unknown, url: URL): ParsedCall => {
  const request = record(body)
  const target = geminiPath(url.pathname)
  const instruction = request["systemInstruction"] ?? request["system_instruction"]
  const config = record(request["generationConfig"])
  const contents = array(request["contents"]).map(record)
  const last = contents.at(-1)
  const parts = last !== undefined && last["role"] !== "model" ? array(last["parts"]).map(record) : []
  const responseOf = (part: Readonly<Record<string, unknown>>) => part["functionResponse"] ?? part["function_response"]
  // The function responses count when no user text follows them in the content.
  const lastResponse = lastIndexOf(parts, (part) => responseOf(part) !== undefined)
  const textAfter = parts.slice(lastResponse + 1).some((part) => typeof part["text"] === "string" && userPartText(part["text"]) !== "")
  const results = textAfter ? [] : parts.map(responseOf).filter((response) => response !== undefined)
  return {
    model: target?.model ?? "",
    system: typeof instruction === "string" ? instruction : textsOf(record(instruction)["parts"]).join("\n\n"),
    userTexts: contents
      .filter((content) => content["role"] !== "model")
      .map((content) => userText(textsOf(content["parts"])))
      .filter((text) => text !== ""),
    toolOutput: results.length === 0 ? undefined : results.map((response) => responseText(record(response)["response"])).join("\n"),
    toolOutputs: contents
      .filter((content) => content["role"] !== "model")
      .flatMap((content) => array(content["parts"]).map(record).map(responseOf).filter((response) => response !== undefined))
      .map((response) => responseText(record(response)["response"])),
    tools: array(request["tools"]).flatMap((tool) =>
      array(record(tool)["functionDeclarations"] ?? record(tool)["function_declarations"]).flatMap((declaration) => {
        const name = string(record(declaration)["name"])
        return name === undefined ? [] : [name]
      })
    ),
    deferredTools: [],
    stream: target?.method === "streamGenerateContent",
    responseSchema: config["responseMimeType"] === "application/json" ? (config["responseJsonSchema"] ?? config["responseSchema"] ?? {}) : undefined
  }
}

const usageOf = () => ({
  promptTokenCount: usage.input,
  candidatesTokenCount: usage.output,
  totalTokenCount: usage.input + usage.output
})

const answer = async ({ model, stream, id, out }: AnswerContext, reply: Answer): Promise<void> => {
  const responseId = id("fake-")
  const candidate = (parts: ReadonlyArray<unknown>, finished: boolean) => ({
    candidates: [{ content: { role: "model", parts }, index: 0, ...(finished ? { finishReason: "STOP" } : {}) }],
    ...(finished ? { usageMetadata: usageOf() } : {}),
    modelVersion: model,
    responseId
  })
  const parts = reply.kind === "text" ? [{ text: reply.text }] : [{ functionCall: { name: reply.name, args: reply.input } }]
  if (!stream) {
    out.json(200, candidate(parts, true))
    return
  }
  out.startStream()
  if (reply.kind === "text") {
    const pieces = splitText(reply.text)
    for (const [index, piece] of pieces.entries()) await out.event(candidate([{ text: piece }], index === pieces.length - 1))
  } else {
    await out.event(candidate(parts, true))
  }
  out.end()
}

export const gemini: ProtocolModule = {
  protocol: "gemini",
  parse,
  answer,
  apiKey: (headers, url) => headers["x-goog-api-key"] ?? url.searchParams.get("key") ?? undefined,
  authError: () => ({
    status: 400,
    body: {
      error: {
        code: 400,
        message: "API key not valid. Please pass a valid API key.",
        status: "INVALID_ARGUMENT",
        details: [
          {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            reason: "API_KEY_INVALID",
            domain: "googleapis.com",
            metadata: { service: "generativelanguage.googleapis.com" }
          }
        ]
      }
    }
  }),
  errorBody
}
