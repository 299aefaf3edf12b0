/**
 * The note a stopping process leaves for the next about an agent it left running: reading an
 * agent's output in one go, or up to any byte, through the note, then on in another state, gives
 * the same conversation operations, artifacts and final state.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as AdoptionNote from "../src/domain/AdoptionNote.js"
import type { ExecutionBudget } from "../src/domain/Budget.js"
import {
  emptyLineBuffer,
  type ExecutionState,
  flushLines,
  type LineBuffer,
  newExecutionState,
  reduce,
  splitLines,
  takeArtifacts,
  takeOps,
  withBudget
} from "../src/domain/Harness.js"

const T = Date.UTC(2026, 11, 1, 12)
const json = (value: unknown) => JSON.stringify(value)
const usage = { input_tokens: 1, output_tokens: 2, inference_cost: 0.5, compute_cost: 0 }
const budget: ExecutionBudget = { max_cost_usd: 10, max_turns: 50, spent_before: 1 }

const OUTPUT = new TextEncoder().encode([
  json({ type: "session", session_id: "s-1", session_link: null }),
  json({ type: "message", role: "assistant", text: "begin" }),
  json({ type: "step_start", id: "outer", description: "Outer" }),
  json({ type: "action", id: "t1", category: "command", name: "ls", input: { dir: "." } }),
  json({ type: "step_start", id: "inner" }),
  json({ type: "usage", input_tokens: 10, output_tokens: 20, inference_cost: 0.5 }),
  json({ type: "action_result", action_id: "t1", state: "completed", output: "ok" }),
  json({ type: "artifact", artifact_type: "EXTERNAL_REFERENCE", url: "https://example.test/x" }),
  json({ type: "step_end", id: "outer", summary: "done" }),
  "plain text",
  json({ type: "message", role: "assistant", text: "a longer message that a split may cut in the middle ".repeat(3) }),
  json({ type: "usage", input_tokens: 30, output_tokens: 40, inference_cost: 0.75 }),
  json({ type: "result", outcome: "succeeded", message: "done" })
].join("\n") + "\n")

/** Reads `bytes` into the state and buffer given: the operations and artifacts it gave. */
const read = (state: ExecutionState, buffer: LineBuffer, bytes: Uint8Array, end: boolean) => {
  const split = splitLines(buffer, bytes)
  for (const line of split.lines) reduce(state, line, T)
  if (end) for (const line of flushLines(split.buffer)) reduce(state, line, T)
  return { buffer: split.buffer, ops: takeOps(state, Number.MAX_SAFE_INTEGER), artifacts: takeArtifacts(state) }
}

const fresh = () => withBudget(newExecutionState("exec-1"), { ...budget })

/** The state without what is compared apart (its budget object). */
const plain = ({ budget: _budget, ...state }: ExecutionState) => state

describe("AdoptionNote", () => {
  it("a reader that stops at any byte, leaves a note, and another that goes on from it read what one reader reads", () => {
    const whole = fresh()
    const once = read(whole, emptyLineBuffer, OUTPUT, true)
    fc.assert(fc.property(fc.integer({ min: 0, max: OUTPUT.length }), (at) => {
      const first = fresh()
      const before = read(first, emptyLineBuffer, OUTPUT.subarray(0, at), false)
      const note = AdoptionNote.write({
        offset: at,
        transcript_bytes: 1000 + at,
        buffer: before.buffer,
        state: first,
        usage_before: usage,
        report_written: "{}",
        conversation_seq: 3,
        started_at: T
      })
      const adopted = AdoptionNote.read(note)
      withBudget(adopted!.state, { ...budget })
      expect(adopted).toMatchObject({ offset: at, transcript_bytes: 1000 + at, usage_before: usage, report_written: "{}", conversation_seq: 3, started_at: T })
      const after = read(adopted!.state, adopted!.buffer, OUTPUT.subarray(adopted!.offset), true)
      expect([...before.ops, ...after.ops]).toEqual(once.ops)
      expect([...before.artifacts, ...after.artifacts]).toEqual(once.artifacts)
      expect(plain(adopted!.state)).toEqual(plain(whole))
      expect(adopted!.state.budget).toEqual(budget)
    }), { numRuns: 200 })
  })

  it("bytes that are no note of this version are none", () => {
    for (const bytes of ["", "{}", json({ version: 2 }), "not json"]) {
      expect(AdoptionNote.read(new TextEncoder().encode(bytes))).toBeUndefined()
    }
  })
})
