import { describe, expect, it } from "vitest"
import { memoryAgent, runOnce, start } from "./memory.js"

const types = (messages: ReadonlyArray<Record<string, unknown>>) => messages.map((m) => m.type)

describe("runAgent: the frame of every run", () => {
  it("opens a session and the execution step, and ends with usage, the step's end and the result", async () => {
    const { agent, code } = await runOnce({ execution_id: "7", title: "Fix it", prompt: "Fix the bug\nplease" })
    expect(code).toBe(0)
    expect(agent.messages()).toEqual([
      { type: "session", session_id: "scripted-7", session_link: null },
      { type: "step_start", id: "execution-7", description: "Fix it" },
      { type: "message", role: "assistant", text: "Done: Fix the bug" },
      { type: "usage", input_tokens: "Fix the bug\nplease".length, output_tokens: "Done: Fix the bug".length, inference_cost: 0, compute_cost: 0 },
      { type: "step_end", id: "execution-7", summary: "done" },
      { type: "result", outcome: "succeeded" }
    ])
  })

  it("describes the execution step as 'Scripted run' without a title", async () => {
    const { agent } = await runOnce({ prompt: "x" })
    expect(agent.messages()[1]).toEqual({ type: "step_start", id: "execution-1", description: "Scripted run" })
  })

  it("counts the characters of the prompt and follow-ups in, and of what it said out", async () => {
    const { agent } = await runOnce({ prompt: "@say héllo\nprose", followups: ["@say ok", "plain"] })
    const usage = agent.messages().find((m) => m.type === "usage")
    expect(agent.said()).toEqual(["héllo", "ok", "received: plain"])
    expect(usage).toMatchObject({
      input_tokens: "@say héllo\nprose".length + "@say ok".length + "plain".length,
      output_tokens: "héllo".length + "ok".length + "received: plain".length
    })
  })

  it("ignores stdin lines that are not JSON objects, and unknown types", async () => {
    const agent = memoryAgent()
    for (const garbage of ["", "not json", "[1,2]", "42", "null", '"start"', '{"type":"nope"}', "{broken"]) agent.stdin.push(garbage)
    agent.stdin.send(start({ prompt: "@say still here" }))
    agent.stdin.close()
    expect(await agent.exit).toBe(0)
    expect(agent.said()).toEqual(["still here"])
  })

  it("fails with agent_failed when stdin closes before the start message", async () => {
    const agent = memoryAgent()
    agent.stdin.push("garbage")
    agent.stdin.close()
    expect(await agent.exit).toBe(1)
    expect(agent.messages()).toEqual([
      { type: "result", outcome: "failed", error_code: "agent_failed", message: "stdin closed before the start message" }
    ])
  })

  it("takes lenient start messages (missing fields, null api)", async () => {
    const agent = memoryAgent()
    agent.stdin.push('{"type":"start","prompt":"@say hi"}')
    agent.stdin.close()
    expect(await agent.exit).toBe(0)
    expect(agent.said()).toEqual(["hi"])
  })
})

describe("runAgent: directives", () => {
  it("acts on the @ lines in order and ignores the others", async () => {
    const { agent, code } = await runOnce({ prompt: "Some prose\n@say one\nmore prose\n@say two" })
    expect(code).toBe(0)
    expect(agent.said()).toEqual(["one", "two"])
  })

  it("@tool: an action with a fresh id and its completed result", async () => {
    const { agent } = await runOnce({ prompt: '@tool bash {"cmd":"ls"}\n@tool noop' })
    expect(agent.messages().filter((m) => m.type === "action" || m.type === "action_result")).toEqual([
      { type: "action", id: "tool-1", category: "command", name: "bash", input: { cmd: "ls" } },
      { type: "action_result", action_id: "tool-1", state: "completed", output: { ok: true, input: { cmd: "ls" } } },
      { type: "action", id: "tool-2", category: "command", name: "noop", input: {} },
      { type: "action_result", action_id: "tool-2", state: "completed", output: { ok: true, input: {} } }
    ])
  })

  it("@tool with invalid JSON fails with agent_failed naming the problem, and stops", async () => {
    const { agent, code } = await runOnce({ prompt: "@tool bash {nope\n@say not reached" })
    expect(code).toBe(1)
    expect(agent.said()).toEqual([])
    const result = agent.messages().at(-1)
    expect(result).toMatchObject({ type: "result", outcome: "failed", error_code: "agent_failed" })
    expect(result?.message).toMatch(/^@tool bash: invalid JSON input/)
    expect(types(agent.messages()).slice(-3)).toEqual(["usage", "step_end", "result"])
  })

  it("@sleep waits", async () => {
    const began = Date.now()
    const { agent } = await runOnce({ prompt: "@sleep 50\n@say awake" })
    expect(agent.sleeps).toEqual([50])
    expect(Date.now() - began).toBeGreaterThanOrEqual(45)
    expect(agent.said()).toEqual(["awake"])
  })

  it("@read-skill with and without a bundled skill id", async () => {
    const { agent } = await runOnce({ prompt: "@read-skill a/SKILL.md\n@read-skill b/SKILL.md bundled-9" })
    expect(agent.messages().filter((m) => m.type === "read_skill")).toEqual([
      { type: "read_skill", skill_path: "a/SKILL.md" },
      { type: "read_skill", skill_path: "b/SKILL.md", bundled_skill_id: "bundled-9" }
    ])
    expect(agent.lines.find((l) => l.includes("a/SKILL.md"))).not.toContain("bundled_skill_id")
  })

  it("@artifact: a pull request and an external reference", async () => {
    const { agent } = await runOnce({
      prompt: "@artifact PULL_REQUEST fix-1 https://github.com/o/r/pull/1\n@artifact EXTERNAL_REFERENCE https://example.com/doc"
    })
    expect(agent.messages().filter((m) => m.type === "artifact")).toEqual([
      { type: "artifact", artifact_type: "PULL_REQUEST", data: { branch: "fix-1", url: "https://github.com/o/r/pull/1" } },
      { type: "artifact", artifact_type: "EXTERNAL_REFERENCE", data: { url: "https://example.com/doc" } }
    ])
  })

  it("@block: says it is blocked, stops acting, exits 0 without a result", async () => {
    const { agent, code } = await runOnce({ prompt: "@block need credentials\n@say not reached", followups: ["@say nor this"] })
    expect(code).toBe(0)
    expect(agent.said()).toEqual([])
    expect(agent.messages().slice(2)).toEqual([
      { type: "blocked", message: "need credentials" },
      expect.objectContaining({ type: "usage" }),
      { type: "step_end", id: "execution-1", summary: "done" }
    ])
  })

  it("@fail: a failed result with the code and message, exit 1", async () => {
    const { agent, code } = await runOnce({ prompt: "@say trying\n@fail tests_failed 3 tests failed\n@say not reached" })
    expect(code).toBe(1)
    expect(agent.said()).toEqual(["trying"])
    expect(agent.messages().at(-1)).toEqual({ type: "result", outcome: "failed", error_code: "tests_failed", message: "3 tests failed" })
  })

  it("@fail without a message leaves the message out", async () => {
    const { agent } = await runOnce({ prompt: "@fail oops" })
    expect(agent.messages().at(-1)).toEqual({ type: "result", outcome: "failed", error_code: "oops" })
  })

  it("@exit: exits at once with the code, no usage and no result", async () => {
    const { agent, code } = await runOnce({ prompt: "@say bye\n@exit 3\n@say not reached" })
    expect(code).toBe(3)
    expect(types(agent.messages())).toEqual(["session", "step_start", "message"])
  })

  it("@attachments: each name, and the content of JSON files", async () => {
    const { agent } = await runOnce(
      {
        prompt: "@attachments",
        attachments: [
          { name: "event-payload.json", path: "/in/event-payload.json", media_type: "application/json" },
          { name: "data", path: "/in/data", media_type: "application/json; charset=utf-8" },
          { name: "logo.png", path: "/in/logo.png", media_type: "image/png" },
          { name: "gone.json", path: "/in/gone.json", media_type: "application/json" }
        ]
      },
      { files: { "/in/event-payload.json": '{"action":"opened"}\n', "/in/data": "[1,2]", "/in/logo.png": "PNG" } }
    )
    expect(agent.said()).toEqual([
      'attachment: event-payload.json\n{"action":"opened"}',
      "attachment: data\n[1,2]",
      "attachment: logo.png",
      "attachment: gone.json (unreadable: ENOENT: no such file /in/gone.json)"
    ])
  })

  it("@attachments without any says so", async () => {
    const { agent } = await runOnce({ prompt: "@attachments" })
    expect(agent.said()).toEqual(["no attachments"])
  })

  it("@spawn: POSTs the prompt with the run token and says the child's run id", async () => {
    const { agent, code } = await runOnce(
      { prompt: "@spawn fix the docs", api: { base_url: "http://api.test/api/v1/", run_token: "tok-9" } },
      { fetch: async () => ({ status: 201, text: async () => '{"run_id":"child-1","state":"QUEUED"}' }) }
    )
    expect(code).toBe(0)
    expect(agent.fetches).toEqual([
      {
        url: "http://api.test/api/v1/agent/runs",
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer tok-9" },
        body: '{"prompt":"fix the docs"}'
      }
    ])
    expect(agent.said()).toEqual(["spawned: child-1"])
  })

  it("@spawn answered with an error fails with the status and body", async () => {
    const { agent, code } = await runOnce(
      { prompt: "@spawn x\n@say not reached" },
      { fetch: async () => ({ status: 403, text: async () => '{"error":"forbidden"}' }) }
    )
    expect(code).toBe(1)
    expect(agent.said()).toEqual([])
    expect(agent.messages().at(-1)).toEqual({
      type: "result",
      outcome: "failed",
      error_code: "agent_failed",
      message: '@spawn: POST http://127.0.0.1:1/agent/runs answered 403: {"error":"forbidden"}'
    })
  })

  it("@spawn that cannot connect, or without an api, fails with agent_failed", async () => {
    const unreachable = await runOnce({ prompt: "@spawn x" }, { fetch: async () => Promise.reject(new Error("ECONNREFUSED")) })
    expect(unreachable.code).toBe(1)
    expect(unreachable.agent.messages().at(-1)).toMatchObject({ error_code: "agent_failed", message: expect.stringContaining("ECONNREFUSED") })
    const noApi = await runOnce({ prompt: "@spawn x", api: null })
    expect(noApi.code).toBe(1)
    expect(noApi.agent.messages().at(-1)).toMatchObject({ error_code: "agent_failed", message: "@spawn: the start message has no api.base_url" })
  })

  it("@api: sends the request with the run token and says the status and answer, refused or not, and goes on", async () => {
    const answers = [
      { status: 403, text: async () => '{"error":"only team admins manage secrets"}' },
      { status: 200, text: async () => "x".repeat(3000) }
    ]
    const { agent, code } = await runOnce(
      {
        prompt: '@api PUT /agent/secrets/STOLEN {"value":"v"}\n@api GET /agent/me\n@say after',
        api: { base_url: "http://api.test/api/v1/", run_token: "tok-3" }
      },
      { fetch: async () => answers.shift()! }
    )
    expect(code).toBe(0)
    expect(agent.fetches).toEqual([
      {
        url: "http://api.test/api/v1/agent/secrets/STOLEN",
        method: "PUT",
        headers: { "content-type": "application/json", authorization: "Bearer tok-3" },
        body: '{"value":"v"}'
      },
      {
        url: "http://api.test/api/v1/agent/me",
        method: "GET",
        headers: { "content-type": "application/json", authorization: "Bearer tok-3" },
        body: undefined
      }
    ])
    expect(agent.said()).toEqual([
      'api: PUT /agent/secrets/STOLEN -> 403 {"error":"only team admins manage secrets"}',
      `api: GET /agent/me -> 200 ${"x".repeat(2000)}…`,
      "after"
    ])
  })

  it("unknown directives are said and the agent goes on", async () => {
    const { agent, code } = await runOnce({ prompt: "@whatever x\n@say after" })
    expect(code).toBe(0)
    expect(agent.said()).toEqual(["unknown directive: @whatever", "after"])
  })

  it("other invalid directives fail with agent_failed", async () => {
    const { agent, code } = await runOnce({ prompt: "@sleep later" })
    expect(code).toBe(1)
    expect(agent.messages().at(-1)).toMatchObject({ error_code: "agent_failed", message: expect.stringContaining("@sleep") })
  })
})

describe("runAgent: testing extensions", () => {
  it("@step and @end-step open and close nested steps; open ones close at the end", async () => {
    const { agent } = await runOnce({ prompt: "@step Build\n@step Compile\n@end-step compiled\n@step Link\n@end-step\n@end-step\n@end-step" })
    expect(agent.messages().filter((m) => m.type === "step_start" || m.type === "step_end" || m.type === "message")).toEqual([
      { type: "step_start", id: "execution-1", description: "Scripted run" },
      { type: "step_start", id: "step-1", description: "Build" },
      { type: "step_start", id: "step-2", description: "Compile" },
      { type: "step_end", id: "step-2", summary: "compiled" },
      { type: "step_start", id: "step-3", description: "Link" },
      { type: "step_end", id: "step-3", summary: "" },
      { type: "step_end", id: "step-1", summary: "" },
      { type: "message", role: "assistant", text: "no open step to end" },
      { type: "step_end", id: "execution-1", summary: "done" }
    ])
    const unclosed = await runOnce({ prompt: "@step Outer\n@step Inner" })
    expect(unclosed.agent.messages().filter((m) => m.type === "step_end").map((m) => m.id)).toEqual(["step-2", "step-1", "execution-1"])
  })

  it("@print writes a raw line, @big a huge message, @stderr to stderr", async () => {
    const { agent } = await runOnce({ prompt: "@print this is not JSON\n@big 100000\n@stderr warning: x" })
    expect(agent.lines[2]).toBe("this is not JSON")
    expect(agent.said()).toEqual(["x".repeat(100_000)])
    expect(agent.stderr).toEqual(["warning: x\n"])
  })
})

describe("runAgent: follow-ups", () => {
  it("handles the start message's follow-ups after the prompt: directives, or received: TEXT", async () => {
    const { agent } = await runOnce({ prompt: "@say first", followups: ["@say from a follow-up\n@tool t", "just text"] })
    expect(agent.said()).toEqual(["first", "from a follow-up", "received: just text"])
    expect(agent.messages().some((m) => m.type === "action" && m.name === "t")).toBe(true)
  })

  it("@await-followup takes the start message's follow-ups first", async () => {
    const { agent } = await runOnce({ prompt: "@await-followup\n@say between\n@await-followup", followups: ["one", "@say two"] })
    expect(agent.said()).toEqual(["received: one", "between", "two"])
  })

  it("@await-followup waits for a live follow-up", async () => {
    const agent = memoryAgent()
    agent.stdin.send(start({ prompt: "@say waiting\n@await-followup\n@say done" }))
    await agent.waitFor((m) => m.text === "waiting")
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(agent.said()).toEqual(["waiting"])
    agent.stdin.send({ type: "followup", message: "hello", mode: "normal" })
    expect(await agent.exit).toBe(0)
    expect(agent.said()).toEqual(["waiting", "received: hello", "done"])
  })

  it("queues follow-ups arriving while a directive runs and handles them in order", async () => {
    const agent = memoryAgent()
    agent.stdin.send(start({ prompt: "@say sleeping\n@sleep 100" }))
    await agent.waitFor((m) => m.text === "sleeping")
    agent.stdin.send({ type: "followup", message: "a", mode: "normal" })
    agent.stdin.send({ type: "followup", message: "@say b" })
    agent.stdin.send({ type: "followup", message: "c", mode: "normal" })
    expect(await agent.exit).toBe(0)
    expect(agent.said()).toEqual(["sleeping", "received: a", "b", "received: c"])
  })

  it("a follow-up can itself wait for the next one", async () => {
    const { agent } = await runOnce({ prompt: "@await-followup", followups: ["@say got one\n@await-followup", "second"] })
    expect(agent.said()).toEqual(["got one", "received: second"])
  })

  it("finishes normally when stdin closes while it waits for a follow-up", async () => {
    const agent = memoryAgent()
    agent.stdin.send(start({ prompt: "@await-followup\n@say after" }))
    await agent.waitFor((m) => m.type === "step_start")
    agent.stdin.close()
    expect(await agent.exit).toBe(0)
    expect(agent.said()).toEqual(["after"])
    expect(agent.messages().at(-1)).toEqual({ type: "result", outcome: "succeeded" })
  })

  it("a follow-up's @fail fails the run", async () => {
    const { agent, code } = await runOnce({ prompt: "@say ok", followups: ["@fail late_failure it broke", "not handled"] })
    expect(code).toBe(1)
    expect(agent.said()).toEqual(["ok"])
    expect(agent.messages().at(-1)).toEqual({ type: "result", outcome: "failed", error_code: "late_failure", message: "it broke" })
  })
})

describe("runAgent: continuations and debug mode", () => {
  const history = [
    { role: "user", content: [{ type: "text", text: "@say first run" }] },
    { role: "assistant", content: [{ type: "text", text: "first run" }, { type: "event", name: "x" }] }
  ]

  it("with history, does not re-run the prompt and handles the follow-ups", async () => {
    const { agent, code } = await runOnce({ prompt: "@say first run\n@fail x y", history, followups: ["@history", "thanks"] })
    expect(code).toBe(0)
    expect(agent.said()).toEqual(["history: 2 messages last: first run", "received: thanks"])
  })

  it("with history and no follow-up, says how much history it continued with", async () => {
    const { agent } = await runOnce({ prompt: "@say first run", history })
    expect(agent.said()).toEqual(["Continued with 2 messages of history"])
  })

  it("@history: reads lenient history entries, and says no last message when empty", async () => {
    const lenient = await runOnce({ prompt: "x", history: [{ role: "user", text: "plain form" }], followups: ["@history"] })
    expect(lenient.agent.said()).toEqual(["history: 1 messages last: plain form"])
    const empty = await runOnce({ prompt: "@history" })
    expect(empty.agent.said()).toEqual(["history: 0 messages"])
  })

  it("in debug mode, answers each follow-up with debug: TEXT and acts on no directive", async () => {
    const { agent, code } = await runOnce({ mode: "debug", prompt: "@fail never run", followups: ["@say not acted on", "why?"] })
    expect(code).toBe(0)
    expect(agent.said()).toEqual(["debug: @say not acted on", "debug: why?"])
  })

  it("in debug mode without a follow-up, says there is no message", async () => {
    const { agent } = await runOnce({ mode: "debug", prompt: "x" })
    expect(agent.said()).toEqual(["debug: no message"])
  })

  it("answers a live follow-up in debug mode with debug: TEXT", async () => {
    const agent = memoryAgent()
    agent.stdin.send(start({ prompt: "@await-followup" }))
    await agent.waitFor((m) => m.type === "step_start")
    agent.stdin.send({ type: "followup", message: "@say hi", mode: "debug" })
    expect(await agent.exit).toBe(0)
    expect(agent.said()).toEqual(["debug: @say hi"])
  })
  it("acts on a live follow-up of mode normal in a debug run", async () => {
    const agent = memoryAgent()
    // Sent before the start line, so it is queued (after the start message's follow-ups) when the run begins.
    agent.stdin.send({ type: "followup", message: "@say acted", mode: "normal" })
    agent.stdin.send(start({ mode: "debug", prompt: "x", followups: ["@say not acted"] }))
    agent.stdin.close()
    expect(await agent.exit).toBe(0)
    expect(agent.said()).toEqual(["debug: @say not acted", "acted"])
  })
})

describe("runAgent: cancel", () => {
  it("says cancelled and exits 0 at once, even during @sleep", async () => {
    const agent = memoryAgent()
    agent.stdin.send(start({ prompt: "@sleep 10000\n@say not reached" }))
    await agent.waitFor((m) => m.type === "step_start")
    const began = Date.now()
    agent.stdin.send({ type: "cancel" })
    expect(await agent.exit).toBe(0)
    expect(Date.now() - began).toBeLessThan(1000)
    expect(agent.messages().at(-1)).toEqual({ type: "status", message: "cancelled" })
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(types(agent.messages())).toEqual(["session", "step_start", "status"])
  })

  it("cancels while waiting for a follow-up", async () => {
    const agent = memoryAgent()
    agent.stdin.send(start({ prompt: "@await-followup" }))
    await agent.waitFor((m) => m.type === "step_start")
    agent.stdin.send({ type: "cancel" })
    expect(await agent.exit).toBe(0)
    expect(agent.messages().at(-1)).toEqual({ type: "status", message: "cancelled" })
  })

  it("cancels before the start message", async () => {
    const agent = memoryAgent()
    agent.stdin.send({ type: "cancel" })
    expect(await agent.exit).toBe(0)
    expect(agent.messages()).toEqual([{ type: "status", message: "cancelled" }])
  })
})
