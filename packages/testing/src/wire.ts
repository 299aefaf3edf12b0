/**
 * What the protocol modules share: reading loose JSON, writing a JSON answer or a stream of
 * server-sent events (with an optional delay between chunks), ids and usage numbers.
 */
import type { ServerResponse } from "node:http"
import type { Protocol } from "./ModelTurn.js"

/** Usage numbers every answer reports (nonzero, so that usage mapping can be tested). */
export const usage = { input: 100, output: 20 } as const

/** A JSON object, or an empty one for anything else. */
export const record = (value: unknown): Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {}

/** An array, or an empty one for anything else. */
export const array = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])

/** A string, or undefined for anything else. */
export const string = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined)

/** The text of a tool's output, whatever its shape (a string, text parts, or other JSON). */
export const outputText = (value: unknown): string => {
  if (typeof value === "string") return value
  if (Array.isArray(value)) {
    return value
      .map((part) => {
        const text = string(record(part)["text"])
        return text ?? (typeof part === "string" ? part : "")
      })
      .join("\n")
  }
  if (value === undefined || value === null) return ""
  return JSON.stringify(value)
}

/** A shell reply made concrete for one call: text, or a named tool with its arguments. */
export type Answer =
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "tool"; readonly name: string; readonly input: Record<string, unknown> }

/** What a protocol module needs to answer one call. */
export interface AnswerContext {
  readonly model: string
  readonly stream: boolean
  /** A fresh id with this prefix, unique in the server. */
  readonly id: (prefix: string) => string
  readonly out: Output
}

/** Writing an answer: at once as JSON, or as server-sent events. */
export interface Output {
  readonly json: (status: number, body: unknown, headers?: Readonly<Record<string, string>>) => void
  /** Starts an event stream (status 200). */
  readonly startStream: () => void
  /** One event: `event: NAME` (when named) and `data: JSON` (or the string as is). Waits the chunk delay first. */
  readonly event: (data: unknown, name?: string) => Promise<void>
  readonly end: () => void
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** The {@link Output} of one HTTP response. */
export const output = (res: ServerResponse, chunkDelayMs: number, extraHeaders: Readonly<Record<string, string>>): Output => {
  let events = 0
  return {
    json: (status, body, headers = {}) => {
      const text = JSON.stringify(body)
      res.writeHead(status, { ...extraHeaders, ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(text) })
      res.end(text)
    },
    startStream: () => {
      res.writeHead(200, { ...extraHeaders, "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive" })
      res.flushHeaders()
    },
    event: async (data, name) => {
      if (events > 0 && chunkDelayMs > 0) await sleep(chunkDelayMs)
      events += 1
      if (res.destroyed || res.writableEnded) return
      const payload = typeof data === "string" ? data : JSON.stringify(data)
      res.write(`${name === undefined ? "" : `event: ${name}\n`}data: ${payload}\n\n`)
    },
    end: () => {
      if (!res.writableEnded) res.end()
    }
  }
}

/** What a protocol module reads from one call's request. */
export interface ParsedCall {
  readonly model: string
  readonly system: string
  readonly userTexts: ReadonlyArray<string>
  readonly toolOutput: string | undefined
  readonly toolOutputs: ReadonlyArray<string>
  readonly tools: ReadonlyArray<string>
  readonly deferredTools: ReadonlyArray<string>
  readonly stream: boolean
  /** The JSON schema the answer must follow, or undefined. */
  readonly responseSchema: unknown
}

/** How one protocol reads its calls and writes its answers. */
export interface ProtocolModule {
  readonly protocol: Protocol
  readonly parse: (body: unknown, url: URL) => ParsedCall
  readonly answer: (context: AnswerContext, answer: Answer) => Promise<void>
  /** The key the call carries (undefined when none). */
  readonly apiKey: (headers: Readonly<Record<string, string>>, url: URL) => string | undefined
  /** The status and body the real API answers a call with a wrong key. */
  readonly authError: () => { readonly status: number; readonly body: unknown }
  /** The status's error body carrying this message. */
  readonly errorBody: (status: number, message: string) => unknown
}

/** The bearer token of an `authorization` header. */
export const bearer = (headers: Readonly<Record<string, string>>): string | undefined => {
  const value = headers["authorization"]
  if (value === undefined) return undefined
  const match = /^Bearer\s+(.*)$/i.exec(value)
  return match?.[1]?.trim()
}

/** The index of the last element matching, or -1 (Array.prototype.findLastIndex is ES2023). */
export const lastIndexOf = <A>(items: ReadonlyArray<A>, predicate: (item: A) => boolean): number => {
  for (let index = items.length - 1; index >= 0; index -= 1) if (predicate(items[index] as A)) return index
  return -1
}
