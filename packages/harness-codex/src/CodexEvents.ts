/**
 * Codex's `exec --json` output as our harness events (docs/harnesses.md#codex):
 * - `thread.started` → the session (`thread_id`; a resumed thread reports the same id);
 * - `item.started` / `item.completed` by the item's type:
 *   - `command_execution` → an action `shell` (category `command`, input `{command}`) when it
 *     starts, its result when it completes (`completed` when `exit_code` is 0, else `failed`;
 *     output `aggregated_output`); a command that reads a `skills/NAME/SKILL.md` is also a
 *     `read_skill` (Codex reads its skills with the shell, it reports no skill event);
 *   - `file_change` → an action `apply_patch` (category `files`, input `{changes}`) and its result
 *     (the changed paths; `failed` when its status is);
 *   - `mcp_tool_call` → an action `mcp__SERVER__TOOL` (category `integration`, input its
 *     arguments) and its result (the tool's content, or its error);
 *   - `web_search` → an action `web_search` (category `search`, input `{query}`) and its result;
 *   - `agent_message` (completed) → an assistant message;
 *   - `error` (a warning: an unknown model's metadata…; the turn goes on) → the status line;
 *   - `reasoning`, `todo_list` and anything else skipped.
 *   Item ids (`item_0`, `item_1`…) start again in each process, so an action's id is the item's
 *   prefixed with the process's number in the execution (`2:item_1`).
 * - a top-level `error` is a retry (`Reconnecting... 1/1 (…)`) → the status line, or the turn's
 *   fatal error, kept for the failure;
 * - `turn.completed` → usage: Codex reports the thread's totals so far (a resumed thread's include
 *   its earlier turns, earlier executions' too), so the usage is the sum over the execution's
 *   threads of what each one's latest totals add to its totals before the execution: those a
 *   `agent-runs.thread_totals` line (printed by our wrapper before it resumes a thread from an
 *   earlier execution, CodexLaunch.ts) says, else zero. Input tokens include cached ones
 *   (`cached_input_tokens` is part of `input_tokens`), output tokens include reasoning
 *   (`reasoning_output_tokens` is part of `output_tokens`). Codex reports no cost.
 * - `turn.failed` → the failure: a refused key (HTTP 401/403, "unauthorized", "invalid api key")
 *   or none at all (no `OPENAI_API_KEY`) is `integration_not_configured`, anything else
 *   `agent_failed` (one that could not reach the endpoint says to check `OPENAI_BASE_URL`), with
 *   Codex's own words (the turn's error, else the fatal `error` before it).
 * Anything else (`turn.started`, lines that are not JSON) is skipped (the transcript keeps it).
 */
import { countOf, isRecord, type JsonRecord, parseRecord, stringOf } from "@agent-runs/core/domain/CliOutput"
import type { HarnessEvent } from "@agent-runs/core/domain/Harness"
import { outputText, toolCategory } from "@agent-runs/core/domain/AgentTools"
import type { HarnessDecoder } from "@agent-runs/core/ports/AgentHarness"
import { THREAD_TOTALS } from "./CodexLaunch.js"

type Json = JsonRecord

const isObject = isRecord
const str = stringOf
const num = countOf
const parse = parseRecord

/** A stream error Codex retries: `Reconnecting... 2/5 (…)`. */
const RETRY = /^Reconnecting\.\.\./

/** A refused key, in Codex's words (`unexpected status 401 Unauthorized: Incorrect API key provided…`). */
const REFUSED = /\bstatus:? (401|403)\b|\b401 Unauthorized|\b403 Forbidden|unauthori[sz]ed|invalid[ _-]?api[ _-]?key|incorrect api key/i

/** No key at all: the provider's `env_key` is not set. */
const NO_KEY = /missing environment variable: `?OPENAI_API_KEY/i

/** The endpoint could not be reached (`Connection failed: error sending request`, a name that does not resolve). */
const UNREACHABLE = /connection failed|error sending request|failed to lookup address|dns error|connection refused/i

/** The HTTP status Codex quotes (`unexpected status 401 Unauthorized: …`). */
const STATUS = /\bstatus:? (\d{3})\b/i

/** A word of a shell command naming a skill file (anchored: tested word by word, never on the whole command). */
const SKILL_FILE = /^(?:.*\/)?skills\/[^/]+\/SKILL\.md$/

/** The skill file a shell command reads, if any: its first word naming one (the first 64 KiB of the command only). */
const skillFileIn = (command: string): string | undefined => {
  for (const word of command.slice(0, 65_536).split(/[\s'"`]+/)) {
    if (word.length <= 4_096 && SKILL_FILE.test(word)) return word
  }
  return undefined
}

const mcpResult = (item: Json): unknown => {
  const error = isObject(item.error) ? str(item.error.message) : str(item.error)
  if (error !== undefined) return error
  const result = isObject(item.result) ? item.result : undefined
  return result === undefined ? "" : outputText(result.content ?? result.structured_content ?? result)
}

const changesText = (item: Json): string =>
  (Array.isArray(item.changes) ? item.changes.filter(isObject) : [])
    .map((change) => `${str(change.kind) ?? "update"} ${str(change.path) ?? ""}`.trim())
    .join("\n")

export const decoder = (): HarnessDecoder => {
  /** The latest totals of each thread of the execution (a resumed one's from before it, first). */
  const totals = new Map<string, { input: number; output: number }>()
  const sum = { input: 0, output: 0 }
  /** How many processes of the execution started so far (their `thread.started`). */
  let processes = 0
  let thread = ""
  /** The fatal error the current turn reported before `turn.failed`. */
  let lastError: string | undefined
  /** The actions started in this process (by item id), so that a completed item without a start still gets one. */
  const started = new Set<string>()

  const actionId = (item: Json) => `${processes}:${str(item.id) ?? "item"}`

  const action = (item: Json): Array<HarnessEvent> => {
    const id = actionId(item)
    switch (item.type) {
      case "command_execution": {
        const command = str(item.command) ?? ""
        const skill = skillFileIn(command)
        return [
          ...(skill === undefined ? [] : [{ type: "read_skill" as const, skill_path: skill }]),
          { type: "action", id, category: "command", name: "shell", input: { command } }
        ]
      }
      case "file_change":
        return [{ type: "action", id, category: "files", name: "apply_patch", input: { changes: Array.isArray(item.changes) ? item.changes : [] } }]
      case "mcp_tool_call": {
        const server = str(item.server) ?? "mcp"
        const tool = str(item.tool) ?? "tool"
        return [{ type: "action", id, category: "integration", name: `mcp__${server}__${tool}`, input: item.arguments ?? {} }]
      }
      case "web_search":
        return [{ type: "action", id, category: toolCategory("web_search"), name: "web_search", input: { query: str(item.query) ?? "" } }]
      default:
        return []
    }
  }

  const result = (item: Json): Array<HarnessEvent> => {
    const action_id = actionId(item)
    const failed = item.status === "failed" || item.status === "declined"
    switch (item.type) {
      case "command_execution":
        return [{
          type: "action_result",
          action_id,
          state: item.exit_code === 0 && !failed ? "completed" : "failed",
          output: str(item.aggregated_output) ?? ""
        }]
      case "file_change":
        return [{ type: "action_result", action_id, state: failed ? "failed" : "completed", output: changesText(item) }]
      case "mcp_tool_call": {
        const error = item.error !== undefined && item.error !== null
        return [{ type: "action_result", action_id, state: failed || error ? "failed" : "completed", output: mcpResult(item) }]
      }
      case "web_search":
        return [{ type: "action_result", action_id, state: failed ? "failed" : "completed", output: item.action === undefined || item.action === null ? "" : outputText(item.action) }]
      default:
        return []
    }
  }

  const itemStarted = (item: Json): Array<HarnessEvent> => {
    const events = action(item)
    if (events.length > 0) started.add(actionId(item))
    return events
  }

  const itemCompleted = (item: Json): Array<HarnessEvent> => {
    if (item.type === "agent_message") {
      const text = str(item.text)
      return text === undefined || text.trim() === "" ? [] : [{ type: "message", role: "assistant", text }]
    }
    if (item.type === "error") {
      const message = str(item.message)
      return message === undefined ? [] : [{ type: "status", message: `Codex: ${message}` }]
    }
    const events = started.has(actionId(item)) ? [] : action(item)
    started.delete(actionId(item))
    return [...events, ...result(item)]
  }

  const tokensOf = (event: Json) => {
    const reported = isObject(event.usage) ? event.usage : {}
    return { input: num(reported.input_tokens), output: num(reported.output_tokens) }
  }

  const usage = (event: Json): Array<HarnessEvent> => {
    const latest = tokensOf(event)
    const before = totals.get(thread) ?? { input: 0, output: 0 }
    totals.set(thread, latest)
    // The sum over threads, kept as it changes (not summed again on every turn). A thread's totals
    // only grow: a starting total above them (the session files are the agent's to write) is not
    // the thread's, and the turn counts from zero rather than hiding its tokens.
    sum.input += latest.input - (before.input <= latest.input ? before.input : 0)
    sum.output += latest.output - (before.output <= latest.output ? before.output : 0)
    return [{ type: "usage", input_tokens: Math.round(sum.input), output_tokens: Math.round(sum.output), inference_cost: 0, compute_cost: 0 }]
  }

  const failure = (event: Json): Array<HarnessEvent> => {
    const said = (isObject(event.error) ? str(event.error.message) : str(event.error)) ?? lastError
    const detail = said === undefined || said.trim() === "" ? "the turn failed" : said.trim()
    const status = STATUS.exec(detail)?.[1]
    lastError = undefined
    if (NO_KEY.test(detail)) {
      return [{
        type: "result",
        outcome: "failed",
        error_code: "integration_not_configured",
        message: `Codex has no key for the model endpoint: the harness's auth secret (OPENAI_API_KEY) is not set. Codex said: ${detail}`
      }]
    }
    return [REFUSED.test(detail)
      ? {
        type: "result",
        outcome: "failed",
        error_code: "integration_not_configured",
        message: `the model endpoint refused Codex's credentials${status === undefined ? "" : ` (HTTP ${status})`}: ` +
          `check the harness's auth secret (OPENAI_API_KEY) and the endpoint (OPENAI_BASE_URL). Codex said: ${detail}`
      }
      : {
        type: "result",
        outcome: "failed",
        error_code: "agent_failed",
        message: status === undefined && UNREACHABLE.test(detail)
          ? `Codex could not reach the model endpoint: check the endpoint (OPENAI_BASE_URL in the environment's variables). Codex said: ${detail}`
          : `Codex failed${status === undefined ? "" : ` (the model endpoint answered HTTP ${status})`}: ${detail}`
      }]
  }

  return (line) => {
    const event = parse(line)
    if (event === undefined) return []
    switch (event.type) {
      case "thread.started":
        if (typeof event.thread_id !== "string") return []
        processes += 1
        thread = event.thread_id
        lastError = undefined
        started.clear()
        return [{ type: "session", session_id: event.thread_id, session_link: null }]
      case "turn.started":
        lastError = undefined
        return []
      case "item.started":
        return isObject(event.item) ? itemStarted(event.item) : []
      case "item.completed":
        return isObject(event.item) ? itemCompleted(event.item) : []
      case "turn.completed":
        return usage(event)
      case "turn.failed":
        return failure(event)
      case THREAD_TOTALS:
        // A thread resumed from an earlier execution: its totals count from there (this
        // execution's own, when it ran the thread already, stay).
        if (typeof event.thread_id === "string" && !totals.has(event.thread_id)) totals.set(event.thread_id, tokensOf(event))
        return []
      case "error": {
        const message = str(event.message)
        if (message === undefined) return []
        if (RETRY.test(message)) return [{ type: "status", message: `Codex: ${message}` }]
        lastError = message
        return []
      }
      default:
        return []
    }
  }
}
