import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import * as fc from "fast-check"
import { ConversationStep } from "../src/domain/Conversation.js"
import { foldConversation } from "../src/domain/ConversationLog.js"
import {
  addUserMessage,
  emptyLineBuffer,
  endUserMessages,
  eventLines,
  type ExecutionState,
  flushLines,
  type HarnessEvent,
  type HarnessLine,
  historyOf,
  MAX_JSON_DEPTH,
  MAX_LINE_BYTES,
  nestsDeeperThan,
  newExecutionState,
  outcomeOf,
  parseLine,
  reduce,
  splitLines,
  takeArtifacts,
  takeOps
} from "../src/domain/Harness.js"

const encoder = new TextEncoder()
const T = Date.UTC(2026, 10, 23, 12)

/** Every line of `bytes` fed in the given chunks. */
const linesOf = (chunks: ReadonlyArray<Uint8Array>): Array<HarnessLine> => {
  let buffer = emptyLineBuffer
  const lines: Array<HarnessLine> = []
  for (const chunk of chunks) {
    const split = splitLines(buffer, chunk)
    buffer = split.buffer
    lines.push(...split.lines)
  }
  return [...lines, ...flushLines(buffer)]
}

/** Cuts `bytes` at the given positions. */
const cut = (bytes: Uint8Array, at: ReadonlyArray<number>): Array<Uint8Array> => {
  const points = [...new Set(at.map((p) => p % (bytes.length + 1)))].sort((a, b) => a - b)
  const chunks: Array<Uint8Array> = []
  let from = 0
  for (const p of points) {
    chunks.push(bytes.subarray(from, p))
    from = p
  }
  chunks.push(bytes.subarray(from))
  return chunks
}

const run = (...lines: Array<string>) => {
  const state = newExecutionState("exec-1")
  lines.forEach((line, i) => {
    const parsed = parseLine(line)
    if (parsed !== undefined) reduce(state, parsed, T + i)
  })
  return state
}

const json = (value: unknown) => JSON.stringify(value)
/** The conversation of every operation not yet taken (all of them, in these tests). */
const conversationOf = (state: ExecutionState) => foldConversation(state.pending)
const isStep = Schema.is(ConversationStep)

describe("splitLines", () => {
  it.prop(
    "gives the same lines however the bytes are chunked",
    [fc.array(fc.oneof(fc.string(), fc.constant(json({ type: "message", role: "assistant", text: "héllo ✓" })))), fc.array(fc.nat())],
    ([lines, at]) => {
      const bytes = encoder.encode(lines.join("\n"))
      expect(linesOf(cut(bytes, at))).toEqual(linesOf([bytes]))
    }
  )

  it("splits on newlines, strips CR, ignores blank lines and keeps the last unterminated line", () => {
    const lines = linesOf([encoder.encode("one\r\n\n  \n{\"type\":\"status\",\"message\":\"hi\"}\ntwo")])
    expect(lines).toEqual([
      { _tag: "Output", text: "one" },
      { _tag: "Event", event: { type: "status", message: "hi" } },
      { _tag: "Output", text: "two" }
    ])
  })

  it("keeps at most MAX_LINE_BYTES of one line and reports the rest as truncated", () => {
    const chunk = new Uint8Array(4 * 1024 * 1024).fill(0x61)
    let buffer = emptyLineBuffer
    for (let i = 0; i < 5; i++) buffer = splitLines(buffer, chunk).buffer
    expect(buffer.size).toBe(MAX_LINE_BYTES)
    const { buffer: after, lines } = splitLines(buffer, encoder.encode("b\nnext\n"))
    expect(after.size).toBe(0)
    expect(lines).toHaveLength(2)
    expect(lines[0]).toMatchObject({ _tag: "Truncated", bytes: 5 * 4 * 1024 * 1024 + 1 })
    expect((lines[0] as { head: string }).head).toHaveLength(1_000)
    expect(lines[1]).toEqual({ _tag: "Output", text: "next" })
  })
})

describe("parseLine", () => {
  it.prop("never throws, on any text", [fc.string({ unit: "binary" })], ([line]) => {
    parseLine(line)
  })

  it("tells events, other JSON and text apart", () => {
    expect(parseLine(json({ type: "usage", input_tokens: 3, output_tokens: 4 }))).toEqual({
      _tag: "Event",
      event: { type: "usage", input_tokens: 3, output_tokens: 4, inference_cost: 0, compute_cost: 0 }
    })
    expect(parseLine(json({ type: "usage", input_tokens: -1, output_tokens: 4 }))?._tag).toBe("Unrecognized")
    expect(parseLine(json({ type: "nope" }))?._tag).toBe("Unrecognized")
    expect(parseLine("42")).toEqual({ _tag: "Output", text: "42" })
    expect(parseLine("not json")).toEqual({ _tag: "Output", text: "not json" })
    expect(parseLine("   ")).toBeUndefined()
  })

  it("refuses JSON nested deeper than MAX_JSON_DEPTH before parsing it, and the run fails", () => {
    const deep = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`
    expect(parseLine(deep(MAX_JSON_DEPTH))?._tag).toBe("Unrecognized")
    expect(parseLine(deep(MAX_JSON_DEPTH + 1))?._tag).toBe("TooDeep")
    expect(parseLine(json({ type: "action", id: "a", category: "command", name: "x", input: JSON.parse(deep(3000)) }))?._tag).toBe("TooDeep")
    // Brackets inside strings do not count.
    expect(nestsDeeperThan(json({ text: "[".repeat(500), quote: "\\\"{{{" }), 2)).toBe(false)
    const state = run(json({ type: "result", outcome: "succeeded" }), deep(3000), json({ type: "result", outcome: "succeeded" }))
    expect(outcomeOf(state, 0)).toEqual({ _tag: "Failed", error_code: "agent_failed", message: expect.stringContaining("nested deeper") })
    expect(conversationOf(state)[0]!.messages[0]!.content[0]).toMatchObject({ type: "event", name: "output_rejected" })
  })

  it.prop("finds the nesting depth of any JSON value", [fc.jsonValue({ depthSize: "large" })], ([value]) => {
    const depthOf = (v: unknown): number =>
      typeof v === "object" && v !== null ? 1 + Math.max(0, ...Object.values(v).map(depthOf)) : 0
    const text = JSON.stringify(value)
    const depth = depthOf(value)
    expect(nestsDeeperThan(text, depth)).toBe(false)
    if (depth > 0) expect(nestsDeeperThan(text, depth - 1)).toBe(true)
  })
})

describe("reduce", () => {
  it.prop(
    "always yields a valid conversation, whatever the agent prints",
    [
      fc.array(
        fc.oneof(
          fc.string(),
          fc.record({
            type: fc.constantFrom("message", "action", "action_result", "step_start", "step_end", "read_skill", "artifact", "result", "blocked"),
            id: fc.constantFrom("a", "b"),
            action_id: fc.constantFrom("a", "b", "c"),
            role: fc.constantFrom("assistant", "user", "tool"),
            text: fc.string(),
            category: fc.constantFrom("command", "files"),
            name: fc.string(),
            state: fc.constantFrom("completed", "failed"),
            skill_path: fc.string(),
            artifact_type: fc.constantFrom("PULL_REQUEST", "PLAN"),
            data: fc.record({ branch: fc.string(), url: fc.string() }),
            outcome: fc.constantFrom("succeeded", "failed")
          }, { requiredKeys: ["type"] }).map(json)
        ),
        { maxLength: 30 }
      )
    ],
    ([lines]) => {
      const steps = conversationOf(run(...lines))
      for (const step of steps) expect(isStep(step)).toBe(true)
    }
  )

  it("builds steps, nested steps, messages and blocks", () => {
    const state = run(
      json({ type: "session", session_id: "s-1", session_link: "https://example.test/s-1" }),
      json({ type: "message", role: "user", text: "hi" }),
      json({ type: "step_start", id: "outer", description: "Outer" }),
      json({ type: "message", role: "assistant", text: "working" }),
      json({ type: "action", id: "t1", category: "command", name: "ls", input: { dir: "." } }),
      json({ type: "step_start", id: "inner" }),
      json({ type: "action_result", action_id: "t1", state: "completed", output: "ok" }),
      json({ type: "read_skill", skill_path: "skills/x/SKILL.md" }),
      json({ type: "read_skill", skill_path: "b", bundled_skill_id: "bundled-1" }),
      json({ type: "step_end", id: "outer", summary: "done" }),
      "plain text",
      json({ type: "usage", input_tokens: 10, output_tokens: 20, inference_cost: 0.5 }),
      json({ type: "status", message: "thinking" })
    )
    const steps = conversationOf(state)
    expect(steps.map((s) => s.id)).toEqual(["execution-exec-1", "outer", "execution-exec-1-2"])
    expect(steps[0]!.messages).toMatchObject([{ role: "user", content: [{ type: "text", text: "hi" }] }])
    const outer = steps[1]!
    expect(outer).toMatchObject({ description: "Outer", summary: "done" })
    expect(outer.completed_at).toBeDefined()
    expect(outer.messages).toMatchObject([
      { role: "assistant", content: [{ type: "text", text: "working" }, { type: "action", id: "t1", name: "ls", input: { dir: "." } }] }
    ])
    const inner = outer.steps[0]!
    expect(inner.id).toBe("inner")
    expect(inner.completed_at).toBeDefined()
    expect(inner.messages).toMatchObject([
      { role: "tool", content: [{ type: "action_result", action_id: "t1", category: "command", name: "ls", state: "completed", output: "ok" }] },
      {
        role: "assistant",
        content: [
          { type: "action", category: "skill", name: "read_skill", input: { skill_path: "skills/x/SKILL.md" } },
          { type: "action", category: "skill", name: "read_skill", input: { skill_path: "b", bundled_skill_id: "bundled-1" } }
        ]
      }
    ])
    expect(Object.keys((inner.messages[1]!.content[0] as { input: object }).input)).toEqual(["skill_path"])
    expect(steps[2]!.messages).toMatchObject([{ content: [{ type: "event", name: "output", data: { text: "plain text" } }] }])
    expect(state.session).toEqual({ session_id: "s-1", session_link: "https://example.test/s-1" })
    expect(state.usage).toEqual({ input_tokens: 10, output_tokens: 20, inference_cost: 0.5, compute_cost: 0 })
    expect(state.status).toBe("thinking")
  })

  it("keeps valid artifacts and shows invalid ones as unrecognized", () => {
    const state = run(
      json({ type: "artifact", artifact_type: "PULL_REQUEST", data: { branch: "fix", url: "https://example.test/pr/1" } }),
      json({ type: "artifact", artifact_type: "PULL_REQUEST", data: { branch: 3 } })
    )
    expect(takeArtifacts(state)).toMatchObject([{ artifact_type: "PULL_REQUEST", data: { branch: "fix" } }])
    expect(takeArtifacts(state)).toEqual([])
    expect(conversationOf(state)[0]!.messages[0]!.content[0]).toMatchObject({ type: "event", name: "unrecognized" })
  })
})

describe("outcomeOf", () => {
  it("follows the agent's result, then its exit code", () => {
    expect(outcomeOf(run(), 0)).toEqual({ _tag: "Succeeded" })
    expect(outcomeOf(run(), 3)).toEqual({ _tag: "Failed", error_code: "agent_failed", message: "the agent exited with code 3" })
    expect(outcomeOf(run(json({ type: "result", outcome: "failed", error_code: "rate_limited", message: "slow down" })), 0))
      .toEqual({ _tag: "Failed", error_code: "rate_limited", message: "slow down" })
    expect(outcomeOf(run(json({ type: "result", outcome: "failed", error_code: "made_up" })), 1))
      .toEqual({ _tag: "Failed", error_code: "agent_failed", message: "the agent reported a failure" })
    expect(outcomeOf(run(json({ type: "blocked", message: "need input" })), 0)).toEqual({ _tag: "Blocked", message: "need input" })
    expect(outcomeOf(run(json({ type: "result", outcome: "succeeded" })), 2)._tag).toBe("Failed")
  })
})

describe("the conversation log", () => {
  it("joins consecutive text lines of one message into one output block, up to 64 KiB", () => {
    const long = "y".repeat(40 * 1024)
    const state = run("one", "two", json({ type: "message", role: "assistant", text: "said" }), "three", long, long, "four")
    expect(state.pending.filter((op) => op.op === "text")).toHaveLength(3)
    const [step] = conversationOf(state)
    expect(step!.messages.map((m) => m.content.map((b) => (b.type === "event" ? (b.data as { text: string }).text.length : b.type)))).toEqual([
      [7],
      ["text", 5 + 1 + long.length, long.length + 1 + 4]
    ])
    expect(step!.messages[0]!.content[0]).toEqual({ type: "event", name: "output", data: { text: "one\ntwo" } })
  })

  it.prop(
    "taken in parts of any size, the operations fold into the same conversation",
    [fc.array(fc.oneof(fc.constantFrom("x", "y z"), fc.constantFrom(
      json({ type: "message", role: "user", text: "hi" }),
      json({ type: "step_start", id: "a" }),
      json({ type: "step_start", id: "b", description: "B" }),
      json({ type: "step_end", id: "a", summary: "A" }),
      json({ type: "step_end", id: "b" }),
      json({ type: "action", id: "t", category: "command", name: "ls" }),
      json({ type: "action_result", action_id: "t", state: "completed", output: "ok" })
    )), { maxLength: 40 }), fc.integer({ min: 1, max: 400 })],
    ([lines, partChars]) => {
      const whole = conversationOf(run(...lines))
      const state = run(...lines)
      const parts: Array<ReturnType<typeof takeOps>> = []
      while (state.pending.length > 0) parts.push(takeOps(state, partChars))
      expect(foldConversation(parts.flat())).toEqual(whole)
      for (const part of parts) expect(part.length).toBeGreaterThan(0)
    }
  )
})

describe("historyOf", () => {
  it("flattens the messages of steps and nested steps in order", () => {
    const state = run(
      json({ type: "message", role: "user", text: "one" }),
      json({ type: "step_start", id: "s" }),
      json({ type: "message", role: "assistant", text: "two" }),
      json({ type: "step_start", id: "t" }),
      json({ type: "message", role: "assistant", text: "three" })
    )
    expect(historyOf(conversationOf(state)).map((m) => (m.content[0] as { text: string }).text)).toEqual(["one", "two", "three"])
  })
})

describe("eventLines: an agent CLI's decoder over untrusted output", () => {
  it("refuses a line nested too deep before the decoder sees it, survives a decoder that throws, and drops or clamps invalid events", () => {
    let seen = 0
    const parse = eventLines((line) => {
      seen++
      if (line === "boom") throw new RangeError("Maximum call stack size exceeded")
      if (line === "bad") return [{ type: "action", id: 5, category: "nope", name: "x" } as unknown as HarnessEvent]
      return [{ type: "usage", input_tokens: 1e300, output_tokens: 3, inference_cost: Infinity, compute_cost: 0 }]
    })
    const deep = `${"[".repeat(5_000)}${"]".repeat(5_000)}`
    expect(parse(deep)).toMatchObject({ _tag: "TooDeep" })
    expect(seen).toBe(0)
    expect(parse("boom")).toBeUndefined()
    expect(parse("bad")).toEqual([])
    expect(parse("usage")).toEqual([{
      _tag: "Event",
      event: { type: "usage", input_tokens: Number.MAX_SAFE_INTEGER, output_tokens: 3, inference_cost: 0, compute_cost: 0 }
    }])
  })
})

describe("addUserMessage", () => {
  const feed = (state: ExecutionState, line: string, at: number) => reduce(state, parseLine(line)!, at)
  const said = (state: ExecutionState) =>
    conversationOf(state).map((step) => ({
      id: step.id,
      messages: step.messages.map((m) => [m.role, ...m.content.map((b) => (b.type === "text" ? b.text : b.type))])
    }))

  it("the prompt waits for the agent's first step and opens it; a follow-up goes to the step the agent is in", () => {
    const state = newExecutionState("exec-1")
    addUserMessage(state, "the prompt", T)
    addUserMessage(state, "   ", T)
    expect(state.pending).toEqual([])
    feed(state, json({ type: "step_start", id: "s1" }), T + 1)
    feed(state, "plain output", T + 2)
    addUserMessage(state, "a follow-up", T + 3)
    feed(state, "more output", T + 4)
    feed(state, json({ type: "message", role: "assistant", text: "answer" }), T + 5)
    expect(said(state)).toEqual([{
      id: "s1",
      messages: [["user", "the prompt"], ["assistant", "event"], ["user", "a follow-up"], ["assistant", "event"], ["assistant", "answer"]]
    }])
    const [prompt] = conversationOf(state)[0]!.messages
    expect(prompt!.timestamp?.epochMillis).toBe(T)
  })

  it("without steps: the implicit step; between steps: the next; never answered: a step of its own at the end", () => {
    const state = newExecutionState("exec-1")
    addUserMessage(state, "the prompt", T)
    feed(state, json({ type: "message", role: "assistant", text: "hi" }), T + 1)
    feed(state, json({ type: "step_start", id: "s1" }), T + 2)
    feed(state, json({ type: "step_end", id: "s1" }), T + 3)
    addUserMessage(state, "between", T + 4)
    feed(state, json({ type: "step_start", id: "s2" }), T + 5)
    feed(state, json({ type: "step_end", id: "s2" }), T + 6)
    addUserMessage(state, "last words", T + 7)
    endUserMessages(state, T + 8)
    expect(said(state)).toEqual([
      { id: "execution-exec-1", messages: [["user", "the prompt"], ["assistant", "hi"]] },
      { id: "s1", messages: [] },
      { id: "s2", messages: [["user", "between"]] },
      { id: "execution-exec-1-2", messages: [["user", "last words"]] }
    ])
  })
})
