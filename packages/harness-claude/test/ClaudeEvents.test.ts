/**
 * Unit tests of Claude Code's output decoder (src/ClaudeEvents.ts), fed with lines shaped like the
 * real `claude -p … --output-format stream-json --verbose` transcripts (Claude Code 2.1.197,
 * /tmp/cli-findings.md): a whole turn, usage over two processes of one execution, a refused key,
 * HTTP 500 after the retries, the `Skill` tool and other tool categories, and robustness (unknown
 * events, text that is not JSON, wrong field types, a 1 MB text, 5,000 levels of nesting). No CLI
 * is started. Every event a test gets is checked against the `HarnessEvent` schema, so that no
 * event the reducer cannot take goes unnoticed.
 */
import { decodeLines as decodeChecked, deepArray, deepObject, DEPTH, DEPTHS, json, resultOf } from "@agent-runs/core/testing"
import type { HarnessDecoder } from "@agent-runs/core/ports/AgentHarness"
import { describe, expect, it } from "vitest"
import { decoder } from "../src/ClaudeEvents.js"
import { claudeDecoder } from "../src/index.js"

/** The events the lines give, each checked against the schema (a fresh decoder unless one is given). */
const decodeLines = (lines: ReadonlyArray<string>, decode: HarnessDecoder = decoder()) => decodeChecked(lines, decode)

const SID = "a138c4c1-7cd8-4fb8-b110-9c1189f26466"

// Lines as Claude Code 2.1.197 prints them (trimmed of fields the decoder does not read).
const init = (sessionId: string = SID) => json({
  type: "system",
  subtype: "init",
  cwd: "/tmp/fm/final/claude/work",
  session_id: sessionId,
  tools: ["Task", "Bash", "Glob", "Grep", "Read", "Edit", "Write", "Skill"],
  mcp_servers: [],
  model: "claude-opus-4-8[1m]",
  permissionMode: "bypassPermissions",
  slash_commands: [],
  apiKeySource: "ANTHROPIC_API_KEY",
  claude_code_version: "2.1.197",
  output_style: "default",
  agents: [],
  skills: [],
  uuid: "7c2f7a3e-2d55-4a53-8f2b-0c1f7f1f3b6e"
})

const assistant = (content: ReadonlyArray<unknown>, extra: Record<string, unknown> = {}) => json({
  type: "assistant",
  message: {
    id: "msg_fake_000002",
    type: "message",
    role: "assistant",
    model: "claude-opus-4-8",
    content,
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 100, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1, service_tier: "standard" }
  },
  parent_tool_use_id: null,
  session_id: SID,
  uuid: "0b7f1c1e-8a42-4a7e-9d0e-8d8c7c6d5e4f",
  ...extra
})

const toolResult = (toolUseId: string, content: unknown, isError = false) => json({
  type: "user",
  message: { role: "user", content: [{ tool_use_id: toolUseId, type: "tool_result", content, is_error: isError }] },
  parent_tool_use_id: null,
  session_id: SID,
  uuid: "9e8d7c6b-5a49-4382-a1b0-c9d8e7f6a5b4",
  tool_use_result: { stdout: typeof content === "string" ? content : "", stderr: "", interrupted: false, isImage: false, noOutputExpected: false }
})

const result = (fields: Record<string, unknown>) => json({
  type: "result",
  subtype: "success",
  is_error: false,
  api_error_status: null,
  duration_ms: 800,
  duration_api_ms: 700,
  num_turns: 2,
  result: "DONE: f.txt",
  stop_reason: "end_turn",
  session_id: SID,
  total_cost_usd: 0.002,
  usage: {
    input_tokens: 200,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    output_tokens: 40,
    server_tool_use: { web_search_requests: 0, web_fetch_requests: 0 },
    service_tier: "standard"
  },
  modelUsage: {
    "claude-opus-4-8[1m]": { inputTokens: 200, outputTokens: 40, costUSD: 0.002, contextWindow: 1000000, maxOutputTokens: 64000 }
  },
  permission_denials: [],
  terminal_reason: "completed",
  uuid: "5d4c3b2a-1908-4f7e-a6d5-c4b3a2918070",
  ...fields
})

const COMMAND = "echo hello > f.txt && ls"

describe("Claude Code decoder", () => {
  it("is the decoder the package exports, and each call makes a fresh one", () => {
    expect(claudeDecoder).toBe(decoder)
    const first = decoder()
    decodeLines([init(), result({})], first)
    // A new decoder does not add the usage of another one's turns.
    expect(decodeLines([result({})])).toEqual([
      { type: "usage", input_tokens: 200, output_tokens: 40, inference_cost: 0.002, compute_cost: 0 }
    ])
  })

  it("decodes a whole turn: session, text, a shell command and its result, the answer, usage", () => {
    const events = decodeLines([
      init(),
      assistant([{ type: "thinking", thinking: "The user wants a file.", signature: "sig" }]),
      assistant([{ type: "text", text: "I'll create the file and list the directory." }]),
      assistant([{ type: "tool_use", id: "toolu_fake_000003", name: "Bash", input: { command: COMMAND, description: "Create f.txt" } }]),
      toolResult("toolu_fake_000003", "f.txt"),
      assistant([{ type: "text", text: "DONE: f.txt" }]),
      result({})
    ])
    expect(events).toEqual([
      { type: "session", session_id: SID, session_link: null },
      { type: "message", role: "assistant", text: "I'll create the file and list the directory." },
      { type: "action", id: "toolu_fake_000003", category: "command", name: "Bash", input: { command: COMMAND, description: "Create f.txt" } },
      { type: "action_result", action_id: "toolu_fake_000003", state: "completed", output: "f.txt" },
      { type: "message", role: "assistant", text: "DONE: f.txt" },
      { type: "usage", input_tokens: 200, output_tokens: 40, inference_cost: 0.002, compute_cost: 0 }
    ])
  })

  it("sums usage over the turns of an execution (input with cache writes and reads, cost as inference cost)", () => {
    const decode = decoder()
    const first = decodeLines([
      init(),
      assistant([{ type: "text", text: "DONE: f.txt" }]),
      result({})
    ], decode)
    expect(first.at(-1)).toEqual({ type: "usage", input_tokens: 200, output_tokens: 40, inference_cost: 0.002, compute_cost: 0 })

    // The follow-up: a new process resuming the session, with its own init and result.
    const second = decodeLines([
      init(),
      assistant([{ type: "text", text: "SECOND ANSWER" }]),
      result({
        result: "SECOND ANSWER",
        total_cost_usd: 0.003,
        usage: { input_tokens: 300, cache_creation_input_tokens: 30, cache_read_input_tokens: 50, output_tokens: 60 }
      })
    ], decode)
    expect(second.slice(0, 2)).toEqual([
      { type: "session", session_id: SID, session_link: null },
      { type: "message", role: "assistant", text: "SECOND ANSWER" }
    ])
    const usage = second.at(-1)
    expect(usage).toMatchObject({ type: "usage", input_tokens: 200 + 300 + 30 + 50, output_tokens: 100, compute_cost: 0 })
    expect(usage?.type === "usage" ? usage.inference_cost : undefined).toBeCloseTo(0.005, 10)
  })

  it("reports a refused key (401, authentication_failed) as integration_not_configured", () => {
    const events = decodeLines([
      init(),
      assistant(
        [{ type: "text", text: "Invalid API key · Fix external API key" }],
        { error: "authentication_failed", message: { id: "msg_synthetic", model: "<synthetic>", role: "assistant", type: "message", content: [{ type: "text", text: "Invalid API key · Fix external API key" }], usage: { input_tokens: 0, output_tokens: 0 } } }
      ),
      result({
        subtype: "success",
        is_error: true,
        api_error_status: 401,
        duration_ms: 1800,
        num_turns: 1,
        result: "Invalid API key · Fix external API key",
        stop_reason: "stop_sequence",
        total_cost_usd: 0,
        usage: { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 },
        modelUsage: {}
      })
    ])
    expect(events.slice(0, 3)).toEqual([
      { type: "session", session_id: SID, session_link: null },
      { type: "message", role: "assistant", text: "Invalid API key · Fix external API key" },
      { type: "usage", input_tokens: 0, output_tokens: 0, inference_cost: 0, compute_cost: 0 }
    ])
    expect(events).toHaveLength(4)
    const failure = resultOf(events)
    expect(failure).toMatchObject({ type: "result", outcome: "failed", error_code: "integration_not_configured" })
    expect(failure.message).toContain("HTTP 401")
    expect(failure.message).toContain("ANTHROPIC_API_KEY")
    expect(failure.message).toContain("ANTHROPIC_BASE_URL")
    expect(failure.message).toContain("Invalid API key · Fix external API key")
  })

  it("reports authentication_failed without an HTTP status, and a 403, as integration_not_configured", () => {
    const noStatus = decodeLines([
      init(),
      assistant([{ type: "text", text: "OAuth token has expired" }], { error: "authentication_failed" }),
      result({ is_error: true, api_error_status: null, result: "OAuth token has expired", total_cost_usd: 0 })
    ])
    expect(resultOf(noStatus)).toMatchObject({ outcome: "failed", error_code: "integration_not_configured" })
    expect(resultOf(noStatus).message).toContain("OAuth token has expired")

    const forbidden = decodeLines([init(), result({ is_error: true, api_error_status: 403, result: "API Error: 403 forbidden" })])
    expect(resultOf(forbidden)).toMatchObject({ outcome: "failed", error_code: "integration_not_configured" })
    expect(resultOf(forbidden).message).toContain("HTTP 403")
  })

  it("reports HTTP 500 after the retries as agent_failed with Claude Code's words", () => {
    const said = "API Error: 500 fake internal error. This is a server-side issue, usually temporary — try again in a moment. " +
      "If it persists, check your inference gateway (127.0.0.1:8765)."
    const retry = (attempt: number) => json({
      type: "system",
      subtype: "api_retry",
      attempt,
      max_retries: 2,
      retry_delay_ms: 584,
      error_status: 500,
      error: "server_error",
      session_id: SID,
      uuid: "1a2b3c4d-0000-4000-8000-00000000000" + String(attempt)
    })
    const events = decodeLines([
      init(),
      retry(1),
      retry(2),
      assistant([{ type: "text", text: said }], { error: "server_error" }),
      result({ is_error: true, api_error_status: 500, result: said, total_cost_usd: 0, usage: { input_tokens: 0, output_tokens: 0 } })
    ])
    expect(events.slice(0, 4)).toEqual([
      { type: "session", session_id: SID, session_link: null },
      { type: "status", message: "retrying the model request (HTTP 500), attempt 1 of 2" },
      { type: "status", message: "retrying the model request (HTTP 500), attempt 2 of 2" },
      { type: "message", role: "assistant", text: said }
    ])
    const failure = resultOf(events)
    expect(failure).toMatchObject({ type: "result", outcome: "failed", error_code: "agent_failed" })
    expect(failure.message).toContain("HTTP 500")
    expect(failure.message).toContain("fake internal error")
    expect(events.at(-1)).toBe(failure)
  })

  it("reports an interrupted turn (error_during_execution, no result text) with the latest text", () => {
    const events = decodeLines([
      init(),
      assistant([{ type: "tool_use", id: "toolu_1", name: "Bash", input: { command: "sleep 30" } }]),
      toolResult("toolu_1", "The user doesn't want to proceed with this tool use. The tool use was rejected.", true),
      result({ subtype: "error_during_execution", is_error: true, result: undefined, stop_reason: "tool_use", num_turns: 3 })
    ])
    expect(events[2]).toEqual({
      type: "action_result",
      action_id: "toolu_1",
      state: "failed",
      output: "The user doesn't want to proceed with this tool use. The tool use was rejected."
    })
    expect(resultOf(events)).toMatchObject({ outcome: "failed", error_code: "agent_failed", message: "Claude Code failed: error_during_execution" })
  })

  it("explains a failed result by Claude Code's own errors, not by the assistant's earlier text (error_max_turns)", () => {
    // Claude Code 2.1.197 prints error results as `{subtype: "error_…", is_error: true, errors: [...]}`, without `result`.
    const events = decodeLines([
      init(),
      assistant([{ type: "text", text: "Let me look at the tests first." }]),
      assistant([{ type: "tool_use", id: "toolu_1", name: "Bash", input: { command: "npm test" } }]),
      toolResult("toolu_1", "1 failing"),
      result({ subtype: "error_max_turns", is_error: true, result: undefined, errors: ["Reached maximum number of turns (2)"], num_turns: 2 })
    ])
    const failure = resultOf(events)
    expect(failure).toMatchObject({ outcome: "failed", error_code: "agent_failed" })
    expect(failure.message).toContain("Reached maximum number of turns (2)")
  })

  describe("Claude Code specifics", () => {
    it("turns the Skill tool into read_skill, not an action", () => {
      const events = decodeLines([
        init(),
        assistant([{ type: "tool_use", id: "toolu_skill", name: "Skill", input: { skill: "pdf-report" } }]),
        assistant([{ type: "tool_use", id: "toolu_skill2", name: "Skill", input: { command: "release-notes" } }]),
        assistant([{ type: "tool_use", id: "toolu_skill3", name: "Skill", input: {} }])
      ])
      expect(events.slice(1)).toEqual([
        { type: "read_skill", skill_path: "pdf-report" },
        { type: "read_skill", skill_path: "release-notes" },
        { type: "read_skill", skill_path: "unknown" }
      ])
    })

    it("gives each tool its category: files, search, MCP integration, sub-agents as commands", () => {
      const events = decodeLines([
        assistant([
          { type: "text", text: "Let me look." },
          { type: "tool_use", id: "t1", name: "Read", input: { file_path: "/work/f.txt" } },
          { type: "tool_use", id: "t2", name: "Grep", input: { pattern: "hello" } },
          { type: "tool_use", id: "t3", name: "mcp__ping__ping", input: {} },
          { type: "tool_use", id: "t4", name: "Task", input: { prompt: "explore" } },
          { type: "tool_use", id: "t5", name: "Write", input: "not an object" }
        ])
      ])
      expect(events).toEqual([
        { type: "message", role: "assistant", text: "Let me look." },
        { type: "action", id: "t1", category: "files", name: "Read", input: { file_path: "/work/f.txt" } },
        { type: "action", id: "t2", category: "search", name: "Grep", input: { pattern: "hello" } },
        { type: "action", id: "t3", category: "integration", name: "mcp__ping__ping", input: {} },
        { type: "action", id: "t4", category: "command", name: "Task", input: { prompt: "explore" } },
        { type: "action", id: "t5", category: "files", name: "Write", input: {} }
      ])
    })

    it("joins a result's content blocks into its output, and marks is_error results failed", () => {
      const events = decodeLines([
        toolResult("t1", [{ type: "text", text: "line 1" }, { type: "text", text: "line 2" }]),
        toolResult("t2", "Exit code 1\nls: cannot access 'nope'", true),
        toolResult("t3", null)
      ])
      expect(events).toEqual([
        { type: "action_result", action_id: "t1", state: "completed", output: "line 1\nline 2" },
        { type: "action_result", action_id: "t2", state: "failed", output: "Exit code 1\nls: cannot access 'nope'" },
        { type: "action_result", action_id: "t3", state: "completed", output: "" }
      ])
    })

    it("skips thinking, blank text, partial-message stream events and other system events", () => {
      expect(decodeLines([
        assistant([{ type: "thinking", thinking: "hmm" }, { type: "text", text: "   \n" }, { type: "redacted_thinking", data: "x" }]),
        json({ type: "stream_event", event: { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "ANSWER:" } }, session_id: SID }),
        json({ type: "system", subtype: "status", status: "requesting", session_id: SID }),
        json({ type: "system", subtype: "compact_boundary", session_id: SID }),
        json({ type: "control_response", response: { subtype: "success", request_id: "int-1" } }),
        json({ type: "user", message: { role: "user", content: [{ type: "text", text: "[Request interrupted by user for tool use]" }] }, session_id: SID })
      ])).toEqual([])
    })
  })

  describe("robustness", () => {
    /** Lines that are not Claude Code events, or are broken ones: nothing. */
    const ignored: ReadonlyArray<readonly [string, string]> = [
      ["an unknown event type", json({ type: "rate_limit_event", rate_limit_info: { status: "allowed" }, session_id: SID })],
      ["an event without a type", json({ session_id: SID, message: { content: [{ type: "text", text: "hi" }] } })],
      ["a type that is not a string", json({ type: 42, subtype: "init", session_id: SID })],
      ["a line that is not JSON", "Error: something went wrong at startup"],
      ["a warning on stdout", "[WARN] Fast mode unavailable"],
      ["broken JSON", '{"type":"system","subtype":"init","session_id":'],
      ["a blank line", ""],
      ["a line of spaces", "   \t  "],
      ["a carriage return", "\r"],
      ["a JSON array", json([{ type: "system", subtype: "init", session_id: SID }])],
      ["a JSON string", json("{\"type\":\"system\"}")],
      ["a JSON number", "42"],
      ["JSON null", "null"],
      ["JSON true", "true"],
      ["init with a numeric session id", json({ type: "system", subtype: "init", session_id: 12345 })],
      ["init without a session id", json({ type: "system", subtype: "init" })],
      ["assistant with a null message", json({ type: "assistant", message: null })],
      ["assistant with null content", json({ type: "assistant", message: { content: null } })],
      ["assistant with string content", json({ type: "assistant", message: { content: "plain text" } })],
      ["assistant content of non-objects", json({ type: "assistant", message: { content: [null, 1, "x", [], true] } })],
      ["a text block whose text is a number", json({ type: "assistant", message: { content: [{ type: "text", text: 7 }] } })],
      ["a tool_use without an id", json({ type: "assistant", message: { content: [{ type: "tool_use", name: "Bash", input: {} }] } })],
      ["a tool_use with a numeric id and name", json({ type: "assistant", message: { content: [{ type: "tool_use", id: 3, name: 4 }] } })],
      ["a tool_result without tool_use_id", json({ type: "user", message: { content: [{ type: "tool_result", content: "x" }] } })],
      ["a tool_result with a numeric tool_use_id", json({ type: "user", message: { content: [{ type: "tool_result", tool_use_id: 9, content: "x" }] } })],
      ["a user event with null message", json({ type: "user", message: null })],
      ["an unknown system subtype", json({ type: "system", subtype: 5 })],
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
      ["a result with string and negative numbers", json({ type: "result", is_error: false, total_cost_usd: "0.5", usage: { input_tokens: "200", output_tokens: -4, cache_read_input_tokens: null } })],
      ["a result with usage null", json({ type: "result", usage: null, total_cost_usd: null })],
      ["a result with fractional tokens", json({ type: "result", usage: { input_tokens: 10.6, output_tokens: 0.4 } })],
      ["a failed result with numeric text and status", json({ type: "result", is_error: true, result: 500, api_error_status: "500", subtype: 3 })],
      ["a failed result with errors of objects", json({ type: "result", is_error: true, errors: [{ message: "boom" }, 7, null] })],
      ["a failed result with a blank text", json({ type: "result", is_error: true, result: "   " })],
      ["an is_error that is a string", json({ type: "result", is_error: "true", result: "x" })],
      ["an api_retry with wrong types", json({ type: "system", subtype: "api_retry", attempt: "one", max_retries: null, error_status: { code: 500 } })],
      ["an api_retry with a null status", json({ type: "system", subtype: "api_retry", attempt: 1, max_retries: 2, error_status: null })],
      ["an assistant error that is a number", json({ type: "assistant", error: 401, message: { content: [{ type: "text", text: "x" }] } })],
      ["a tool_use with a null input", json({ type: "assistant", message: { content: [{ type: "tool_use", id: "t", name: "Bash", input: null }] } })],
      ["a Skill with a numeric skill", json({ type: "assistant", message: { content: [{ type: "tool_use", id: "t", name: "Skill", input: { skill: 3 } }] } })],
      ["a tool_result with object content", json({ type: "user", message: { content: [{ type: "tool_result", tool_use_id: "t", content: { stdout: "x" }, is_error: "yes" }] } })],
      ["a tool_result with null content", json({ type: "user", message: { content: [{ type: "tool_result", tool_use_id: "t", content: null }] } })],
      ["a result with token counts beyond the safe integers (1e300)", json({ type: "result", total_cost_usd: 1e308, usage: { input_tokens: 1e300, output_tokens: 1e19 } })]
    ]
    it.each(wrongTypes)("never throws and gives valid events on %s", (_name, line) => {
      decodeLines([line])
    })

    it("keeps a 1 MB text and a 1 MB tool output whole", () => {
      const big = "x".repeat(1_000_000)
      const events = decodeLines([
        assistant([{ type: "text", text: big }]),
        toolResult("t1", big)
      ])
      expect(events).toEqual([
        { type: "message", role: "assistant", text: big },
        { type: "action_result", action_id: "t1", state: "completed", output: big }
      ])
    })

    it.each(DEPTHS)("takes a tool input nested %i levels deep without throwing", (depth) => {
      const line = '{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":' +
        deepObject(depth) + "}]}}"
      const events = decodeLines([line])
      expect(events).toHaveLength(1)
      expect(events[0]).toMatchObject({ type: "action", id: "t1", category: "command", name: "Bash" })
    })

    it.each(DEPTHS)("never throws on a tool result whose content is nested %i levels deep", (depth) => {
      const line = '{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[' +
        deepObject(depth) + "]}]}}"
      const events = decodeLines([line])
      expect(events).toHaveLength(1)
      expect(events[0]).toMatchObject({ type: "action_result", action_id: "t1", state: "completed" })
    })

    it.each(DEPTHS)("never throws on a failed result whose errors are nested %i levels deep", (depth) => {
      const line = '{"type":"result","subtype":"error_during_execution","is_error":true,"errors":[' + deepArray(depth) + "]}"
      const events = decodeLines([line])
      expect(resultOf(events)).toMatchObject({ outcome: "failed", error_code: "agent_failed" })
    })

    it("goes on decoding after bad lines", () => {
      const events = decodeLines([
        "not json",
        init(),
        "[1,2,3]",
        deepObject(DEPTH),
        "",
        assistant([{ type: "text", text: "still here" }])
      ])
      expect(events).toEqual([
        { type: "session", session_id: SID, session_link: null },
        { type: "message", role: "assistant", text: "still here" }
      ])
    })
  })
})
