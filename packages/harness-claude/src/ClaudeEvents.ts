/**
 * Claude Code's `stream-json` output as our harness events (docs/harnesses.md#claude-code):
 * - `system`/`init` → the session (`session_id`); `system`/`api_retry` → a status line;
 * - `assistant` content: `text` → an assistant message, `tool_use` → an action (category by tool
 *   name; the `Skill` tool → `read_skill`), `thinking` skipped;
 * - `user` content `tool_result` → the action's result (`failed` when `is_error`);
 * - `result` → usage (tokens with cache reads and writes, `total_cost_usd` as inference cost; summed
 *   over the execution's turns) and, when `is_error`, the failure: a refused key (401/403,
 *   `authentication_failed`) is `integration_not_configured`, anything else `agent_failed`, with
 *   the CLI's own words.
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

const contentOf = (event: Json): Array<Json> => {
  const content = isObject(event.message) ? event.message.content : undefined
  return Array.isArray(content) ? content.filter(isObject) : []
}

const AUTH_STATUSES = new Set([401, 403])

export const decoder = (): HarnessDecoder => {
  /** Usage of the execution's earlier turns. */
  const done = { input: 0, output: 0, cost: 0 }
  /** The error the latest assistant message carried (`authentication_failed`…). */
  let lastError: string | undefined
  let lastText: string | undefined

  const assistant = (event: Json): Array<HarnessEvent> => {
    const error = str(event.error)
    if (error !== undefined) lastError = error
    return contentOf(event).flatMap((block): Array<HarnessEvent> => {
      if (block.type === "text" && typeof block.text === "string" && block.text.trim() !== "") {
        lastText = block.text
        return [{ type: "message", role: "assistant", text: block.text }]
      }
      if (block.type === "tool_use" && typeof block.id === "string" && typeof block.name === "string") {
        const input = isObject(block.input) ? block.input : {}
        if (block.name === "Skill") {
          return [{ type: "read_skill", skill_path: str(input.skill) ?? str(input.command) ?? str(input.name) ?? "unknown" }]
        }
        return [{ type: "action", id: block.id, category: toolCategory(block.name), name: block.name, input }]
      }
      return []
    })
  }

  const toolResults = (event: Json): Array<HarnessEvent> =>
    contentOf(event).flatMap((block): Array<HarnessEvent> =>
      block.type === "tool_result" && typeof block.tool_use_id === "string"
        ? [{
          type: "action_result",
          action_id: block.tool_use_id,
          state: block.is_error === true ? "failed" : "completed",
          output: outputText(block.content)
        }]
        : []
    )

  const result = (event: Json): Array<HarnessEvent> => {
    const usage = isObject(event.usage) ? event.usage : {}
    done.input += num(usage.input_tokens) + num(usage.cache_creation_input_tokens) + num(usage.cache_read_input_tokens)
    done.output += num(usage.output_tokens)
    done.cost += num(event.total_cost_usd)
    const events: Array<HarnessEvent> = [{
      type: "usage",
      input_tokens: Math.round(done.input),
      output_tokens: Math.round(done.output),
      inference_cost: done.cost,
      compute_cost: 0
    }]
    if (event.is_error !== true) return events
    const status = typeof event.api_error_status === "number" ? event.api_error_status : undefined
    // Claude Code's own words first (`result`, then `errors`), the assistant's last text only then.
    const errors = Array.isArray(event.errors) ? event.errors.flatMap((e) => (typeof e === "string" ? [e] : [])).join("; ") : ""
    const said = str(event.result) ?? (errors === "" ? undefined : errors) ?? lastText
    const detail = said === undefined || said.trim() === "" ? `${str(event.subtype) ?? "error"}` : said.trim()
    const refused = (status !== undefined && AUTH_STATUSES.has(status)) || lastError === "authentication_failed"
    events.push(refused
      ? {
        type: "result",
        outcome: "failed",
        error_code: "integration_not_configured",
        message: `the model endpoint refused Claude Code's credentials${status === undefined ? "" : ` (HTTP ${status})`}: ` +
          `check the harness's auth secret (ANTHROPIC_API_KEY) and the endpoint (ANTHROPIC_BASE_URL). Claude Code said: ${detail}`
      }
      : {
        type: "result",
        outcome: "failed",
        error_code: "agent_failed",
        message: `Claude Code failed${status === undefined ? "" : ` (the model endpoint answered HTTP ${status})`}: ${detail}`
      })
    return events
  }

  return (line) => {
    const event = parse(line)
    if (event === undefined) return []
    switch (event.type) {
      case "system":
        if (event.subtype === "init" && typeof event.session_id === "string") {
          lastError = undefined
          lastText = undefined
          return [{ type: "session", session_id: event.session_id, session_link: null }]
        }
        if (event.subtype === "api_retry") {
          const status = typeof event.error_status === "number" ? ` (HTTP ${event.error_status})` : ""
          return [{ type: "status", message: `retrying the model request${status}, attempt ${num(event.attempt)} of ${num(event.max_retries)}` }]
        }
        return []
      case "assistant":
        return assistant(event)
      case "user":
        return toolResults(event)
      case "result":
        return result(event)
      default:
        return []
    }
  }
}
