/**
 * Unit tests of Gemini CLI's output decoder (src/GeminiEvents.ts), fed with lines shaped like the
 * real `gemini … --output-format stream-json` transcripts (Gemini CLI 0.61.0,
 * /tmp/cli-findings.md): a whole turn, usage over two processes of one execution, a refused key
 * ("API key not valid"), HTTP 500 after the retries, the assistant's deltas joined into one
 * message, `activate_skill` as `read_skill`, tool categories and failed tools, and robustness
 * (unknown events, text that is not JSON, wrong field types, a 1 MB text, 5,000 levels of
 * nesting). No CLI is started. Every event a test gets is checked against the `HarnessEvent`
 * schema, so that no event the reducer cannot take goes unnoticed.
 */
import { decodeLines as decodeChecked, deepArray, deepObject, DEPTH, DEPTHS, json, resultOf } from "@agent-runs/core/testing"
import type { HarnessDecoder } from "@agent-runs/core/ports/AgentHarness"
import { describe, expect, it } from "vitest"
import { decoder } from "../src/GeminiEvents.js"
import { geminiDecoder } from "../src/index.js"

/** The events the lines give, each checked against the schema (a fresh decoder unless one is given). */
const decodeLines = (lines: ReadonlyArray<string>, decode: HarnessDecoder = decoder()) => decodeChecked(lines, decode)

const SID = "acf4d104-488e-4be4-bd1e-71511ebdacfa"
const TS = "2026-11-25T11:23:22.114Z"
const COMMAND = "echo hello > f.txt && ls"
const SHELL_ID = "run_shell_command__run_shell_command_1795605802179_0"

// Lines as Gemini CLI 0.61.0 prints them.
const init = (sessionId: string = SID) => json({ type: "init", timestamp: TS, session_id: sessionId, model: "gemini-2.5-pro" })
const userMessage = (content: string) => json({ type: "message", timestamp: TS, role: "user", content })
const delta = (content: string) => json({ type: "message", timestamp: TS, role: "assistant", content, delta: true })
const toolUse = (id: string, name: string, parameters: unknown) =>
  json({ type: "tool_use", timestamp: TS, tool_name: name, tool_id: id, parameters })
const toolResult = (id: string, status: string, output: unknown, error?: unknown) =>
  json({ type: "tool_result", timestamp: TS, tool_id: id, status, output, ...(error === undefined ? {} : { error }) })
const stats = (input: number, output: number, total: number = input + output) => ({
  total_tokens: total,
  input_tokens: input,
  output_tokens: output,
  cached: 0,
  input,
  duration_ms: 951,
  tool_calls: 1,
  models: { "gemini-2.5-pro": { total_tokens: total, input_tokens: input, output_tokens: output, cached: 0, input } }
})
const success = (input: number, output: number, total?: number) =>
  json({ type: "result", timestamp: TS, status: "success", stats: stats(input, output, total) })
const failed = (message: string, type = "unknown") =>
  json({ type: "result", timestamp: TS, status: "error", error: { type, message }, stats: stats(0, 0) })
const apiError = (code: number, message: string, status: string, details?: unknown) =>
  `[API Error: ${json({ error: { code, message, status, ...(details === undefined ? {} : { details }) } })}]`

describe("Gemini CLI decoder", () => {
  it("is the decoder the package exports, and each call makes a fresh one", () => {
    expect(geminiDecoder).toBe(decoder)
    decodeLines([init(), success(200, 40), delta("pending")], decoder())
    expect(decodeLines([success(10, 5)])).toEqual([
      { type: "usage", input_tokens: 10, output_tokens: 5, inference_cost: 0, compute_cost: 0 }
    ])
  })

  it("decodes a whole turn: session, text, a shell command and its result, the answer in deltas, usage", () => {
    const events = decodeLines([
      init(),
      userMessage(`RUN: ${COMMAND}`),
      delta("I'll run "),
      delta("the command."),
      toolUse(SHELL_ID, "run_shell_command", { command: COMMAND, description: "Run the requested command" }),
      toolResult(SHELL_ID, "success", "f.txt"),
      delta("DONE: <untrusted_context>\nOut"),
      delta("put: f.txt\nProcess Group PGID"),
      delta(": 17920\n</untrusted_context>"),
      success(200, 40)
    ])
    expect(events).toEqual([
      { type: "session", session_id: SID, session_link: null },
      { type: "message", role: "assistant", text: "I'll run the command." },
      {
        type: "action",
        id: SHELL_ID,
        category: "command",
        name: "run_shell_command",
        input: { command: COMMAND, description: "Run the requested command" }
      },
      { type: "action_result", action_id: SHELL_ID, state: "completed", output: "f.txt" },
      { type: "message", role: "assistant", text: "DONE: <untrusted_context>\nOutput: f.txt\nProcess Group PGID: 17920\n</untrusted_context>" },
      { type: "usage", input_tokens: 200, output_tokens: 40, inference_cost: 0, compute_cost: 0 }
    ])
  })

  it("sums usage over the execution's processes, each counting its own turn", () => {
    const decode = decoder()
    const first = decodeLines([init(), userMessage("hello"), delta("FINAL ANSWER"), success(200, 40)], decode)
    expect(first.at(-1)).toEqual({ type: "usage", input_tokens: 200, output_tokens: 40, inference_cost: 0, compute_cost: 0 })

    // The follow-up: `gemini --resume SID`, a new process; its stats are its own turn's.
    const second = decodeLines([init(), userMessage("second question"), delta("SECOND "), delta("ANSWER"), success(300, 60)], decode)
    expect(second).toEqual([
      { type: "session", session_id: SID, session_link: null },
      { type: "message", role: "assistant", text: "SECOND ANSWER" },
      { type: "usage", input_tokens: 500, output_tokens: 100, inference_cost: 0, compute_cost: 0 }
    ])
  })

  it("counts thinking tokens as output (the total less the input when that is more)", () => {
    // 200 in, 40 out, 60 of thoughts: total 300.
    expect(decodeLines([init(), success(200, 40, 300)]).at(-1)).toEqual({
      type: "usage",
      input_tokens: 200,
      output_tokens: 100,
      inference_cost: 0,
      compute_cost: 0
    })
  })

  it("reports a refused key (400 \"API key not valid\") as integration_not_configured", () => {
    const details = [{
      "@type": "type.googleapis.com/google.rpc.ErrorInfo",
      reason: "API_KEY_INVALID",
      domain: "googleapis.com",
      metadata: { service: "generativelanguage.googleapis.com" }
    }]
    const events = decodeLines([
      init(),
      userMessage("hello"),
      failed(apiError(400, "API key not valid. Please pass a valid API key.", "INVALID_ARGUMENT", details))
    ])
    expect(events.slice(0, 2)).toEqual([
      { type: "session", session_id: SID, session_link: null },
      { type: "usage", input_tokens: 0, output_tokens: 0, inference_cost: 0, compute_cost: 0 }
    ])
    expect(events).toHaveLength(3)
    const failure = resultOf(events)
    expect(failure).toMatchObject({ type: "result", outcome: "failed", error_code: "integration_not_configured" })
    expect(failure.message).toContain("GEMINI_API_KEY")
    expect(failure.message).toContain("GOOGLE_GEMINI_BASE_URL")
    expect(failure.message).toContain("API key not valid. Please pass a valid API key. (HTTP 400, INVALID_ARGUMENT)")
  })

  it("reports 401 UNAUTHENTICATED, 403 PERMISSION_DENIED and FatalAuthenticationError as integration_not_configured", () => {
    for (const line of [
      failed(apiError(401, "Request had invalid authentication credentials.", "UNAUTHENTICATED")),
      failed(apiError(403, "The caller does not have permission", "PERMISSION_DENIED")),
      failed("Could not authenticate with the Gemini API.", "FatalAuthenticationError")
    ]) {
      expect(resultOf(decodeLines([init(), line]))).toMatchObject({ outcome: "failed", error_code: "integration_not_configured" })
    }
  })

  it("reports HTTP 500 after the retries as agent_failed with the API's words", () => {
    const events = decodeLines([init(), userMessage("hello"), failed(apiError(500, "fake internal error", "INTERNAL"))])
    expect(events).toHaveLength(3)
    const failure = resultOf(events)
    expect(failure).toMatchObject({ type: "result", outcome: "failed", error_code: "agent_failed" })
    expect(failure.message).toContain("fake internal error (HTTP 500, INTERNAL)")
    expect(events.at(-1)).toBe(failure)
  })

  it("says to check GOOGLE_GEMINI_BASE_URL when the endpoint cannot be reached", () => {
    const failure = resultOf(decodeLines([init(), failed("exception TypeError: fetch failed sending request")]))
    expect(failure).toMatchObject({ outcome: "failed", error_code: "agent_failed" })
    expect(failure.message).toContain("GOOGLE_GEMINI_BASE_URL")
    expect(failure.message).toContain("fetch failed")
  })

  it("explains a failed result without a message by the latest error event", () => {
    const events = decodeLines([
      init(),
      json({ type: "error", timestamp: TS, severity: "error", message: "Model stream ended with an empty response." }),
      json({ type: "result", timestamp: TS, status: "error", stats: stats(0, 0) })
    ])
    expect(events[1]).toEqual({ type: "status", message: "Gemini CLI (error): Model stream ended with an empty response." })
    expect(resultOf(events)).toMatchObject({ outcome: "failed", error_code: "agent_failed" })
    expect(resultOf(events).message).toContain("Model stream ended with an empty response.")
  })

  describe("Gemini CLI specifics", () => {
    it("joins consecutive assistant deltas into one message, emitted when another event comes", () => {
      const decode = decoder()
      expect(decode(delta("Hel"))).toEqual([])
      expect(decode(delta("lo, "))).toEqual([])
      expect(decode(delta("world"))).toEqual([])
      expect(decodeLines([toolUse("t1", "read_file", { absolute_path: "/work/f.txt" })], decode)).toEqual([
        { type: "message", role: "assistant", text: "Hello, world" },
        { type: "action", id: "t1", category: "files", name: "read_file", input: { absolute_path: "/work/f.txt" } }
      ])
    })

    it("ends the pending text at a tool result, an error, the user's message, a whole message and a new process", () => {
      expect(decodeLines([delta("a"), toolResult("t1", "success", "ok")])).toEqual([
        { type: "message", role: "assistant", text: "a" },
        { type: "action_result", action_id: "t1", state: "completed", output: "ok" }
      ])
      expect(decodeLines([delta("b"), json({ type: "error", timestamp: TS, severity: "warning", message: " Loop detected " })])).toEqual([
        { type: "message", role: "assistant", text: "b" },
        { type: "status", message: "Gemini CLI (warning): Loop detected" }
      ])
      expect(decodeLines([delta("c"), userMessage("next")])).toEqual([{ type: "message", role: "assistant", text: "c" }])
      expect(decodeLines([delta("d"), json({ type: "message", timestamp: TS, role: "assistant", content: "whole" })])).toEqual([
        { type: "message", role: "assistant", text: "d" },
        { type: "message", role: "assistant", text: "whole" }
      ])
      // A process stopped in the middle of its answer: its text comes before the next one's session.
      expect(decodeLines([delta("e"), init("next-session")])).toEqual([
        { type: "message", role: "assistant", text: "e" },
        { type: "session", session_id: "next-session", session_link: null }
      ])
    })

    it("drops deltas that are only white space", () => {
      expect(decodeLines([delta(" "), delta("\n"), success(1, 1)])).toEqual([
        { type: "usage", input_tokens: 1, output_tokens: 1, inference_cost: 0, compute_cost: 0 }
      ])
    })

    it("turns activate_skill into read_skill and skips its result", () => {
      const events = decodeLines([
        toolUse("activate_skill_1", "activate_skill", { name: "pdf-report" }),
        toolResult("activate_skill_1", "success", "<activated_skill name=\"pdf-report\">…</activated_skill>"),
        toolUse("activate_skill_2", "activate_skill", {}),
        toolResult("activate_skill_2", "success", "")
      ])
      expect(events).toEqual([
        { type: "read_skill", skill_path: "pdf-report" },
        { type: "read_skill", skill_path: "unknown" }
      ])
    })

    it("gives MCP tools (mcp_SERVER_TOOL) the integration category, searches the search category", () => {
      const events = decodeLines([
        toolUse("t1", "mcp_ping_ping", {}),
        toolUse("t2", "google_web_search", { query: "effect" }),
        toolUse("t3", "search_file_content", { pattern: "x" }),
        toolUse("t4", "replace", { file_path: "/work/f.txt", old_string: "a", new_string: "b" })
      ])
      expect(events.map((e) => (e.type === "action" ? [e.name, e.category] : e.type))).toEqual([
        ["mcp_ping_ping", "integration"],
        ["google_web_search", "search"],
        ["search_file_content", "search"],
        ["replace", "files"]
      ])
    })

    it("marks a tool result with status error failed, with the error's message when there is no output", () => {
      const enoent = "ENOENT: no such file or directory, mkdtemp '/tmp/x/tmp/gemini-shell-XXXXXX'"
      expect(decodeLines([
        toolResult("t1", "error", "", { type: "tool_execution_error", message: enoent }),
        toolResult("t2", "error", "partial output", { type: "tool_execution_error", message: "exit 1" }),
        toolResult("t3", "success", [{ text: "a" }, { text: "b" }])
      ])).toEqual([
        { type: "action_result", action_id: "t1", state: "failed", output: enoent },
        { type: "action_result", action_id: "t2", state: "failed", output: "partial output" },
        { type: "action_result", action_id: "t3", state: "completed", output: "a\nb" }
      ])
    })
  })

  describe("robustness", () => {
    /** Lines that are not Gemini CLI events, or are broken ones: nothing. */
    const ignored: ReadonlyArray<readonly [string, string]> = [
      ["an unknown event type", json({ type: "thought", timestamp: TS, subject: "Planning" })],
      ["an event without a type", json({ session_id: SID })],
      ["a type that is not a string", json({ type: ["init"], session_id: SID })],
      ["stderr-like text", "Attempt 1 failed with status 500. Retrying with backoff..."],
      ["a line that looks like an API error", "[API Error: {\"error\":{\"code\":500}}]"],
      ["broken JSON", '{"type":"init","session_id":"abc'],
      ["a blank line", ""],
      ["a line of spaces", "   "],
      ["a JSON array", json([{ type: "init", session_id: SID }])],
      ["a JSON string", json("{\"type\":\"init\"}")],
      ["a JSON number", "3.14"],
      ["JSON false", "false"],
      ["init with a numeric session id", json({ type: "init", session_id: 7 })],
      ["init without a session id", json({ type: "init" })],
      ["an assistant delta whose content is a number", json({ type: "message", role: "assistant", content: 42, delta: true })],
      ["an assistant message with null content", json({ type: "message", role: "assistant", content: null })],
      ["a message whose role is a number", json({ type: "message", role: 1, content: "x" })],
      ["a tool_use without an id", json({ type: "tool_use", tool_name: "run_shell_command", parameters: {} })],
      ["a tool_use with a numeric id", json({ type: "tool_use", tool_id: 5, tool_name: "run_shell_command" })],
      ["a tool_use with a null name", json({ type: "tool_use", tool_id: "t", tool_name: null })],
      ["a tool_result without an id", json({ type: "tool_result", status: "success", output: "x" })],
      ["an error event with a numeric message", json({ type: "error", severity: "error", message: 500 })],
      ["an error event with a blank message", json({ type: "error", message: "  " })],
      ["a whole line nested 5,000 objects deep", deepObject(DEPTH)],
      ["a whole line nested 5,000 arrays deep", deepArray(DEPTH)],
      ["a whole line nested 100,000 objects deep", deepObject(100_000)],
      ["a 1 MB line that is not JSON", "x".repeat(1_000_000)]
    ]
    it.each(ignored)("ignores %s", (_name, line) => {
      expect(decodeLines([line])).toEqual([])
    })

    /** Known events with fields of the wrong types: whatever comes out must be valid events. */
    const wrongTypes: ReadonlyArray<readonly [string, string]> = [
      ["a tool_use with parameters that are a string", json({ type: "tool_use", tool_id: "t", tool_name: "run_shell_command", parameters: "ls" })],
      ["an activate_skill with a numeric name", json({ type: "tool_use", tool_id: "t", tool_name: "activate_skill", parameters: { name: 3 } })],
      ["a tool_result with object output and a numeric status", json({ type: "tool_result", tool_id: "t", status: 1, output: { stdout: "x" } })],
      ["a failed tool_result with a string error", json({ type: "tool_result", tool_id: "t", status: "error", output: null, error: "boom" })],
      ["a failed tool_result with a numeric error message", json({ type: "tool_result", tool_id: "t", status: "error", error: { message: 1 } })],
      ["a result with stats null", json({ type: "result", status: "success", stats: null })],
      ["a result with string and negative counts", json({ type: "result", status: "success", stats: { input_tokens: "200", output_tokens: -3, total_tokens: "x" } })],
      ["a result with fractional counts", json({ type: "result", status: "success", stats: { input_tokens: 1.5, output_tokens: 2.5 } })],
      ["a failed result with a string error", json({ type: "result", status: "error", error: "API key not valid" })],
      ["a failed result with a numeric message and type", json({ type: "result", status: "error", error: { message: 401, type: 2 } })],
      ["a failed result with null error", json({ type: "result", status: "error", error: null })],
      ["a failed result with a blank message", json({ type: "result", status: "error", error: { message: "   " } })],
      ["a failed result with API error JSON of the wrong shape", json({ type: "result", status: "error", error: { message: "[API Error: {\"error\":{\"code\":\"500\",\"message\":7}}]" } })],
      ["a failed result with an API error that is not JSON", json({ type: "result", status: "error", error: { message: "[API Error: {not json}]" } })],
      ["a result with token counts beyond the safe integers (1e300)", json({ type: "result", status: "success", stats: { input_tokens: 1e300, output_tokens: 1e19 } })]
    ]
    it.each(wrongTypes)("never throws and gives valid events on %s", (_name, line) => {
      decodeLines([init(), delta("pending text"), line])
    })

    it("keeps a 1 MB text (in deltas) and a 1 MB tool output whole", () => {
      const half = "x".repeat(500_000)
      const big = "y".repeat(1_000_000)
      const events = decodeLines([delta(half), delta(half), toolResult("t1", "success", big)])
      expect(events).toEqual([
        { type: "message", role: "assistant", text: half + half },
        { type: "action_result", action_id: "t1", state: "completed", output: big }
      ])
    })

    it.each(DEPTHS)("takes tool parameters nested %i levels deep without throwing", (depth) => {
      const line = '{"type":"tool_use","tool_id":"t1","tool_name":"run_shell_command","parameters":' + deepObject(depth) + "}"
      const events = decodeLines([line])
      expect(events).toHaveLength(1)
      expect(events[0]).toMatchObject({ type: "action", id: "t1", category: "command" })
    })

    it.each(DEPTHS)("takes a failed result whose message embeds JSON nested %i levels deep without throwing", (depth) => {
      const line = json({ type: "result", status: "error", error: { message: `[API Error: ${deepObject(depth)}]` } })
      expect(resultOf(decodeLines([line]))).toMatchObject({ outcome: "failed", error_code: "agent_failed" })
    })

    it.each(DEPTHS)("never throws on a tool output nested %i levels deep", (depth) => {
      const line = '{"type":"tool_result","tool_id":"t1","status":"success","output":' + deepObject(depth) + "}"
      const events = decodeLines([line])
      expect(events).toHaveLength(1)
      expect(events[0]).toMatchObject({ type: "action_result", action_id: "t1", state: "completed" })
    })

    it("goes on decoding after bad lines, keeping the pending text", () => {
      const events = decodeLines([
        init(),
        delta("still "),
        "not json",
        "[1]",
        deepObject(DEPTH),
        "",
        json({ type: "unknown_kind" }),
        delta("here"),
        success(1, 2)
      ])
      expect(events).toEqual([
        { type: "session", session_id: SID, session_link: null },
        { type: "message", role: "assistant", text: "still here" },
        { type: "usage", input_tokens: 1, output_tokens: 2, inference_cost: 0, compute_cost: 0 }
      ])
    })
  })
})
