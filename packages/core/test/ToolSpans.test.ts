import { describe, expect, it } from "@effect/vitest"
import { Effect, Tracer } from "effect"
import type { HarnessLine } from "../src/domain/Harness.js"
import * as ToolSpans from "../src/engine/ToolSpans.js"

interface Recorded {
  readonly name: string
  readonly parent: string | undefined
  readonly attributes: Map<string, unknown>
  ended: "success" | "failure" | undefined
}

/** A tracer keeping every span it makes. */
const recording = () => {
  const spans: Array<Recorded> = []
  let next = 0
  const tracer = Tracer.make({
    span: (name, parent, context, links, startTime, kind) => {
      const record: Recorded = {
        name,
        parent: parent._tag === "Some" ? parent.value.spanId : undefined,
        attributes: new Map(),
        ended: undefined
      }
      spans.push(record)
      const spanId = String(++next).padStart(16, "0")
      return {
        _tag: "Span", name, parent, context, links, kind, sampled: true, spanId, traceId: "1".repeat(32),
        status: { _tag: "Started", startTime }, attributes: record.attributes,
        end: (_end, exit) => (record.ended = exit._tag === "Success" ? "success" : "failure"),
        attribute: (key, value) => record.attributes.set(key, value),
        event: () => {},
        addLinks: () => {}
      }
    },
    context: (f) => f()
  })
  return { spans, tracer }
}

const action = (id: string, name: string): HarnessLine =>
  ({ _tag: "Event", event: { type: "action", id, category: "command", name, input: {} } }) as unknown as HarnessLine
const result = (id: string, state: "completed" | "failed"): HarnessLine =>
  ({ _tag: "Event", event: { type: "action_result", action_id: id, state, output: null } }) as unknown as HarnessLine

describe("ToolSpans", () => {
  it.effect("a span per tool call under the agent's, failed or completed; open ones end with the agent", () =>
    Effect.gen(function*() {
      const { spans, tracer } = recording()
      yield* Effect.gen(function*() {
        const tools = yield* ToolSpans.make
        tools.observe(action("a", "grep"), 1)
        tools.observe(action("b", "edit"), 2)
        tools.observe(result("a", "completed"), 3)
        tools.observe(result("b", "failed"), 4)
        tools.observe(action("c", "test"), 5)
        tools.endAll(6)
      }).pipe(Effect.withSpan("run.agent"), Effect.withTracer(tracer))
      const agent = spans.find((s) => s.name === "run.agent")!
      const tools = spans.filter((s) => s.name.startsWith("execute_tool "))
      expect(tools.map((s) => [s.name, s.ended, s.attributes.get("agent_runs.tool.state")])).toEqual([
        ["execute_tool grep", "success", "completed"],
        ["execute_tool edit", "failure", "failed"],
        ["execute_tool test", "success", "unfinished"]
      ])
      expect(tools.every((s) => s.attributes.get("gen_ai.operation.name") === "execute_tool")).toBe(true)
      expect(new Set(tools.map((s) => s.parent)).size).toBe(1)
      expect(agent.ended).toBe("success")
    }))

  it.effect("keeps at most MAX_OPEN calls open, and makes no spans without a span to hang them on", () =>
    Effect.gen(function*() {
      const { spans, tracer } = recording()
      yield* Effect.gen(function*() {
        const tools = yield* ToolSpans.make
        for (let i = 0; i < ToolSpans.MAX_OPEN + 50; i++) tools.observe(action(`t${i}`, "loop"), i)
      }).pipe(Effect.withSpan("run.agent"), Effect.withTracer(tracer))
      expect(spans.filter((s) => s.name === "execute_tool loop")).toHaveLength(ToolSpans.MAX_OPEN)
      const before = spans.length
      const orphan = yield* ToolSpans.make.pipe(Effect.withTracer(tracer))
      orphan.observe(action("x", "grep"), 1)
      expect(spans.length).toBe(before)
    }))
})
