/**
 * Gemini CLI's `stream-json` output as our harness events (docs/harnesses.md#gemini-cli):
 * - `init` → the session (`session_id`);
 * - `message` of the assistant: Gemini CLI prints the text in pieces (`delta: true`), joined here
 *   into one assistant message, emitted when the next event of another kind comes (a tool call,
 *   the result…); the user's `message` (the prompt echoed) is skipped;
 * - `tool_use` → an action (category by tool name; MCP tools, `mcp_SERVER_TOOL`, → `integration`;
 *   `activate_skill` → `read_skill`, its result skipped);
 * - `tool_result` → the action's result (`failed` when `status` is `error`, with the error's
 *   message when there is no output);
 * - `error` (a warning, a blocked or empty answer) → a status line;
 * - `result` → usage (`input_tokens`; `output_tokens`, or the total less the input when that is
 *   more, thoughts included; summed over the execution's turns, each process counting only its
 *   own) and, when `status` is `error`, the failure: a refused key (`API key not valid`, 401/403,
 *   `UNAUTHENTICATED`, `PERMISSION_DENIED`) is `integration_not_configured`, anything else
 *   `agent_failed`, with the API's own words.
 * Anything else is skipped (the transcript keeps it).
 */
import { countOf, isRecord, type JsonRecord, parseRecord, stringOf } from "@agent-runs/core/domain/CliOutput"
import type { HarnessEvent } from "@agent-runs/core/domain/Harness"
import { outputText, toolCategory } from "@agent-runs/core/domain/AgentTools"
import type { HarnessDecoder } from "@agent-runs/core/ports/AgentHarness"

type Json = JsonRecord

const isObject = isRecord
const str = stringOf
const num = countOf
const parse = parseRecord

/** Gemini CLI names an MCP server's tool `mcp_SERVER_TOOL`. */
const categoryOf = (name: string) => (name.startsWith("mcp_") ? "integration" : toolCategory(name))

/** What Gemini CLI says when the API refused its key. */
const REFUSED = /API[ _]key not valid|API_KEY_INVALID|UNAUTHENTICATED|PERMISSION_DENIED|"code":\s*40[13]\b|\bstatus(?: code)?:? 40[13]\b|FatalAuthenticationError/i

/** `[API Error: {"error": {"code", "message", "status"}}]` → `message (HTTP code, status)`; else the text. */
const apiMessage = (text: string): string => {
  const start = text.indexOf("{")
  const end = text.lastIndexOf("}")
  if (start >= 0 && end > start) {
    try {
      const body: unknown = JSON.parse(text.slice(start, end + 1))
      const error = isObject(body) && isObject(body.error) ? body.error : undefined
      const message = error === undefined ? undefined : str(error.message)
      if (error !== undefined && message !== undefined) {
        const code = typeof error.code === "number" ? `HTTP ${error.code}` : undefined
        const status = str(error.status)
        const about = [code, status].filter((part) => part !== undefined).join(", ")
        return about === "" ? message : `${message} (${about})`
      }
    } catch {
      // not JSON: the text as it is
    }
  }
  return text
}

export const decoder = (): HarnessDecoder => {
  /** Usage of the execution's earlier turns. */
  const done = { input: 0, output: 0 }
  /** The assistant's text so far, not yet emitted. */
  let text = ""
  /** The latest `error` event's message (a failed `result` may carry none). */
  let lastError: string | undefined
  /** Calls of `activate_skill`: their results are not actions' results. */
  const skillCalls = new Set<string>()

  const flush = (): Array<HarnessEvent> => {
    const said = text
    text = ""
    return said.trim() === "" ? [] : [{ type: "message", role: "assistant", text: said }]
  }

  const toolUse = (event: Json): Array<HarnessEvent> => {
    const id = str(event.tool_id)
    const name = str(event.tool_name)
    if (id === undefined || name === undefined) return []
    const input = isObject(event.parameters) ? event.parameters : {}
    if (name === "activate_skill") {
      skillCalls.add(id)
      return [{ type: "read_skill", skill_path: str(input.name) ?? "unknown" }]
    }
    return [{ type: "action", id, category: categoryOf(name), name, input }]
  }

  const toolResult = (event: Json): Array<HarnessEvent> => {
    const id = str(event.tool_id)
    if (id === undefined || skillCalls.has(id)) return []
    const failed = event.status === "error"
    const output = outputText(event.output)
    const error = isObject(event.error) ? str(event.error.message) : undefined
    return [{
      type: "action_result",
      action_id: id,
      state: failed ? "failed" : "completed",
      output: failed && output.trim() === "" && error !== undefined ? error : output
    }]
  }

  const result = (event: Json): Array<HarnessEvent> => {
    const stats = isObject(event.stats) ? event.stats : {}
    const input = num(stats.input_tokens)
    done.input += input
    done.output += Math.max(num(stats.output_tokens), num(stats.total_tokens) - input)
    const events: Array<HarnessEvent> = [{
      type: "usage",
      input_tokens: Math.round(done.input),
      output_tokens: Math.round(done.output),
      inference_cost: 0,
      compute_cost: 0
    }]
    if (event.status !== "error") return events
    const error = isObject(event.error) ? event.error : {}
    const raw = str(error.message) ?? lastError ?? str(error.type) ?? "error"
    const detail = apiMessage(raw).trim() || "error"
    const refused = REFUSED.test(raw) || error.type === "FatalAuthenticationError"
    events.push(refused
      ? {
        type: "result",
        outcome: "failed",
        error_code: "integration_not_configured",
        message: "the model endpoint refused Gemini CLI's API key: check the harness's auth secret (GEMINI_API_KEY) " +
          `and the endpoint (GOOGLE_GEMINI_BASE_URL). Gemini CLI said: ${detail}`
      }
      : {
        type: "result",
        outcome: "failed",
        error_code: "agent_failed",
        message: /fetch failed/i.test(raw)
          ? `Gemini CLI could not reach the model endpoint (check GOOGLE_GEMINI_BASE_URL): ${detail}`
          : `Gemini CLI failed: ${detail}`
      })
    return events
  }

  return (line) => {
    const event = parse(line)
    if (event === undefined) return []
    switch (event.type) {
      case "init": {
        const events = flush()
        lastError = undefined
        skillCalls.clear()
        return typeof event.session_id === "string"
          ? [...events, { type: "session", session_id: event.session_id, session_link: null }]
          : events
      }
      case "message": {
        if (event.role !== "assistant") return flush()
        const content = str(event.content) ?? ""
        if (event.delta === true) {
          text += content
          return []
        }
        const events = flush()
        text = content
        return [...events, ...flush()]
      }
      case "tool_use":
        return [...flush(), ...toolUse(event)]
      case "tool_result":
        return [...flush(), ...toolResult(event)]
      case "error": {
        const events = flush()
        const message = str(event.message)
        if (message === undefined || message.trim() === "") return events
        lastError = message
        return [...events, { type: "status", message: `Gemini CLI (${str(event.severity) ?? "warning"}): ${message.trim()}` }]
      }
      case "result":
        return [...flush(), ...result(event)]
      default:
        return []
    }
  }
}
