/**
 * Unit tests of opencode's output decoder (src/OpencodeEvents.ts), fed with lines shaped like the
 * real `opencode run --format json` transcripts (opencode 1.18.33, /tmp/cli-findings.md): a whole
 * turn, usage over two processes of one execution, a refused key (401), HTTP 500 after the
 * retries, `tool_use` as both an action and its result, the `skill` tool as `read_skill`, MCP
 * tools, session id changes, and robustness (unknown events, text that is not JSON, wrong field
 * types, a 1 MB text, 5,000 levels of nesting). No CLI is started. Every event a test gets is
 * checked against the `HarnessEvent` schema, so that no event the reducer cannot take goes
 * unnoticed.
 */
import { decodeLines as decodeChecked, deepArray, deepObject, DEPTH, DEPTHS, json, resultOf } from "@agent-runs/core/testing"
import type { HarnessDecoder } from "@agent-runs/core/ports/AgentHarness"
import { describe, expect, it } from "vitest"
import { decoder } from "../src/OpencodeEvents.js"
import { opencodeDecoder } from "../src/index.js"

/** The events the lines give, each checked against the schema (a fresh decoder unless one is given). */
const decodeLines = (lines: ReadonlyArray<string>, decode: HarnessDecoder = decoder()) => decodeChecked(lines, decode)

const SES = "ses_ded8db491ffe1wcwOdJ66sbhOK"
const COMMAND = "echo hello > f.txt && ls"
const T0 = 1795605815949

// Lines as opencode 1.18.33 prints them.
const event = (type: string, part: unknown, sessionID: string = SES) => json({ type, timestamp: T0, sessionID, part })
const stepStart = (sessionID: string = SES) =>
  event("step_start", { id: "prt_001", sessionID, messageID: "msg_001", type: "step-start", snapshot: "4b825dc6" }, sessionID)
const text = (value: string, sessionID: string = SES) =>
  event("text", { id: "prt_002", sessionID, messageID: "msg_001", type: "text", text: value, time: { start: T0, end: T0 + 19 } }, sessionID)
const toolUse = (tool: string, callID: string, state: Record<string, unknown>) =>
  event("tool_use", { id: "prt_003", sessionID: SES, messageID: "msg_001", type: "tool", tool, callID, state })
const completed = (input: unknown, output: unknown) => ({
  status: "completed",
  input,
  output,
  metadata: { output, exit: 0, truncated: false },
  title: COMMAND,
  time: { start: T0, end: T0 + 1108 }
})
const stepFinish = (
  tokens: { input: number; output: number; reasoning?: number; read?: number; write?: number },
  cost = 0,
  reason = "stop"
) =>
  event("step_finish", {
    id: "prt_004",
    sessionID: SES,
    messageID: "msg_001",
    reason,
    type: "step-finish",
    tokens: {
      total: tokens.input + tokens.output,
      input: tokens.input,
      output: tokens.output,
      reasoning: tokens.reasoning ?? 0,
      cache: { write: tokens.write ?? 0, read: tokens.read ?? 0 }
    },
    cost
  })
const error = (name: string, data: Record<string, unknown>) =>
  json({ type: "error", timestamp: T0, sessionID: SES, error: { name, data } })

describe("opencode decoder", () => {
  it("is the decoder the package exports, and each call makes a fresh one", () => {
    expect(opencodeDecoder).toBe(decoder)
    decodeLines([stepStart(), stepFinish({ input: 100, output: 20 })], decoder())
    // A new decoder reports the session again and does not add another one's usage.
    expect(decodeLines([stepFinish({ input: 1, output: 2 })])).toEqual([
      { type: "session", session_id: SES, session_link: null },
      { type: "usage", input_tokens: 1, output_tokens: 2, inference_cost: 0, compute_cost: 0, turns: 0 }
    ])
  })

  it("decodes a whole turn: session, text, a shell command and its result, the answer, usage", () => {
    const input = { command: COMMAND, description: "Run the requested command" }
    const events = decodeLines([
      stepStart(),
      text("I'll run the command."),
      toolUse("bash", "call_fake_000004", completed(input, "f.txt\nopencode.json\n")),
      stepFinish({ input: 100, output: 20 }, 0, "tool-calls"),
      stepStart(),
      event("reasoning", { type: "reasoning", text: "The command worked." }),
      text("DONE: f.txt\nopencode.json"),
      stepFinish({ input: 100, output: 20 })
    ])
    // Each model call (step_start) is a turn: its usage so far says so at once.
    expect(events).toEqual([
      { type: "session", session_id: SES, session_link: null },
      { type: "usage", input_tokens: 0, output_tokens: 0, inference_cost: 0, compute_cost: 0, turns: 1 },
      { type: "message", role: "assistant", text: "I'll run the command." },
      { type: "action", id: "call_fake_000004", category: "command", name: "bash", input },
      { type: "action_result", action_id: "call_fake_000004", state: "completed", output: "f.txt\nopencode.json\n" },
      { type: "usage", input_tokens: 100, output_tokens: 20, inference_cost: 0, compute_cost: 0, turns: 1 },
      { type: "usage", input_tokens: 100, output_tokens: 20, inference_cost: 0, compute_cost: 0, turns: 2 },
      { type: "message", role: "assistant", text: "DONE: f.txt\nopencode.json" },
      { type: "usage", input_tokens: 200, output_tokens: 40, inference_cost: 0, compute_cost: 0, turns: 2 }
    ])
  })

  it("sums usage over the execution's model calls across processes (cache in input, reasoning in output, cost)", () => {
    const decode = decoder()
    const first = decodeLines([
      stepStart(),
      toolUse("bash", "call_1", completed({ command: COMMAND }, "f.txt\n")),
      stepFinish({ input: 100, output: 20 }, 0.0006, "tool-calls"),
      stepStart(),
      text("FINAL ANSWER"),
      stepFinish({ input: 100, output: 20 }, 0.0006)
    ], decode)
    const firstUsage = first.at(-1)
    expect(firstUsage).toMatchObject({ type: "usage", input_tokens: 200, output_tokens: 40, compute_cost: 0 })
    expect(firstUsage?.type === "usage" ? firstUsage.inference_cost : undefined).toBeCloseTo(0.0012, 10)

    // The follow-up: `opencode run --session SES`, a new process of the same session: no new session event.
    const second = decodeLines([
      stepStart(),
      text("SECOND ANSWER"),
      stepFinish({ input: 150, output: 30, reasoning: 5, read: 50, write: 10 }, 0.001)
    ], decode)
    expect(second.slice(0, 2)).toEqual([
      { type: "usage", input_tokens: 200, output_tokens: 40, inference_cost: 0.0012, compute_cost: 0, turns: 3 },
      { type: "message", role: "assistant", text: "SECOND ANSWER" }
    ])
    expect(second).toHaveLength(3)
    const usage = second.at(-1)
    expect(usage).toMatchObject({ type: "usage", input_tokens: 200 + 150 + 50 + 10, output_tokens: 40 + 30 + 5, compute_cost: 0 })
    expect(usage?.type === "usage" ? usage.inference_cost : undefined).toBeCloseTo(0.0022, 10)
  })

  it("reports a refused key (401) as integration_not_configured", () => {
    const said = "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys."
    const events = decodeLines([
      error("APIError", {
        message: said,
        statusCode: 401,
        isRetryable: false,
        responseHeaders: { "content-type": "application/json" },
        responseBody: json({ error: { message: said, type: "invalid_request_error", code: "invalid_api_key" } }),
        metadata: { url: "http://127.0.0.1:8765/v1/chat/completions" }
      })
    ])
    expect(events[0]).toEqual({ type: "session", session_id: SES, session_link: null })
    expect(events).toHaveLength(2)
    const failure = resultOf(events)
    expect(failure).toMatchObject({ type: "result", outcome: "failed", error_code: "integration_not_configured" })
    expect(failure.message).toContain("HTTP 401")
    expect(failure.message).toContain("OPENCODE_API_KEY")
    expect(failure.message).toContain("OPENCODE_BASE_URL")
    expect(failure.message).toContain(said)
  })

  it("reports ProviderAuthError and a 403 as integration_not_configured", () => {
    const provider = resultOf(decodeLines([error("ProviderAuthError", { providerID: "local", message: "No API key for provider local" })]))
    expect(provider).toMatchObject({ outcome: "failed", error_code: "integration_not_configured" })
    expect(provider.message).toContain("No API key for provider local")
    const forbidden = resultOf(decodeLines([error("APIError", { message: "Forbidden", statusCode: 403 })]))
    expect(forbidden).toMatchObject({ outcome: "failed", error_code: "integration_not_configured" })
    expect(forbidden.message).toContain("HTTP 403")
  })

  it("reports HTTP 500 after the retries as agent_failed with opencode's words", () => {
    const events = decodeLines([
      stepStart(),
      error("APIError", {
        message: "fake internal error",
        statusCode: 500,
        isRetryable: true,
        responseHeaders: {},
        responseBody: json({ error: { message: "fake internal error" } }),
        metadata: { url: "http://127.0.0.1:8765/v1/chat/completions" }
      })
    ])
    expect(events.map((e) => e.type)).toEqual(["session", "usage", "result"])
    const failure = resultOf(events)
    expect(failure).toMatchObject({ type: "result", outcome: "failed", error_code: "agent_failed" })
    expect(failure.message).toContain("HTTP 500")
    expect(failure.message).toContain("fake internal error")
    expect(events.at(-1)).toBe(failure)
  })

  it("says to set OPENCODE_BASE_URL when the endpoint is no URL", () => {
    const failure = resultOf(decodeLines([
      error("UnknownError", { message: "TypeError: \"{env:OPENCODE_BASE_URL}/chat/completions\" cannot be parsed as a URL." })
    ]))
    expect(failure).toMatchObject({ outcome: "failed", error_code: "agent_failed" })
    expect(failure.message).toContain("cannot be parsed as a URL")
    expect(failure.message).toContain("is OPENCODE_BASE_URL")
  })

  describe("opencode specifics", () => {
    it("gives a tool_use both the action and its result; a failed tool's result is its error", () => {
      const events = decodeLines([
        toolUse("read", "call_1", { status: "error", input: { filePath: "/work/nope.txt" }, error: "Error: File not found: /work/nope.txt", time: { start: T0, end: T0 } })
      ])
      expect(events.slice(1)).toEqual([
        { type: "action", id: "call_1", category: "files", name: "read", input: { filePath: "/work/nope.txt" } },
        { type: "action_result", action_id: "call_1", state: "failed", output: "Error: File not found: /work/nope.txt" }
      ])
    })

    it("skips a tool_use that is not done yet", () => {
      expect(decodeLines([
        toolUse("bash", "call_1", { status: "pending", input: {} }),
        toolUse("bash", "call_1", { status: "running", input: { command: "sleep 30" }, time: { start: T0 } })
      ])).toEqual([{ type: "session", session_id: SES, session_link: null }])
    })

    it("turns the skill tool into read_skill, with no action or result", () => {
      expect(decodeLines([
        toolUse("skill", "call_1", completed({ name: "pdf-report" }, "<skill_content name=\"pdf-report\">…</skill_content>")),
        toolUse("skill", "call_2", completed({}, ""))
      ]).slice(1)).toEqual([
        { type: "read_skill", skill_path: "pdf-report" },
        { type: "read_skill", skill_path: "unknown" }
      ])
    })

    it("gives opencode's tools their category and any other tool (an MCP server's) integration", () => {
      const events = decodeLines([
        toolUse("ping_ping", "c1", completed({}, "pong")),
        toolUse("grep", "c2", completed({ pattern: "x" }, "")),
        toolUse("webfetch", "c3", completed({ url: "http://x" }, "")),
        toolUse("edit", "c4", completed({ filePath: "f" }, "")),
        toolUse("task", "c5", completed({ prompt: "p" }, "")),
        toolUse("todowrite", "c6", completed({ todos: [] }, "[]"))
      ])
      expect(events.filter((e) => e.type === "action").map((e) => [e.name, e.category])).toEqual([
        ["ping_ping", "integration"],
        ["grep", "search"],
        ["webfetch", "search"],
        ["edit", "files"],
        ["task", "command"],
        ["todowrite", "files"]
      ])
      expect(events.find((e) => e.type === "action_result" && e.action_id === "c1")).toEqual({
        type: "action_result",
        action_id: "c1",
        state: "completed",
        output: "pong"
      })
    })

    it("falls back on the part's id when there is no callID", () => {
      const line = event("tool_use", { id: "prt_9", type: "tool", tool: "bash", state: completed({ command: "ls" }, "f.txt\n") })
      expect(decodeLines([line]).slice(1)).toEqual([
        { type: "action", id: "prt_9", category: "command", name: "bash", input: { command: "ls" } },
        { type: "action_result", action_id: "prt_9", state: "completed", output: "f.txt\n" }
      ])
    })

    it("reports the session when its id first comes and whenever it changes", () => {
      const events = decodeLines([
        stepStart(),
        text("one"),
        stepStart("ses_second"),
        text("two", "ses_second"),
        json({ type: "text", timestamp: T0, sessionID: "", part: { type: "text", text: "three" } }),
        json({ type: "text", timestamp: T0, part: { type: "text", text: "four" } }),
        stepStart()
      ])
      expect(events.filter((e) => e.type !== "usage")).toEqual([
        { type: "session", session_id: SES, session_link: null },
        { type: "message", role: "assistant", text: "one" },
        { type: "session", session_id: "ses_second", session_link: null },
        { type: "message", role: "assistant", text: "two" },
        { type: "message", role: "assistant", text: "three" },
        { type: "message", role: "assistant", text: "four" },
        { type: "session", session_id: SES, session_link: null }
      ])
    })

    it("skips reasoning, blank text and other events; a step_start is only a turn", () => {
      const decode = decoder()
      decodeLines([stepStart()], decode)
      expect(decodeLines([
        stepStart(),
        event("reasoning", { type: "reasoning", text: "thinking" }),
        text("  \n"),
        event("file", { type: "file", mime: "text/plain", url: "file:///work/f.txt" }),
        event("snapshot", { type: "snapshot", snapshot: "abc" })
      ], decode)).toEqual([{ type: "usage", input_tokens: 0, output_tokens: 0, inference_cost: 0, compute_cost: 0, turns: 2 }])
    })
  })

  describe("robustness", () => {
    /** Lines that are not opencode events, or are broken ones: nothing. */
    const ignored: ReadonlyArray<readonly [string, string]> = [
      ["an unknown event type (no session id)", json({ type: "permission.asked", timestamp: T0, part: {} })],
      ["an event without a type", json({ timestamp: T0, part: { text: "x" } })],
      ["a type that is not a string", json({ type: { t: "text" }, part: { text: "x" } })],
      ["a log line", "INFO  2026-11-25T11:23:22 +12ms service=default version=1.18.33 args=[\"run\"] opencode"],
      ["broken JSON", '{"type":"text","sessionID":"ses_x","part":{"text":"hi"'],
      ["a blank line", ""],
      ["a line of spaces", " \t "],
      ["a JSON array", json([{ type: "text", sessionID: SES, part: { text: "x" } }])],
      ["a JSON string", json("{\"type\":\"text\"}")],
      ["a JSON number", "1795605815949"],
      ["JSON null", "null"],
      ["a numeric sessionID", json({ type: "text", sessionID: 12, part: {} })],
      ["text with a null part", json({ type: "text", part: null })],
      ["text whose text is a number", json({ type: "text", part: { text: 12 } })],
      ["text with a string part", json({ type: "text", part: "hello" })],
      ["a tool_use without a tool", json({ type: "tool_use", part: { callID: "c", state: { status: "completed" } } })],
      ["a tool_use with a numeric tool and ids", json({ type: "tool_use", part: { tool: 1, callID: 2, id: 3, state: { status: "completed" } } })],
      ["a tool_use without a state", json({ type: "tool_use", part: { tool: "bash", callID: "c" } })],
      ["a tool_use with a numeric status", json({ type: "tool_use", part: { tool: "bash", callID: "c", state: { status: 1 } } })],
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
      ["a tool_use with a string input and numeric output", json({ type: "tool_use", sessionID: SES, part: { tool: "bash", callID: "c", state: { status: "completed", input: "ls", output: 5 } } })],
      ["a failed tool_use with an object error", json({ type: "tool_use", part: { tool: "bash", callID: "c", state: { status: "error", error: { message: "x" } } } })],
      ["a tool_use with null output", json({ type: "tool_use", part: { tool: "bash", callID: "c", state: { status: "completed", output: null } } })],
      ["a skill with a numeric name", json({ type: "tool_use", part: { tool: "skill", callID: "c", state: { status: "completed", input: { name: 1 } } } })],
      ["a step_finish with tokens null", json({ type: "step_finish", part: { tokens: null, cost: null } })],
      ["a step_finish with string and negative counts", json({ type: "step_finish", part: { tokens: { input: "100", output: -20, cache: "none" }, cost: "0.1" } })],
      ["a step_finish with fractional counts", json({ type: "step_finish", part: { tokens: { input: 10.5, output: 0.4, reasoning: 0.4 }, cost: 1e-9 } })],
      ["a step_finish without a part", json({ type: "step_finish" })],
      ["an error with error null", json({ type: "error", error: null })],
      ["an error with a string error", json({ type: "error", error: "boom" })],
      ["an error with wrong types", json({ type: "error", error: { name: 5, data: { message: 7, statusCode: "401" } } })],
      ["an error with a blank message", json({ type: "error", error: { name: "APIError", data: { message: "  ", statusCode: 502 } } })],
      ["an error with a message outside data", json({ type: "error", error: { name: "UnknownError", message: "went wrong", data: null } })],
      ["a step_finish with token counts beyond the safe integers (1e300)", json({ type: "step_finish", part: { tokens: { input: 1e300, output: 1e19 }, cost: 1e308 } })]
    ]
    it.each(wrongTypes)("never throws and gives valid events on %s", (_name, line) => {
      decodeLines([line])
    })

    it("keeps a 1 MB text and a 1 MB tool output whole", () => {
      const big = "x".repeat(1_000_000)
      const events = decodeLines([text(big), toolUse("bash", "c1", completed({ command: "cat big" }, big))])
      expect(events).toEqual([
        { type: "session", session_id: SES, session_link: null },
        { type: "message", role: "assistant", text: big },
        { type: "action", id: "c1", category: "command", name: "bash", input: { command: "cat big" } },
        { type: "action_result", action_id: "c1", state: "completed", output: big }
      ])
    })

    it.each(DEPTHS)("takes a tool input nested %i levels deep without throwing", (depth) => {
      const line = '{"type":"tool_use","part":{"tool":"bash","callID":"c1","state":{"status":"completed","output":"ok","input":' +
        deepObject(depth) + "}}}"
      const events = decodeLines([line])
      expect(events).toHaveLength(2)
      expect(events[0]).toMatchObject({ type: "action", id: "c1", category: "command", name: "bash" })
    })

    it.each(DEPTHS)("takes an error whose data is nested %i levels deep without throwing", (depth) => {
      const line = '{"type":"error","error":{"name":"APIError","data":{"message":"boom","statusCode":500,"metadata":' + deepObject(depth) + "}}}"
      expect(resultOf(decodeLines([line]))).toMatchObject({ outcome: "failed", error_code: "agent_failed" })
    })

    it.each(DEPTHS)("never throws on a tool output nested %i levels deep", (depth) => {
      const line = '{"type":"tool_use","part":{"tool":"bash","callID":"c1","state":{"status":"completed","input":{},"output":' +
        deepObject(depth) + "}}}"
      const events = decodeLines([line])
      expect(events).toHaveLength(2)
      expect(events[1]).toMatchObject({ type: "action_result", action_id: "c1", state: "completed" })
    })

    it("goes on decoding after bad lines", () => {
      const events = decodeLines(["not json", stepStart(), "[]", deepObject(DEPTH), "", text("still here")])
      expect(events).toEqual([
        { type: "session", session_id: SES, session_link: null },
        { type: "usage", input_tokens: 0, output_tokens: 0, inference_cost: 0, compute_cost: 0, turns: 1 },
        { type: "message", role: "assistant", text: "still here" }
      ])
    })
  })
})
