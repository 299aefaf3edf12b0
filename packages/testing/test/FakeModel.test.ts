import { afterEach, describe, expect, it } from "vitest"
import { type FakeModelServer, type ModelTurn, defaultScript, jsonFor, startFakeModel, userText } from "../src/index.js"

interface SseEvent {
  readonly event: string | undefined
  readonly data: string
}

/** Server-sent events as a client reads them: blocks separated by a blank line, `event:` and `data:` fields. */
const parseSse = (body: string): ReadonlyArray<SseEvent> => {
  expect(body.endsWith("\n\n")).toBe(true)
  return body
    .split("\n\n")
    .filter((block) => block.trim() !== "")
    .map((block) => {
      const lines = block.split("\n")
      for (const line of lines) expect(line).toMatch(/^(event|data): /)
      return {
        event: lines.find((line) => line.startsWith("event: "))?.slice("event: ".length),
        data: lines
          .filter((line) => line.startsWith("data: "))
          .map((line) => line.slice("data: ".length))
          .join("\n")
      }
    })
}

const json = (event: SseEvent): Record<string, unknown> => JSON.parse(event.data) as Record<string, unknown>

let server: FakeModelServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

const start = async (options: Parameters<typeof startFakeModel>[0] = {}) => {
  server = await startFakeModel(options)
  return server
}

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) })

const turn = (overrides: Partial<ModelTurn>): ModelTurn => ({
  protocol: "chat",
  model: "m",
  system: "",
  userTexts: [],
  lastUser: "",
  toolOutput: undefined,
  toolOutputs: [],
  tools: [],
  deferredTools: [],
  shellTool: undefined,
  responseSchema: undefined,
  headers: {},
  stream: true,
  path: "/v1/chat/completions",
  ...overrides
})

describe("defaultScript", () => {
  it("answers a tool result with DONE, a RUN: line with a shell call, anything else with ANSWER", () => {
    expect(defaultScript(turn({ toolOutput: "  f.txt\n", lastUser: "RUN: ls" }))).toEqual({ text: "DONE: f.txt" })
    expect(defaultScript(turn({ lastUser: "please\nRUN: echo hello > f.txt && ls\nthanks" }))).toEqual({ tool: { command: "echo hello > f.txt && ls" } })
    expect(defaultScript(turn({ lastUser: "  hi there \n" }))).toEqual({ text: "ANSWER: hi there" })
    expect(defaultScript(turn({ lastUser: "x".repeat(300) }))).toEqual({ text: `ANSWER: ${"x".repeat(200)}` })
  })
})

describe("userText", () => {
  it("drops the CLIs' own context and keeps the user's text", () => {
    expect(userText(["<system-reminder>\ncontext\n</system-reminder>\n\n", "RUN: ls"])).toBe("RUN: ls")
    expect(userText(["hello <system-reminder>x</system-reminder> world"])).toBe("hello  world")
    expect(userText(["<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"])).toBe("")
    expect(userText(["# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nbe nice\n</INSTRUCTIONS>"])).toBe("")
    expect(userText(["<session_context>\nThis is the Gemini CLI.\n</session_context>", "RUN: ls"])).toBe("RUN: ls")
    expect(userText(['"RUN: echo a > b"'])).toBe("RUN: echo a > b")
    expect(userText(["<session>\nRUN: ls\n</session>\n\nWrite the title"])).toBe("<session>\nRUN: ls\n</session>\n\nWrite the title")
  })
})

describe("jsonFor", () => {
  it("fills a JSON schema with the text", () => {
    expect(jsonFor({ type: "object", properties: { title: { type: "string" } }, required: ["title"] }, "T")).toEqual({ title: "T" })
    expect(
      jsonFor({ type: "OBJECT", properties: { reasoning: { type: "STRING" }, score: { type: "INTEGER" }, pick: { type: "string", enum: ["flash", "pro"] } } }, "r")
    ).toEqual({ reasoning: "r", score: 1, pick: "flash" })
  })
})

describe("Anthropic Messages", () => {
  const body = (text: string, extra: Record<string, unknown> = {}) => ({
    model: "claude-test",
    stream: true,
    system: [{ type: "text", text: "You are Claude Code." }],
    messages: [{ role: "user", content: [{ type: "text", text: "<system-reminder>\nctx\n</system-reminder>" }, { type: "text", text }] }],
    tools: [{ name: "Read" }, { name: "Bash" }],
    ...extra
  })

  it("streams a text reply as SSE with usage", async () => {
    const fake = await start()
    const response = await post(`${fake.url}/v1/messages?beta=true`, body("hello"), { "x-api-key": "k" })
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toContain("text/event-stream")
    const events = parseSse(await response.text())
    expect(events.map((event) => event.event)).toEqual([
      "message_start",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop"
    ])
    for (const event of events) expect(json(event)["type"]).toBe(event.event)
    const text = events
      .filter((event) => event.event === "content_block_delta")
      .map((event) => (json(event)["delta"] as { text: string }).text)
      .join("")
    expect(text).toBe("ANSWER: hello")
    const delta = json(events[6]!) as { delta: { stop_reason: string }; usage: { input_tokens: number; output_tokens: number } }
    expect(delta.delta.stop_reason).toBe("end_turn")
    expect(delta.usage.input_tokens).toBeGreaterThan(0)
    expect(delta.usage.output_tokens).toBeGreaterThan(0)
    expect(fake.turns).toHaveLength(1)
    expect(fake.turns[0]).toMatchObject({
      protocol: "anthropic",
      model: "claude-test",
      system: "You are Claude Code.",
      userTexts: ["hello"],
      lastUser: "hello",
      toolOutput: undefined,
      tools: ["Read", "Bash"],
      shellTool: "Bash",
      stream: true,
      path: "/v1/messages?beta=true"
    })
    expect(fake.turns[0]?.headers["x-api-key"]).toBe("k")
    expect(fake.requests.map((request) => `${request.method} ${request.path}`)).toEqual(["POST /v1/messages?beta=true"])
  })

  it("streams a Bash tool call whose input comes in pieces, and reads the tool result back", async () => {
    const fake = await start()
    const events = parseSse(await (await post(`${fake.url}/v1/messages`, body("RUN: echo hi > f.txt"))).text())
    const startBlock = json(events[1]!)["content_block"] as { type: string; id: string; name: string }
    expect(startBlock).toMatchObject({ type: "tool_use", name: "Bash" })
    const input = events
      .filter((event) => event.event === "content_block_delta")
      .map((event) => (json(event)["delta"] as { partial_json: string }).partial_json)
    expect(input.length).toBeGreaterThan(1)
    expect(JSON.parse(input.join(""))).toEqual({ command: "echo hi > f.txt" })
    expect((json(events.at(-2)!)["delta"] as { stop_reason: string }).stop_reason).toBe("tool_use")

    const followUp = {
      ...body("RUN: echo hi > f.txt"),
      stream: false,
      messages: [
        ...body("RUN: echo hi > f.txt").messages,
        { role: "assistant", content: [{ type: "tool_use", id: startBlock.id, name: "Bash", input: { command: "echo hi > f.txt" } }] },
        { role: "system", content: "mid-conversation system text" },
        { role: "user", content: [{ type: "tool_result", tool_use_id: startBlock.id, content: [{ type: "text", text: "f.txt\n" }] }] }
      ]
    }
    const message = (await (await post(`${fake.url}/v1/messages`, followUp)).json()) as { content: Array<{ type: string; text: string }>; stop_reason: string; usage: { input_tokens: number } }
    expect(message.content).toEqual([{ type: "text", text: "DONE: f.txt" }])
    expect(message.stop_reason).toBe("end_turn")
    expect(message.usage.input_tokens).toBe(100)
    expect(fake.turns[1]).toMatchObject({ toolOutput: "f.txt\n", lastUser: "RUN: echo hi > f.txt", stream: false })
    expect(fake.turns[1]?.system).toContain("mid-conversation system text")
  })

  it("takes the user's text after an interrupted tool call as the newest input, not the tool result", async () => {
    const fake = await start()
    const messages = [
      { role: "user", content: "RUN: sleep 30" },
      { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "Bash", input: { command: "sleep 30" } }] },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "t1", content: "The user doesn't want to proceed with this tool use.", is_error: true },
          { type: "text", text: "[Request interrupted by user for tool use]\n" },
          { type: "text", text: "after interrupt" }
        ]
      }
    ]
    const message = (await (await post(`${fake.url}/v1/messages`, { ...body("x"), stream: false, messages })).json()) as { content: Array<{ text: string }> }
    expect(message.content[0]?.text).toBe("ANSWER: after interrupt")
    expect(fake.turns[0]).toMatchObject({ toolOutput: undefined, lastUser: "after interrupt", userTexts: ["RUN: sleep 30", "after interrupt"] })
  })

  it("reads the deferred tools Claude Code announces, and tool results without its system reminders", async () => {
    const fake = await start()
    const announce = (names: string) =>
      `<system-reminder>\nThe following deferred tools are now available via ToolSearch. Their schemas are NOT loaded. Use ToolSearch with query "select:<name>[,<name>...]" to load tool schemas before calling them:\n${names}\n</system-reminder>`
    const messages = [
      { role: "user", content: [{ type: "text", text: announce("Monitor\nmcp__probe__ping") }, { type: "text", text: "RUN: ls" }] },
      { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "Bash", input: { command: "ls" } }] },
      { role: "system", content: [{ type: "text", text: "The following deferred tools are available via ToolSearch. Shortened:\nmcp__big__* (42)\nMonitor" }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "f.txt\n\n<system-reminder>\n<total_tokens>1 tokens left</total_tokens>\n</system-reminder>" }] }
    ]
    const message = (await (await post(`${fake.url}/v1/messages`, { ...body("x"), stream: false, messages })).json()) as { content: Array<{ text: string }> }
    expect(message.content[0]?.text).toBe("DONE: f.txt")
    expect(fake.turns[0]).toMatchObject({ tools: ["Read", "Bash"], deferredTools: ["Monitor", "mcp__probe__ping", "mcp__big__*"], toolOutput: "f.txt\n\n" })
  })

  it("answers text when no shell tool is offered, as JSON when the call demands a schema", async () => {
    const fake = await start()
    const schema = { type: "object", properties: { title: { type: "string" } }, required: ["title"] }
    const message = (await (
      await post(`${fake.url}/v1/messages`, { ...body("RUN: ls"), tools: [], stream: false, output_config: { format: { type: "json_schema", schema } } })
    ).json()) as { content: Array<{ text: string }> }
    expect(JSON.parse(message.content[0]!.text)).toEqual({ title: "ANSWER: RUN: ls" })
    expect(fake.turns[0]?.responseSchema).toEqual(schema)
  })

  it("answers an error reply with its status and the API's error body", async () => {
    const fake = await start({ script: () => ({ error: { status: 529, message: "Overloaded" } }) })
    const response = await post(`${fake.url}/v1/messages`, body("hi"))
    expect(response.status).toBe(529)
    expect(await response.json()).toEqual({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } })
    expect(fake.turns).toHaveLength(1)
  })

  it("refuses a wrong key like the real API, and takes the right one by x-api-key or Bearer", async () => {
    const fake = await start({ apiKey: "right" })
    const refused = await post(`${fake.url}/v1/messages`, body("hi"), { "x-api-key": "wrong" })
    expect(refused.status).toBe(401)
    expect(await refused.json()).toEqual({ type: "error", error: { type: "authentication_error", message: "invalid x-api-key" } })
    expect((await post(`${fake.url}/v1/messages`, body("hi"), { "x-api-key": "right" })).status).toBe(200)
    expect((await post(`${fake.url}/v1/messages`, body("hi"), { authorization: "Bearer right" })).status).toBe(200)
    expect(fake.turns).toHaveLength(2)
    expect(fake.requests).toHaveLength(3)
  })
})

describe("OpenAI Responses", () => {
  const body = (input: ReadonlyArray<unknown>, tools: ReadonlyArray<unknown> = [{ type: "function", name: "exec_command" }, { type: "web_search" }]) => ({
    model: "gpt-test",
    stream: true,
    instructions: "base instructions",
    input: [
      { type: "message", role: "developer", content: [{ type: "input_text", text: "developer text" }] },
      { type: "message", role: "user", content: [{ type: "input_text", text: "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>" }] },
      ...input
    ],
    tools
  })
  const user = (text: string) => ({ type: "message", role: "user", content: [{ type: "input_text", text }] })

  it("streams a text reply ending in response.completed with usage", async () => {
    const fake = await start()
    const response = await post(`${fake.url}/v1/responses`, body([user("hello")]), { authorization: "Bearer k" })
    const events = parseSse(await response.text())
    for (const event of events) expect(json(event)["type"]).toBe(event.event)
    expect(events[0]?.event).toBe("response.created")
    expect(
      events
        .filter((event) => event.event === "response.output_text.delta")
        .map((event) => json(event)["delta"])
        .join("")
    ).toBe("ANSWER: hello")
    const done = json(events.find((event) => event.event === "response.output_item.done")!)["item"]
    expect(done).toMatchObject({ type: "message", role: "assistant", content: [{ type: "output_text", text: "ANSWER: hello" }] })
    const completed = json(events.at(-1)!) as { type: string; response: { status: string; usage: { input_tokens: number; output_tokens: number } } }
    expect(completed.type).toBe("response.completed")
    expect(completed.response.status).toBe("completed")
    expect(completed.response.usage.input_tokens).toBeGreaterThan(0)
    expect(completed.response.usage.output_tokens).toBeGreaterThan(0)
    expect(fake.turns[0]).toMatchObject({
      protocol: "responses",
      model: "gpt-test",
      system: "base instructions\n\ndeveloper text",
      userTexts: ["hello"],
      lastUser: "hello",
      tools: ["exec_command", "web_search"],
      shellTool: "exec_command"
    })
  })

  it("calls exec_command {cmd}, or shell {command: [argv]} when that is the tool offered, and reads function_call_output", async () => {
    const fake = await start()
    const events = parseSse(await (await post(`${fake.url}/v1/responses`, body([user("RUN: ls -la")]))).text())
    const item = json(events.find((event) => event.event === "response.output_item.done")!)["item"] as { type: string; name: string; call_id: string; arguments: string }
    expect(item).toMatchObject({ type: "function_call", name: "exec_command" })
    expect(JSON.parse(item.arguments)).toEqual({ cmd: "ls -la" })
    const pieces = events.filter((event) => event.event === "response.function_call_arguments.delta").map((event) => json(event)["delta"])
    expect(pieces.join("")).toBe(item.arguments)

    const shell = parseSse(await (await post(`${fake.url}/v1/responses`, body([user("RUN: ls")], [{ type: "function", name: "shell" }]))).text())
    const shellItem = json(shell.find((event) => event.event === "response.output_item.done")!)["item"] as { name: string; arguments: string }
    expect(shellItem.name).toBe("shell")
    expect(JSON.parse(shellItem.arguments)).toEqual({ command: ["bash", "-lc", "ls"] })

    const result = [user("RUN: ls -la"), { type: "function_call", call_id: item.call_id, name: "exec_command", arguments: item.arguments }, { type: "function_call_output", call_id: item.call_id, output: "Output:\nf.txt\n" }]
    const final = parseSse(await (await post(`${fake.url}/v1/responses`, body(result))).text())
    expect(json(final.at(-1)!)).toMatchObject({ response: { output: [{ content: [{ text: "DONE: Output:\nf.txt" }] }] } })
    expect(fake.turns[2]?.toolOutput).toBe("Output:\nf.txt\n")
  })

  it("names the tools of a namespace (Codex's MCP servers) NAMESPACE__TOOL", async () => {
    const fake = await start()
    const tools = [{ type: "function", name: "exec_command" }, { type: "namespace", name: "mcp__ping", tools: [{ type: "function", name: "ping" }] }]
    await (await post(`${fake.url}/v1/responses`, body([user("hi")], tools))).text()
    expect(fake.turns[0]?.tools).toEqual(["exec_command", "mcp__ping__ping"])
  })

  it("answers an error reply and refuses a wrong key with OpenAI's error body", async () => {
    const fake = await start({ apiKey: "right", script: () => ({ error: { status: 500, message: "boom" } }) })
    const refused = await post(`${fake.url}/v1/responses`, body([user("hi")]), { authorization: "Bearer wrong" })
    expect(refused.status).toBe(401)
    expect(await refused.json()).toMatchObject({ error: { type: "invalid_request_error", code: "invalid_api_key" } })
    const failed = await post(`${fake.url}/v1/responses`, body([user("hi")]), { authorization: "Bearer right" })
    expect(failed.status).toBe(500)
    expect(await failed.json()).toEqual({ error: { message: "boom", type: "server_error", param: null, code: null } })
    expect(fake.turns).toHaveLength(1)
  })
})

describe("OpenAI Chat Completions", () => {
  const body = (messages: ReadonlyArray<unknown>, extra: Record<string, unknown> = {}) => ({
    model: "local-model",
    stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: "system", content: "You are opencode." }, ...messages],
    tools: [{ type: "function", function: { name: "read" } }, { type: "function", function: { name: "bash" } }],
    ...extra
  })

  it("streams a text reply, then a usage chunk and [DONE]", async () => {
    const fake = await start()
    const events = parseSse(await (await post(`${fake.url}/v1/chat/completions`, body([{ role: "user", content: '"hello"' }]))).text())
    expect(events.at(-1)?.data).toBe("[DONE]")
    const chunks = events.slice(0, -1).map(json) as Array<{ choices: Array<{ delta: { content?: string }; finish_reason: string | null }>; usage?: { prompt_tokens: number; completion_tokens: number } }>
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? "").join("")).toBe("ANSWER: hello")
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe("stop")
    expect(chunks.at(-1)?.choices).toEqual([])
    expect(chunks.at(-1)?.usage?.prompt_tokens).toBeGreaterThan(0)
    expect(chunks.at(-1)?.usage?.completion_tokens).toBeGreaterThan(0)
    expect(fake.turns[0]).toMatchObject({ protocol: "chat", system: "You are opencode.", lastUser: "hello", tools: ["read", "bash"], shellTool: "bash" })
  })

  it("streams a bash tool call with its arguments split across chunks, and reads the tool message back", async () => {
    const fake = await start()
    const events = parseSse(await (await post(`${fake.url}/v1/chat/completions`, body([{ role: "user", content: [{ type: "text", text: "RUN: ls" }] }]))).text())
    const calls = events
      .slice(0, -1)
      .map(json)
      .flatMap((chunk) => ((chunk["choices"] as Array<{ delta: { tool_calls?: Array<{ id?: string; function: { name?: string; arguments: string } }> } }>)[0]?.delta.tool_calls ?? []))
    expect(calls[0]?.function.name).toBe("bash")
    expect(calls.length).toBeGreaterThan(2)
    expect(JSON.parse(calls.map((call) => call.function.arguments).join(""))).toEqual({ command: "ls", description: "Run the requested command" })
    const finish = events.slice(0, -1).map(json).map((chunk) => (chunk["choices"] as Array<{ finish_reason: string | null }>)[0]?.finish_reason)
    expect(finish).toContain("tool_calls")

    const messages = [
      { role: "user", content: "RUN: ls" },
      { role: "assistant", content: null, tool_calls: [{ id: calls[0]?.id, type: "function", function: { name: "bash", arguments: "{}" } }] },
      { role: "tool", tool_call_id: calls[0]?.id, content: "f.txt\n" }
    ]
    const completion = (await (await post(`${fake.url}/v1/chat/completions`, body(messages, { stream: false }))).json()) as {
      choices: Array<{ message: { content: string }; finish_reason: string }>
      usage: { total_tokens: number }
    }
    expect(completion.choices[0]).toMatchObject({ message: { role: "assistant", content: "DONE: f.txt" }, finish_reason: "stop" })
    expect(completion.usage.total_tokens).toBeGreaterThan(0)
    expect(fake.turns[1]?.toolOutput).toBe("f.txt\n")
  })

  it("answers text to a title call without tools, an error reply, and refuses a wrong key", async () => {
    const fake = await start({ apiKey: "right", script: (turn) => (turn.lastUser === "fail" ? { error: { status: 429, message: "slow down" } } : defaultScript(turn)) })
    const auth = { authorization: "Bearer right" }
    const title = (await (await post(`${fake.url}/v1/chat/completions`, body([{ role: "user", content: "RUN: ls" }], { tools: undefined, stream: false }), auth)).json()) as {
      choices: Array<{ message: { content: string } }>
    }
    expect(title.choices[0]?.message.content).toBe("ANSWER: RUN: ls")
    const failed = await post(`${fake.url}/v1/chat/completions`, body([{ role: "user", content: "fail" }]), auth)
    expect(failed.status).toBe(429)
    expect(await failed.json()).toMatchObject({ error: { message: "slow down", code: "rate_limit_exceeded" } })
    const refused = await post(`${fake.url}/v1/chat/completions`, body([{ role: "user", content: "hi" }]))
    expect(refused.status).toBe(401)
  })
})

describe("Gemini", () => {
  const path = (model: string, method: string) => `/v1beta/models/${model}:${method}`
  const body = (contents: ReadonlyArray<unknown>, extra: Record<string, unknown> = {}) => ({
    contents: [{ role: "user", parts: [{ text: "<session_context>\nThis is the Gemini CLI.\n</session_context>" }] }, ...contents],
    systemInstruction: { role: "user", parts: [{ text: "You are Gemini CLI." }] },
    tools: [{ functionDeclarations: [{ name: "read_file" }, { name: "run_shell_command" }] }],
    ...extra
  })

  it("streams a text reply as data-only SSE, the last chunk with finishReason and usage", async () => {
    const fake = await start()
    const response = await post(`${fake.url}${path("gemini-test", "streamGenerateContent")}?alt=sse`, body([{ role: "user", parts: [{ text: "hello" }] }]), { "x-goog-api-key": "k" })
    const events = parseSse(await response.text())
    for (const event of events) expect(event.event).toBeUndefined()
    const chunks = events.map(json) as Array<{ candidates: Array<{ content: { role: string; parts: Array<{ text: string }> }; finishReason?: string }>; usageMetadata?: { promptTokenCount: number; candidatesTokenCount: number } }>
    expect(chunks.map((chunk) => chunk.candidates[0]?.content.parts[0]?.text).join("")).toBe("ANSWER: hello")
    expect(chunks.at(-1)?.candidates[0]?.finishReason).toBe("STOP")
    expect(chunks.at(-1)?.usageMetadata?.promptTokenCount).toBeGreaterThan(0)
    expect(chunks.at(-1)?.usageMetadata?.candidatesTokenCount).toBeGreaterThan(0)
    expect(fake.turns[0]).toMatchObject({
      protocol: "gemini",
      model: "gemini-test",
      system: "You are Gemini CLI.",
      userTexts: ["hello"],
      tools: ["read_file", "run_shell_command"],
      shellTool: "run_shell_command",
      stream: true
    })
  })

  it("calls run_shell_command and reads the functionResponse back (generateContent, not streamed)", async () => {
    const fake = await start()
    const first = (await (await post(`${fake.url}${path("g", "generateContent")}`, body([{ role: "user", parts: [{ text: "RUN: ls" }] }]))).json()) as {
      candidates: Array<{ content: { parts: Array<{ functionCall: { name: string; args: unknown } }> } }>
    }
    expect(first.candidates[0]?.content.parts[0]?.functionCall).toEqual({ name: "run_shell_command", args: { command: "ls", description: "Run the requested command" } })
    const contents = [
      { role: "user", parts: [{ text: "RUN: ls" }] },
      { role: "model", parts: [{ functionCall: { name: "run_shell_command", args: { command: "ls" } } }] },
      { role: "user", parts: [{ functionResponse: { name: "run_shell_command", response: { output: "Output: f.txt" } } }] }
    ]
    const second = (await (await post(`${fake.url}${path("g", "generateContent")}`, body(contents))).json()) as { candidates: Array<{ content: { parts: Array<{ text: string }> } }> }
    expect(second.candidates[0]?.content.parts[0]?.text).toBe("DONE: Output: f.txt")
    expect(fake.turns[1]).toMatchObject({ toolOutput: "Output: f.txt", lastUser: "RUN: ls", stream: false })
  })

  it("answers a routing call demanding JSON with JSON, and countTokens", async () => {
    const fake = await start()
    const schema = { type: "OBJECT", properties: { complexity_reasoning: { type: "STRING" }, complexity_score: { type: "INTEGER" } } }
    const routed = (await (
      await post(`${fake.url}${path("flash-lite", "generateContent")}`, body([{ role: "user", parts: [{ text: "hi" }] }], { tools: undefined, generationConfig: { responseMimeType: "application/json", responseJsonSchema: schema } }))
    ).json()) as { candidates: Array<{ content: { parts: Array<{ text: string }> } }> }
    expect(JSON.parse(routed.candidates[0]!.content.parts[0]!.text)).toEqual({ complexity_reasoning: "ANSWER: hi", complexity_score: 1 })
    expect(await (await post(`${fake.url}${path("g", "countTokens")}`, body([]))).json()).toEqual({ totalTokens: 100 })
  })

  it("refuses a wrong key with 400 API key not valid, takes ?key=, and answers error replies", async () => {
    const fake = await start({ apiKey: "right", script: () => ({ error: { status: 503, message: "overloaded" } }) })
    const url = `${fake.url}${path("g", "streamGenerateContent")}?alt=sse`
    const refused = await post(url, body([{ role: "user", parts: [{ text: "hi" }] }]), { "x-goog-api-key": "wrong" })
    expect(refused.status).toBe(400)
    expect(await refused.json()).toMatchObject({ error: { code: 400, message: "API key not valid. Please pass a valid API key.", status: "INVALID_ARGUMENT" } })
    const failed = await post(`${url}&key=right`, body([{ role: "user", parts: [{ text: "hi" }] }]))
    expect(failed.status).toBe(503)
    expect(await failed.json()).toEqual({ error: { code: 503, message: "overloaded", status: "UNAVAILABLE" } })
  })
})

describe("the server", () => {
  it("answers HEAD and GET /, lists models, and records what it does not serve as 404", async () => {
    const fake = await start()
    expect((await fetch(`${fake.url}/`, { method: "HEAD" })).status).toBe(200)
    expect((await fetch(`${fake.url}/`)).status).toBe(200)
    expect(await (await fetch(`${fake.url}/v1/models`)).json()).toMatchObject({ object: "list", data: [{ id: "fake-model", object: "model" }] })
    const missing = await fetch(`${fake.url}/v2/whatever?x=1`)
    expect(missing.status).toBe(404)
    expect(((await missing.json()) as { error: { message: string } }).error.message).toContain("GET /v2/whatever?x=1")
    expect(fake.notFound.map((request) => request.path)).toEqual(["/v2/whatever?x=1"])
    expect(fake.requests).toHaveLength(4)
    expect(fake.turns).toHaveLength(0)
  })

  it("waits chunkDelayMs between streamed chunks", async () => {
    const fake = await start({ chunkDelayMs: 40 })
    const started = Date.now()
    const events = parseSse(await (await post(`${fake.url}/v1/chat/completions`, { model: "m", stream: true, messages: [{ role: "user", content: "hello" }] })).text())
    expect(Date.now() - started).toBeGreaterThanOrEqual(40 * (events.length - 1) - 5)
  })

  it("lists every tool result of the conversation, also those a newer user message follows", async () => {
    const fake = await start()
    const later = "the next question"
    await post(`${fake.url}/v1/messages`, {
      model: "m",
      stream: false,
      messages: [
        { role: "user", content: "RUN: ls" },
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "Bash", input: { command: "ls" } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "anthropic-out" }] },
        { role: "assistant", content: [{ type: "text", text: "DONE" }] },
        { role: "user", content: later }
      ]
    })
    await post(`${fake.url}/v1/responses`, {
      model: "m",
      stream: false,
      input: [
        { type: "message", role: "user", content: [{ type: "input_text", text: "RUN: ls" }] },
        { type: "function_call", call_id: "c1", name: "exec_command", arguments: "{}" },
        { type: "function_call_output", call_id: "c1", output: "responses-out" },
        { type: "message", role: "user", content: [{ type: "input_text", text: later }] }
      ]
    })
    await post(`${fake.url}/v1/chat/completions`, {
      model: "m",
      stream: false,
      messages: [
        { role: "user", content: "RUN: ls" },
        { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "bash", arguments: "{}" } }] },
        { role: "tool", tool_call_id: "c1", content: "chat-out" },
        { role: "user", content: later }
      ]
    })
    await post(`${fake.url}/v1beta/models/g:generateContent`, {
      contents: [
        { role: "user", parts: [{ text: "RUN: ls" }] },
        { role: "model", parts: [{ functionCall: { name: "run_shell_command", args: {} } }] },
        { role: "user", parts: [{ functionResponse: { name: "run_shell_command", response: { output: "gemini-out" } } }] },
        { role: "user", parts: [{ text: later }] }
      ]
    })
    expect(fake.turns.map((t) => [t.protocol, t.toolOutput, t.toolOutputs, t.lastUser])).toEqual([
      ["anthropic", undefined, ["anthropic-out"], later],
      ["responses", undefined, ["responses-out"], later],
      ["chat", undefined, ["chat-out"], later],
      ["gemini", undefined, ["gemini-out"], later]
    ])
  })

  it("answers a 500 when the script throws", async () => {
    const fake = await start({
      script: () => {
        throw new Error("bad script")
      }
    })
    const response = await post(`${fake.url}/v1/chat/completions`, { model: "m", messages: [{ role: "user", content: "hi" }] })
    expect(response.status).toBe(500)
    expect(JSON.stringify(await response.json())).toContain("bad script")
  })
})
