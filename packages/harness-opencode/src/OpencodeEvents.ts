/**
 * opencode's `run --format json` output as our harness events (docs/harnesses.md#opencode); every
 * line is `{type, timestamp, sessionID, …}`:
 * - any event's `sessionID` → the session (when it changes: once per execution, a follow-up
 *   resumes the same one);
 * - `text` (a finished text part, `part.text`) → an assistant message;
 * - `tool_use` (printed once the tool is done: `part.tool`, `part.callID`, `part.state` with
 *   `status` `completed` or `error`, `input`, `output` or `error`) → an action and its result
 *   (`failed` for `error`). The category by tool name; a tool that is not one of opencode's own
 *   is an MCP server's (`SERVER_TOOL`) → `integration`; the `skill` tool → `read_skill` (its
 *   `name`);
 * - `step_finish` (`part.tokens` `{input, output, reasoning, cache: {read, write}}`, `part.cost`
 *   in dollars) → usage, summed over the execution's model calls (input with cache reads and
 *   writes, output with reasoning; the cost as inference cost);
 * - `error` (`error: {name, data: {message, statusCode?, responseBody?}}`; opencode then exits 1)
 *   → the failure: a refused key (HTTP 401/403, `ProviderAuthError`) is
 *   `integration_not_configured`, anything else `agent_failed`, with opencode's own words.
 * - `step_start` (one per model call) → usage with the model calls so far as its `turns` (the run's
 *   `max_turns` counts them: one step's tools, printed each with its result, are one turn).
 * `reasoning` is skipped, as is anything else (the transcript keeps it).
 */
import { countOf, isRecord, type JsonRecord, parseRecord, stringOf } from "@agent-runs/core/domain/CliOutput"
import type { HarnessEvent } from "@agent-runs/core/domain/Harness"
import { outputText, toolCategory } from "@agent-runs/core/domain/AgentTools"
import type { HarnessDecoder } from "@agent-runs/core/ports/AgentHarness"
import { API_KEY_VARIABLE, BASE_URL_VARIABLE } from "./OpencodeLaunch.js"

type Json = JsonRecord

const isObject = isRecord
const str = stringOf
const num = countOf
const parse = parseRecord

/** opencode's own tools (1.18); any other tool is an MCP server's. */
const OWN_TOOLS = new Set([
  "bash", "read", "write", "edit", "multiedit", "patch", "apply_patch", "glob", "grep", "list", "ls", "task", "todowrite",
  "todoread", "webfetch", "websearch", "codesearch", "skill", "lsp", "question", "batch", "invalid", "plan_enter", "plan_exit"
])

const AUTH_STATUSES = new Set([401, 403])
const AUTH_ERRORS = new Set(["ProviderAuthError"])

export const decoder = (): HarnessDecoder => {
  let session: string | undefined
  /** Usage of the execution's model calls so far. */
  const done = { input: 0, output: 0, cost: 0, steps: 0 }

  const toolUse = (part: Json): Array<HarnessEvent> => {
    const state = isObject(part.state) ? part.state : {}
    const status = str(state.status)
    const tool = str(part.tool)
    const id = str(part.callID) ?? str(part.id)
    if (tool === undefined || id === undefined || (status !== "completed" && status !== "error")) return []
    const input = isObject(state.input) ? state.input : {}
    if (tool === "skill") return [{ type: "read_skill", skill_path: str(input.name) ?? "unknown" }]
    return [
      { type: "action", id, category: OWN_TOOLS.has(tool) ? toolCategory(tool) : "integration", name: tool, input },
      {
        type: "action_result",
        action_id: id,
        state: status === "error" ? "failed" : "completed",
        output: outputText(status === "error" ? state.error : state.output)
      }
    ]
  }

  const usage = (part: Json): Array<HarnessEvent> => {
    const tokens = isObject(part.tokens) ? part.tokens : {}
    const cache = isObject(tokens.cache) ? tokens.cache : {}
    done.input += num(tokens.input) + num(cache.read) + num(cache.write)
    done.output += num(tokens.output) + num(tokens.reasoning)
    done.cost += num(part.cost)
    return [totals()]
  }

  /** The execution's usage so far, with its model calls as its turns. */
  const totals = (): HarnessEvent => ({
    type: "usage",
    input_tokens: Math.round(done.input),
    output_tokens: Math.round(done.output),
    inference_cost: done.cost,
    compute_cost: 0,
    turns: done.steps
  })

  const failure = (event: Json): Array<HarnessEvent> => {
    const error = isObject(event.error) ? event.error : {}
    const data = isObject(error.data) ? error.data : {}
    const name = str(error.name) ?? "error"
    const status = typeof data.statusCode === "number" ? data.statusCode : undefined
    const said = str(data.message) ?? str(error.message)
    const detail = said === undefined || said.trim() === "" ? name : said.trim()
    if ((status !== undefined && AUTH_STATUSES.has(status)) || AUTH_ERRORS.has(name)) {
      return [{
        type: "result",
        outcome: "failed",
        error_code: "integration_not_configured",
        message: `the model endpoint refused opencode's credentials${status === undefined ? "" : ` (HTTP ${status})`}: ` +
          `check the harness's auth secret (${API_KEY_VARIABLE}) and the endpoint (${BASE_URL_VARIABLE}). opencode said: ${detail}`
      }]
    }
    const hint = /cannot be parsed as a URL/i.test(detail)
      ? ` (is ${BASE_URL_VARIABLE}, the endpoint with its /v1, set in the environment's variables?)`
      : ""
    return [{
      type: "result",
      outcome: "failed",
      error_code: "agent_failed",
      message: `opencode failed${status === undefined ? "" : ` (the model endpoint answered HTTP ${status})`}: ${detail}${hint}`
    }]
  }

  return (line) => {
    const event = parse(line)
    if (event === undefined) return []
    const events: Array<HarnessEvent> = []
    const id = str(event.sessionID)
    if (id !== undefined && id !== "" && id !== session) {
      session = id
      events.push({ type: "session", session_id: id, session_link: null })
    }
    const part = isObject(event.part) ? event.part : {}
    switch (event.type) {
      case "text": {
        const text = str(part.text)
        if (text !== undefined && text.trim() !== "") events.push({ type: "message", role: "assistant", text })
        break
      }
      case "tool_use":
        events.push(...toolUse(part))
        break
      case "step_start":
        done.steps += 1
        events.push(totals())
        break
      case "step_finish":
        events.push(...usage(part))
        break
      case "error":
        events.push(...failure(event))
        break
      default:
        break
    }
    return events
  }
}
