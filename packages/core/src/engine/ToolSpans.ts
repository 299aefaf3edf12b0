/**
 * A span per tool call of an agent (docs/observability.md), in the GenAI semantic conventions:
 * `execute_tool {name}` (`gen_ai.operation.name` `execute_tool`, `gen_ai.tool.name`,
 * `gen_ai.tool.call.id`), a child of the agent's span, from the agent's `action` to its
 * `action_result` (an error when the tool failed). Calls still open when the agent ends end with
 * it. Bounded: at most `MAX_TOOL_SPANS` per execution, `MAX_OPEN` open at once.
 */
import { Context, Effect, Exit, Option } from "effect"
import type { Tracer } from "effect"
import type { HarnessLine } from "../domain/Harness.js"

export const MAX_TOOL_SPANS = 5_000
export const MAX_OPEN = 500

const nanos = (millis: number) => BigInt(millis) * 1_000_000n

/** What the agent's output pump tells the tracer. */
export interface ToolSpans {
  readonly observe: (line: HarnessLine, now: number) => void
  readonly endAll: (now: number) => void
}

const none: ToolSpans = { observe: () => {}, endAll: () => {} }

/** The tool spans under the current span (the agent's); none when there is no span. */
export const make: Effect.Effect<ToolSpans> = Effect.gen(function*() {
  const parent = yield* Effect.option(Effect.currentSpan)
  if (Option.isNone(parent) || !parent.value.sampled) return none
  const tracer = yield* Effect.tracer
  const open = new Map<string, Tracer.Span>()
  let made = 0
  const start = (id: string, name: string, now: number) => {
    if (made >= MAX_TOOL_SPANS || open.size >= MAX_OPEN || open.has(id)) return
    made += 1
    const span = tracer.span(`execute_tool ${name}`, parent, Context.empty(), [], nanos(now), "internal")
    span.attribute("gen_ai.operation.name", "execute_tool")
    span.attribute("gen_ai.tool.name", name)
    span.attribute("gen_ai.tool.call.id", id)
    open.set(id, span)
  }
  const end = (id: string, state: string, now: number) => {
    const span = open.get(id)
    if (span === undefined) return
    open.delete(id)
    span.attribute("agent_runs.tool.state", state)
    span.end(nanos(now), state === "failed" ? Exit.fail(`the tool call ${id} failed`) : Exit.void)
  }
  return {
    observe: (line, now) => {
      if (line._tag !== "Event") return
      const event = line.event
      if (event.type === "action") start(event.id, event.name, now)
      else if (event.type === "action_result") end(event.action_id, event.state, now)
    },
    endAll: (now) => {
      for (const id of [...open.keys()]) end(id, "unfinished", now)
    }
  }
})
