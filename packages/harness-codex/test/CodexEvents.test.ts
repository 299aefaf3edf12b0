/**
 * Unit tests of Codex's output decoder (src/CodexEvents.ts), fed with lines shaped like the real
 * `codex exec --json` transcripts (Codex 0.169.0, /tmp/cli-findings.md): a whole turn, usage over
 * two processes of one execution (Codex reports each thread's running totals), a refused or
 * missing key, HTTP 500 after the retries, action ids prefixed per process, the other item types
 * (file changes, MCP calls, web searches, skills read with the shell, warnings), and robustness
 * (unknown events, text that is not JSON, wrong field types, a 1 MB text, 5,000 levels of
 * nesting). No CLI is started. Every event a test gets is checked against the `HarnessEvent`
 * schema, so that no event the reducer cannot take goes unnoticed.
 */
import { decodeLines as decodeChecked, deepArray, deepObject, DEPTH, DEPTHS, json, resultOf } from "@agent-runs/core/testing"
import type { HarnessDecoder } from "@agent-runs/core/ports/AgentHarness"
import { describe, expect, it } from "vitest"
import { decoder } from "../src/CodexEvents.js"
import { THREAD_TOTALS } from "../src/CodexLaunch.js"
import { codexDecoder } from "../src/index.js"

/** The events the lines give, each checked against the schema (a fresh decoder unless one is given). */
const decodeLines = (lines: ReadonlyArray<string>, decode: HarnessDecoder = decoder()) => decodeChecked(lines, decode)

const THREAD = "01a21272-0f17-79e1-aebb-3262c1f8c717"
const COMMAND = "/bin/bash -lc 'echo hello > f.txt && ls'"

// Lines as Codex 0.169.0 prints them.
const threadStarted = (threadId: string = THREAD) => json({ type: "thread.started", thread_id: threadId })
const turnStarted = json({ type: "turn.started" })
const itemStarted = (item: Record<string, unknown>) => json({ type: "item.started", item })
const itemCompleted = (item: Record<string, unknown>) => json({ type: "item.completed", item })
const commandStarted = (id: string, command: string = COMMAND) =>
  itemStarted({ id, type: "command_execution", command, aggregated_output: "", exit_code: null, status: "in_progress" })
const commandCompleted = (id: string, output: string, exitCode = 0, command: string = COMMAND) =>
  itemCompleted({ id, type: "command_execution", command, aggregated_output: output, exit_code: exitCode, status: exitCode === 0 ? "completed" : "failed" })
const agentMessage = (id: string, text: string) => itemCompleted({ id, type: "agent_message", text })
const turnCompleted = (input: number, output: number, cached = 0, reasoning = 0) => json({
  type: "turn.completed",
  usage: { input_tokens: input, cached_input_tokens: cached, cache_write_input_tokens: 0, output_tokens: output, reasoning_output_tokens: reasoning }
})
const topError = (message: string) => json({ type: "error", message })
const turnFailed = (message: string) => json({ type: "turn.failed", error: { message } })

const DONE = "DONE: Chunk ID: a98d03\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 2\nOutput:\nf.txt"

describe("Codex decoder", () => {
  it("is the decoder the package exports, and each call makes a fresh one", () => {
    expect(codexDecoder).toBe(decoder)
    decodeLines([threadStarted(), turnCompleted(200, 40)], decoder())
    expect(decodeLines([threadStarted("other-thread"), turnCompleted(10, 5)])).toEqual([
      { type: "session", session_id: "other-thread", session_link: null },
      { type: "usage", input_tokens: 10, output_tokens: 5, inference_cost: 0, compute_cost: 0 }
    ])
  })

  it("decodes a whole turn: session, text, a shell command and its result, the answer, usage", () => {
    const events = decodeLines([
      threadStarted(),
      turnStarted,
      itemCompleted({ id: "item_0", type: "reasoning", text: "**Running the command**" }),
      agentMessage("item_1", "I'll run the command."),
      commandStarted("item_2"),
      commandCompleted("item_2", "f.txt\n"),
      agentMessage("item_3", DONE),
      turnCompleted(200, 40)
    ])
    expect(events).toEqual([
      { type: "session", session_id: THREAD, session_link: null },
      { type: "message", role: "assistant", text: "I'll run the command." },
      { type: "action", id: "1:item_2", category: "command", name: "shell", input: { command: COMMAND } },
      { type: "action_result", action_id: "1:item_2", state: "completed", output: "f.txt\n" },
      { type: "message", role: "assistant", text: DONE },
      { type: "usage", input_tokens: 200, output_tokens: 40, inference_cost: 0, compute_cost: 0 }
    ])
  })

  it("takes a resumed thread's running totals, not their sum, and prefixes action ids per process", () => {
    const decode = decoder()
    const first = decodeLines([
      threadStarted(),
      turnStarted,
      commandStarted("item_0"),
      commandCompleted("item_0", "f.txt\n"),
      agentMessage("item_1", "FINAL ANSWER"),
      turnCompleted(200, 40)
    ], decode)
    expect(first.at(-1)).toEqual({ type: "usage", input_tokens: 200, output_tokens: 40, inference_cost: 0, compute_cost: 0 })

    // The follow-up: `codex exec resume THREAD`, a new process; Codex's totals include the first turn.
    const second = decodeLines([
      threadStarted(),
      turnStarted,
      commandStarted("item_0", "/bin/bash -lc 'cat f.txt'"),
      commandCompleted("item_0", "hello\n", 0, "/bin/bash -lc 'cat f.txt'"),
      agentMessage("item_1", "SECOND ANSWER"),
      turnCompleted(520, 95, 200, 10)
    ], decode)
    expect(second).toEqual([
      { type: "session", session_id: THREAD, session_link: null },
      { type: "action", id: "2:item_0", category: "command", name: "shell", input: { command: "/bin/bash -lc 'cat f.txt'" } },
      { type: "action_result", action_id: "2:item_0", state: "completed", output: "hello\n" },
      { type: "message", role: "assistant", text: "SECOND ANSWER" },
      // Cached input is part of input_tokens, reasoning part of output_tokens: not added again.
      { type: "usage", input_tokens: 520, output_tokens: 95, inference_cost: 0, compute_cost: 0 }
    ])
  })

  it("sums the latest totals of the execution's different threads", () => {
    const events = decodeLines([
      threadStarted("thread-a"),
      turnCompleted(200, 40),
      threadStarted("thread-b"),
      turnCompleted(300, 60),
      // thread-b's next turn in the same process: its new running total replaces its last one.
      turnCompleted(450, 80)
    ]).filter((e) => e.type === "usage")
    expect(events).toEqual([
      { type: "usage", input_tokens: 200, output_tokens: 40, inference_cost: 0, compute_cost: 0 },
      { type: "usage", input_tokens: 500, output_tokens: 100, inference_cost: 0, compute_cost: 0 },
      { type: "usage", input_tokens: 650, output_tokens: 120, inference_cost: 0, compute_cost: 0 }
    ])
  })

  it("counts a thread resumed from an earlier execution from the totals our wrapper printed, not from zero", () => {
    // The wrapper's line before `exec resume` (CodexLaunch.ts), then the resumed process: its
    // totals include the earlier execution's 200/40.
    const totals = (input: number, output: number, thread: string = THREAD) =>
      json({ type: THREAD_TOTALS, thread_id: thread, usage: { input_tokens: input, cached_input_tokens: 0, output_tokens: output, total_tokens: input + output } })
    const events = decodeLines([totals(200, 40), threadStarted(), turnCompleted(300, 60), totals(300, 60), threadStarted(), turnCompleted(420, 90)])
    expect(events.filter((e) => e.type === "usage")).toEqual([
      { type: "usage", input_tokens: 100, output_tokens: 20, inference_cost: 0, compute_cost: 0 },
      // The same thread resumed again in this execution: what it already counted stays.
      { type: "usage", input_tokens: 220, output_tokens: 50, inference_cost: 0, compute_cost: 0 }
    ])
    expect(events.filter((e) => e.type !== "usage" && e.type !== "session")).toEqual([])
    // Totals of a thread this execution started already change nothing; malformed lines are ignored.
    const started = decodeLines([threadStarted(), turnCompleted(200, 40), totals(999, 999), json({ type: THREAD_TOTALS, usage: 5 }), turnCompleted(300, 60)])
    expect(started.filter((e) => e.type === "usage").at(-1)).toMatchObject({ input_tokens: 300, output_tokens: 60 })
  })

  it("does not let a starting total above the thread's own (the session files are the agent's to write) hide a turn's tokens", () => {
    const forged = json({ type: THREAD_TOTALS, thread_id: THREAD, usage: { input_tokens: 9_007_199_254_740_991, cached_input_tokens: 0, output_tokens: 9_007_199_254_740_991, total_tokens: 0 } })
    const events = decodeLines([forged, threadStarted(), turnCompleted(300, 60)])
    expect(events.filter((e) => e.type === "usage")).toEqual([
      { type: "usage", input_tokens: 300, output_tokens: 60, inference_cost: 0, compute_cost: 0 }
    ])
  })

  it("reports a refused key (401 after the reconnects) as integration_not_configured", () => {
    const said = "unexpected status 401 Unauthorized: Incorrect API key provided: wrong. You can find your API key at " +
      "https://platform.openai.com/account/api-keys., url: http://127.0.0.1:8765/v1/responses"
    const events = decodeLines([
      threadStarted(),
      turnStarted,
      topError(`Reconnecting... 1/5 (${said})`),
      topError(`Reconnecting... 2/5 (${said})`),
      topError(said),
      turnFailed(said)
    ])
    expect(events.slice(0, 3)).toEqual([
      { type: "session", session_id: THREAD, session_link: null },
      { type: "status", message: `Codex: Reconnecting... 1/5 (${said})` },
      { type: "status", message: `Codex: Reconnecting... 2/5 (${said})` }
    ])
    expect(events).toHaveLength(4)
    const failure = resultOf(events)
    expect(failure).toMatchObject({ type: "result", outcome: "failed", error_code: "integration_not_configured" })
    expect(failure.message).toContain("HTTP 401")
    expect(failure.message).toContain("OPENAI_API_KEY")
    expect(failure.message).toContain("OPENAI_BASE_URL")
    expect(failure.message).toContain("Incorrect API key provided")
  })

  it("reports a missing key, and a failed turn that only the error before it explains, as integration_not_configured", () => {
    const missing = decodeLines([
      threadStarted(),
      turnStarted,
      turnFailed("Missing environment variable: `OPENAI_API_KEY`. Create an API key (https://platform.openai.com) and export it.")
    ])
    expect(resultOf(missing)).toMatchObject({ outcome: "failed", error_code: "integration_not_configured" })
    expect(resultOf(missing).message).toContain("OPENAI_API_KEY")

    const fromError = decodeLines([
      threadStarted(),
      turnStarted,
      topError("unexpected status 403 Forbidden: invalid_api_key"),
      json({ type: "turn.failed", error: {} })
    ])
    expect(resultOf(fromError)).toMatchObject({ outcome: "failed", error_code: "integration_not_configured" })
    expect(resultOf(fromError).message).toContain("403 Forbidden: invalid_api_key")
  })

  it("reports HTTP 500 after the retries as agent_failed with Codex's words", () => {
    const said = "We’re currently experiencing high demand, which may cause temporary errors."
    const events = decodeLines([threadStarted(), turnStarted, topError(said), turnFailed(said)])
    expect(events).toHaveLength(2)
    const failure = resultOf(events)
    expect(failure).toMatchObject({ type: "result", outcome: "failed", error_code: "agent_failed" })
    expect(failure.message).toContain(said)

    const quoted = decodeLines([
      threadStarted(),
      turnFailed("unexpected status 500 Internal Server Error: fake internal error, url: http://127.0.0.1:8765/v1/responses")
    ])
    expect(resultOf(quoted)).toMatchObject({ outcome: "failed", error_code: "agent_failed" })
    expect(resultOf(quoted).message).toContain("HTTP 500")
    expect(resultOf(quoted).message).toContain("fake internal error")
  })

  it("says to check OPENAI_BASE_URL when the endpoint cannot be reached", () => {
    const events = decodeLines([
      threadStarted(),
      turnFailed("stream disconnected before completion: error sending request for url (http://model.invalid/v1/responses)")
    ])
    expect(resultOf(events)).toMatchObject({ outcome: "failed", error_code: "agent_failed" })
    expect(resultOf(events).message).toContain("OPENAI_BASE_URL")
    expect(resultOf(events).message).toContain("error sending request")
  })

  describe("Codex specifics", () => {
    it("prefixes action ids with the process's number, so the same item id in two processes differs", () => {
      const events = decodeLines([
        threadStarted(),
        commandStarted("item_0"),
        commandCompleted("item_0", "a\n"),
        threadStarted(),
        commandStarted("item_0"),
        commandCompleted("item_0", "b\n")
      ])
      expect(events.filter((e) => e.type === "action").map((e) => e.id)).toEqual(["1:item_0", "2:item_0"])
      expect(events.filter((e) => e.type === "action_result").map((e) => e.action_id)).toEqual(["1:item_0", "2:item_0"])
    })

    it("marks a command that exited non-zero, or was declined, failed", () => {
      const events = decodeLines([
        threadStarted(),
        commandStarted("item_0", "/bin/bash -lc 'ls nope'"),
        commandCompleted("item_0", "ls: cannot access 'nope': No such file or directory\n", 2, "/bin/bash -lc 'ls nope'"),
        itemCompleted({ id: "item_1", type: "command_execution", command: "rm -rf /", aggregated_output: "", exit_code: 0, status: "declined" })
      ])
      expect(events.filter((e) => e.type === "action_result")).toEqual([
        { type: "action_result", action_id: "1:item_0", state: "failed", output: "ls: cannot access 'nope': No such file or directory\n" },
        { type: "action_result", action_id: "1:item_1", state: "failed", output: "" }
      ])
    })

    it("gives a completed item that never started both its action and its result", () => {
      const events = decodeLines([threadStarted(), commandCompleted("item_5", "x\n")])
      expect(events.slice(1)).toEqual([
        { type: "action", id: "1:item_5", category: "command", name: "shell", input: { command: COMMAND } },
        { type: "action_result", action_id: "1:item_5", state: "completed", output: "x\n" }
      ])
    })

    it("reads a skill through the shell as read_skill plus the command", () => {
      const command = "/bin/bash -lc 'cat /work/.agent-home/.codex/skills/pdf-report/SKILL.md'"
      const events = decodeLines([threadStarted(), commandStarted("item_0", command), commandCompleted("item_0", "---\nname: pdf-report\n---\n", 0, command)])
      expect(events.slice(1)).toEqual([
        { type: "read_skill", skill_path: "/work/.agent-home/.codex/skills/pdf-report/SKILL.md" },
        { type: "action", id: "1:item_0", category: "command", name: "shell", input: { command } },
        { type: "action_result", action_id: "1:item_0", state: "completed", output: "---\nname: pdf-report\n---\n" }
      ])
    })

    it("decodes file changes, MCP tool calls and web searches", () => {
      const changes = [{ path: "/work/f.txt", kind: "add" }, { path: "/work/g.txt", kind: "update" }]
      const events = decodeLines([
        threadStarted(),
        itemStarted({ id: "item_0", type: "file_change", changes, status: "in_progress" }),
        itemCompleted({ id: "item_0", type: "file_change", changes, status: "completed" }),
        itemStarted({ id: "item_1", type: "mcp_tool_call", server: "ping", tool: "ping", arguments: { text: "hi" }, result: null, error: null, status: "in_progress" }),
        itemCompleted({
          id: "item_1",
          type: "mcp_tool_call",
          server: "ping",
          tool: "ping",
          arguments: { text: "hi" },
          result: { content: [{ type: "text", text: "pong" }], structured_content: null },
          error: null,
          status: "completed"
        }),
        itemCompleted({ id: "item_2", type: "mcp_tool_call", server: "hweb", tool: "hping", arguments: {}, result: null, error: { message: "tool call failed: timeout" }, status: "failed" }),
        itemStarted({ id: "item_3", type: "web_search", query: "effect schema" }),
        itemCompleted({ id: "item_3", type: "web_search", query: "effect schema", action: { type: "search", query: "effect schema" } })
      ])
      expect(events.slice(1)).toEqual([
        { type: "action", id: "1:item_0", category: "files", name: "apply_patch", input: { changes } },
        { type: "action_result", action_id: "1:item_0", state: "completed", output: "add /work/f.txt\nupdate /work/g.txt" },
        { type: "action", id: "1:item_1", category: "integration", name: "mcp__ping__ping", input: { text: "hi" } },
        { type: "action_result", action_id: "1:item_1", state: "completed", output: "pong" },
        { type: "action", id: "1:item_2", category: "integration", name: "mcp__hweb__hping", input: {} },
        { type: "action_result", action_id: "1:item_2", state: "failed", output: "tool call failed: timeout" },
        { type: "action", id: "1:item_3", category: "search", name: "web_search", input: { query: "effect schema" } },
        { type: "action_result", action_id: "1:item_3", state: "completed", output: json({ type: "search", query: "effect schema" }) }
      ])
    })

    it("shows warning items as the status line, and skips reasoning, todo lists and turn.started", () => {
      const warning = "Model metadata for `gpt-5.1-codex` not found. Defaulting to fallback metadata; this can degrade performance."
      expect(decodeLines([
        turnStarted,
        itemCompleted({ id: "item_0", type: "error", message: warning }),
        itemCompleted({ id: "item_1", type: "reasoning", text: "thinking" }),
        itemStarted({ id: "item_2", type: "todo_list", items: [{ text: "a", completed: false }] }),
        itemCompleted({ id: "item_2", type: "todo_list", items: [{ text: "a", completed: true }] }),
        agentMessage("item_3", "  \n ")
      ])).toEqual([{ type: "status", message: `Codex: ${warning}` }])
    })
  })

  describe("robustness", () => {
    /** Lines that are not Codex events, or are broken ones: nothing. */
    const ignored: ReadonlyArray<readonly [string, string]> = [
      ["an unknown event type", json({ type: "session.configured", model: "gpt-5.5" })],
      ["an event without a type", json({ thread_id: THREAD })],
      ["a type that is not a string", json({ type: 1, thread_id: THREAD })],
      ["stderr-like text", "Reading additional input from stdin..."],
      ["a warning line", "WARNING: proceeding, even though we could not create PATH aliases"],
      ["broken JSON", '{"type":"thread.started","thread_id":'],
      ["a blank line", ""],
      ["a line of spaces", "  \t "],
      ["a JSON array", json([{ type: "thread.started", thread_id: THREAD }])],
      ["a JSON string", json("{\"type\":\"thread.started\"}")],
      ["a JSON number", "17"],
      ["JSON null", "null"],
      ["thread.started with a numeric id", json({ type: "thread.started", thread_id: 42 })],
      ["thread.started without an id", json({ type: "thread.started" })],
      ["item.started with a null item", json({ type: "item.started", item: null })],
      ["item.completed with an array item", json({ type: "item.completed", item: [1, 2] })],
      ["item.completed with a string item", json({ type: "item.completed", item: "agent_message" })],
      ["an agent_message whose text is a number", itemCompleted({ id: "item_0", type: "agent_message", text: 5 })],
      ["an agent_message with null text", itemCompleted({ id: "item_0", type: "agent_message", text: null })],
      ["an error item with a numeric message", itemCompleted({ id: "item_0", type: "error", message: 500 })],
      ["an item of an unknown type", itemCompleted({ id: "item_0", type: "collab_tool_call" })],
      ["an item without a type", itemCompleted({ id: "item_0" })],
      ["a top-level error with a numeric message", json({ type: "error", message: 401 })],
      ["a top-level error without a message", json({ type: "error" })],
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
      ["a command with a numeric id and command", itemStarted({ id: 7, type: "command_execution", command: 123 })],
      ["a completed command with wrong types", itemCompleted({ id: null, type: "command_execution", command: ["ls"], aggregated_output: 5, exit_code: "0", status: 3 })],
      ["a file change with changes of the wrong type", itemCompleted({ id: "item_0", type: "file_change", changes: [null, 1, { path: 2, kind: {} }], status: "completed" })],
      ["a file change whose changes is a string", itemCompleted({ id: "item_0", type: "file_change", changes: "f.txt" })],
      ["an MCP call with wrong types", itemCompleted({ id: "item_0", type: "mcp_tool_call", server: 1, tool: null, arguments: "x", result: "pong", error: 5 })],
      ["an MCP call with an object error without a message", itemCompleted({ id: "item_0", type: "mcp_tool_call", error: { code: 1 } })],
      ["a web search with a numeric query", itemCompleted({ id: "item_0", type: "web_search", query: 9, action: "search" })],
      ["turn.completed with usage null", json({ type: "turn.completed", usage: null })],
      ["turn.completed with string and negative counts", json({ type: "turn.completed", usage: { input_tokens: "200", output_tokens: -40 } })],
      ["turn.completed with fractional counts", json({ type: "turn.completed", usage: { input_tokens: 10.5, output_tokens: 0.2 } })],
      ["turn.failed with a numeric error", json({ type: "turn.failed", error: 500 })],
      ["turn.failed with a null error", json({ type: "turn.failed", error: null })],
      ["turn.failed with a blank message", json({ type: "turn.failed", error: { message: "  " } })],
      ["turn.completed with token counts beyond the safe integers (1e300)", json({ type: "turn.completed", usage: { input_tokens: 1e300, output_tokens: 1e19 } })]
    ]
    it.each(wrongTypes)("never throws and gives valid events on %s", (_name, line) => {
      decodeLines([threadStarted(), line])
    })

    it("keeps a 1 MB message and a 1 MB command output whole", () => {
      const big = "x".repeat(1_000_000)
      const events = decodeLines([threadStarted(), agentMessage("item_0", big), commandCompleted("item_1", big)])
      expect(events.slice(1)).toEqual([
        { type: "message", role: "assistant", text: big },
        { type: "action", id: "1:item_1", category: "command", name: "shell", input: { command: COMMAND } },
        { type: "action_result", action_id: "1:item_1", state: "completed", output: big }
      ])
    })

    it.each(DEPTHS)("takes MCP arguments nested %i levels deep without throwing", (depth) => {
      const line = '{"type":"item.started","item":{"id":"item_0","type":"mcp_tool_call","server":"ping","tool":"ping","arguments":' +
        deepObject(depth) + "}}"
      const events = decodeLines([threadStarted(), line])
      expect(events[1]).toMatchObject({ type: "action", id: "1:item_0", category: "integration", name: "mcp__ping__ping" })
    })

    it.each(DEPTHS)("never throws on an MCP result nested %i levels deep", (depth) => {
      const line = '{"type":"item.completed","item":{"id":"item_0","type":"mcp_tool_call","server":"ping","tool":"ping",' +
        '"arguments":{},"result":{"content":[' + deepObject(depth) + ']},"error":null,"status":"completed"}}'
      const events = decodeLines([threadStarted(), line])
      expect(events.at(-1)).toMatchObject({ type: "action_result", action_id: "1:item_0", state: "completed" })
    })

    it.each(DEPTHS)("never throws on a web search action nested %i levels deep", (depth) => {
      const line = '{"type":"item.completed","item":{"id":"item_0","type":"web_search","query":"q","action":' + deepObject(depth) + "}}"
      const events = decodeLines([threadStarted(), line])
      expect(events.at(-1)).toMatchObject({ type: "action_result", action_id: "1:item_0", state: "completed" })
    })

    it("goes on decoding after bad lines", () => {
      const events = decodeLines([
        "Reading additional input from stdin...",
        threadStarted(),
        "[]",
        deepObject(DEPTH),
        "",
        agentMessage("item_0", "still here")
      ])
      expect(events).toEqual([
        { type: "session", session_id: THREAD, session_link: null },
        { type: "message", role: "assistant", text: "still here" }
      ])
    })
  })
})
