/**
 * A fake model server for testing agent CLIs offline: one HTTP server on 127.0.0.1 that speaks
 * the Anthropic Messages, OpenAI Responses, OpenAI Chat Completions and Gemini APIs at their usual
 * paths, answers every model call from a script, and records the calls.
 *
 * Paths served: `HEAD|GET /` (200); `POST /v1/messages` (any query, e.g. `?beta=true`) and
 * `POST /v1/messages/count_tokens`; `POST /v1/responses`; `POST /v1/chat/completions`;
 * `POST /v1beta/models/MODEL:streamGenerateContent` (SSE whatever `alt` says),
 * `…:generateContent` and `…:countTokens`; `GET /v1/models` (OpenAI list). Anything else: 404
 * JSON, recorded in `requests` and `notFound`.
 */
import { type IncomingMessage, type ServerResponse, createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { brotliDecompressSync, gunzipSync, inflateSync } from "node:zlib"
import { anthropic } from "./anthropic.js"
import { chat } from "./chat.js"
import { gemini, geminiPath } from "./gemini.js"
import type { ModelReply, ModelTurn } from "./ModelTurn.js"
import { responses } from "./responses.js"
import { asJson, findShellTool, shellToolCall } from "./text.js"
import { type Answer, type ProtocolModule, output } from "./wire.js"

export type { ModelReply, ModelTurn, Protocol } from "./ModelTurn.js"
export { asJson, findShellTool, jsonFor, shellToolCall, userPartText, userText } from "./text.js"

/** One HTTP request the server received. */
export interface RecordedRequest {
  readonly method: string
  /** The path with its query. */
  readonly path: string
  /** Header names in lower case; repeated headers joined with ", ". */
  readonly headers: Readonly<Record<string, string>>
  /** The body parsed as JSON; the text when it is not JSON; undefined when empty. */
  readonly body: unknown
}

export interface FakeModelServer {
  /** `http://127.0.0.1:PORT`, without a trailing slash. */
  readonly url: string
  /** Every model call answered (including `error` replies; not calls refused for their key), in order. */
  readonly turns: ReadonlyArray<ModelTurn>
  /** Every request received, in order. */
  readonly requests: ReadonlyArray<RecordedRequest>
  /** The requests answered 404 (no such path). */
  readonly notFound: ReadonlyArray<RecordedRequest>
  readonly close: () => Promise<void>
}

export interface FakeModelOptions {
  /**
   * When set, a call without this key is refused the way the real API refuses a bad key:
   * Anthropic and OpenAI 401 with their error JSON, Gemini 400 "API key not valid". The key is
   * read from `x-api-key` or `authorization: Bearer` (Anthropic), `authorization: Bearer`
   * (OpenAI), `x-goog-api-key` or `?key=` (Gemini).
   */
  readonly apiKey?: string
  /** Answers each model call (default {@link defaultScript}). */
  readonly script?: (turn: ModelTurn) => ModelReply
  /** Delay between streamed chunks (default 0). */
  readonly chunkDelayMs?: number
  /** The port to listen on (default 0: any free port). */
  readonly port?: number
  /** The model ids `GET /v1/models` lists (default the ids called so far, or `fake-model`). */
  readonly models?: ReadonlyArray<string>
}

const trimmed = (text: string): string => text.trim().slice(0, 200)

/**
 * The default script: a tool result → `DONE: OUTPUT` (trimmed); else `RUN: COMMAND` in the newest
 * user text (to the end of its line) → a shell tool call of COMMAND; else `ANSWER: TEXT` with the
 * newest user text trimmed to 200 characters.
 */
export const defaultScript = (turn: ModelTurn): ModelReply => {
  if (turn.toolOutput !== undefined) return { text: `DONE: ${turn.toolOutput.trim()}` }
  const command = /RUN: (.*)$/m.exec(turn.lastUser)?.[1]?.trim()
  if (command !== undefined && command !== "") return { tool: { command } }
  return { text: `ANSWER: ${trimmed(turn.lastUser)}` }
}

const headersOf = (request: IncomingMessage): Readonly<Record<string, string>> => {
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value
  }
  return headers
}

const readBody = async (request: IncomingMessage): Promise<unknown> => {
  const chunks: Array<Buffer> = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  let raw = Buffer.concat(chunks)
  if (raw.length === 0) return undefined
  const encoding = (request.headers["content-encoding"] ?? "").toLowerCase()
  try {
    if (encoding === "gzip") raw = gunzipSync(raw)
    else if (encoding === "deflate") raw = inflateSync(raw)
    else if (encoding === "br") raw = brotliDecompressSync(raw)
  } catch {
    // kept as received
  }
  const text = raw.toString("utf8")
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text
  }
}

/** Starts a fake model server on 127.0.0.1 (see the module's comment for what it serves). */
export const startFakeModel = async (options: FakeModelOptions = {}): Promise<FakeModelServer> => {
  const script = options.script ?? defaultScript
  const chunkDelayMs = options.chunkDelayMs ?? 0
  const turns: Array<ModelTurn> = []
  const requests: Array<RecordedRequest> = []
  const notFound: Array<RecordedRequest> = []
  let counter = 0
  const id = (prefix: string) => `${prefix}${String(++counter).padStart(6, "0")}`

  const modelCall = async (module: ProtocolModule, url: URL, recorded: RecordedRequest, res: ServerResponse) => {
    const out = output(res, chunkDelayMs, module.protocol === "anthropic" ? { "request-id": id("req_fake_") } : {})
    const parsed = module.parse(recorded.body, url)
    const turn: ModelTurn = {
      protocol: module.protocol,
      ...parsed,
      lastUser: parsed.userTexts.at(-1) ?? "",
      shellTool: findShellTool(parsed.tools),
      headers: recorded.headers,
      path: recorded.path
    }
    turns.push(turn)
    let reply: ModelReply
    try {
      reply = script(turn)
    } catch (error) {
      reply = { error: { status: 500, message: `fake model script failed: ${String(error)}` } }
    }
    if ("error" in reply) {
      out.json(reply.error.status, module.errorBody(reply.error.status, reply.error.message))
      return
    }
    const call = "tool" in reply ? shellToolCall(parsed.tools, reply.tool.command) : undefined
    // A tool reply when no shell tool is offered (a title or routing call) answers text instead,
    // as the default script would; a text reply to a call demanding JSON is made JSON.
    const text = "text" in reply ? reply.text : `ANSWER: ${trimmed(turn.lastUser)}`
    const answer: Answer =
      call !== undefined ? { kind: "tool", ...call } : { kind: "text", text: parsed.responseSchema === undefined ? text : asJson(parsed.responseSchema, text) }
    await module.answer({ model: parsed.model, stream: parsed.stream, id, out }, answer)
  }

  const handle = async (request: IncomingMessage, res: ServerResponse) => {
    const method = request.method ?? "GET"
    const url = new URL(request.url ?? "/", "http://127.0.0.1")
    const recorded: RecordedRequest = { method, path: url.pathname + url.search, headers: headersOf(request), body: await readBody(request) }
    requests.push(recorded)
    const out = output(res, 0, {})
    const authorized = (module: ProtocolModule): boolean => {
      if (options.apiKey === undefined || module.apiKey(recorded.headers, url) === options.apiKey) return true
      const refusal = module.authError()
      out.json(refusal.status, refusal.body)
      return false
    }
    const path = url.pathname.replace(/\/+$/, "") || "/"
    if (path === "/" && (method === "HEAD" || method === "GET")) {
      res.writeHead(200, { "content-type": "text/plain" })
      res.end(method === "HEAD" ? undefined : "ok")
      return
    }
    if (method === "POST" && path === "/v1/messages") {
      if (authorized(anthropic)) await modelCall(anthropic, url, recorded, res)
      return
    }
    if (method === "POST" && path === "/v1/messages/count_tokens") {
      if (authorized(anthropic)) out.json(200, { input_tokens: 100 })
      return
    }
    if (method === "POST" && path === "/v1/responses") {
      if (authorized(responses)) await modelCall(responses, url, recorded, res)
      return
    }
    if (method === "POST" && path === "/v1/chat/completions") {
      if (authorized(chat)) await modelCall(chat, url, recorded, res)
      return
    }
    const target = geminiPath(path)
    if (method === "POST" && target !== undefined) {
      if (target.method === "streamGenerateContent" || target.method === "generateContent") {
        if (authorized(gemini)) await modelCall(gemini, url, recorded, res)
        return
      }
      if (target.method === "countTokens") {
        if (authorized(gemini)) out.json(200, { totalTokens: 100 })
        return
      }
    }
    if (method === "GET" && path === "/v1/models") {
      if (!authorized(chat)) return
      const called = [...new Set(turns.map((turn) => turn.model))]
      const ids = options.models ?? (called.length > 0 ? called : ["fake-model"])
      out.json(200, { object: "list", data: ids.map((model) => ({ id: model, object: "model", created: 1_700_000_000, owned_by: "fake" })) })
      return
    }
    notFound.push(recorded)
    out.json(404, { error: { type: "not_found_error", message: `fake model server: no route for ${method} ${recorded.path}` } })
  }

  const server = createServer((request, res) => {
    handle(request, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" })
      if (!res.writableEnded) res.end(JSON.stringify({ error: { type: "api_error", message: String(error) } }))
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(options.port ?? 0, "127.0.0.1", () => {
      server.off("error", reject)
      resolve()
    })
  })
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    turns,
    requests,
    notFound,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error === undefined ? resolve() : reject(error)))
        server.closeAllConnections()
      })
  }
}
