/** A conversation log from an untrusted writer (a self-hosted worker) cannot break its readers. */
import { describe, expect, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import type { ConversationStep } from "../src/domain/Conversation.js"
import { ConversationOp, foldConversation, MAX_STEP_DEPTH } from "../src/domain/ConversationLog.js"
import { historyOf } from "../src/domain/Harness.js"

const depth = (steps: ReadonlyArray<ConversationStep>): number =>
  steps.reduce((most, s) => Math.max(most, 1 + depth(s.steps)), 0)

describe("ConversationLog from an untrusted writer", () => {
  it("refuses a date out of range, and folds one stored before as the epoch instead of throwing", () => {
    const decode = Schema.decodeUnknownEither(ConversationOp)
    expect(Either.isLeft(decode({ op: "step", key: 1, parent: null, id: "x", at: 1e16 }))).toBe(true)
    expect(Either.isLeft(decode({ op: "end", key: 1, at: Number.NaN }))).toBe(true)
    expect(Either.isRight(decode({ op: "step", key: 1, parent: null, id: "x", at: Date.UTC(2026, 10, 25) }))).toBe(true)
    const steps = foldConversation([{ op: "step", key: 1, parent: null, id: "x", at: 1e16 }])
    expect(steps[0]?.started_at?.epochMillis).toBe(0)
  })

  it(`nests steps ${MAX_STEP_DEPTH} deep at most: a chain of 20,000 folds, reads back and makes a history without overflowing`, () => {
    const ops: Array<ConversationOp> = []
    for (let key = 1; key <= 20_000; key++) {
      ops.push({ op: "step", key, parent: key === 1 ? null : key - 1, id: `s${key}`, at: key })
      ops.push({ op: "message", key, role: "assistant", at: key, block: { type: "text", text: `t${key}` } })
    }
    const steps = foldConversation(ops)
    expect(depth(steps)).toBeLessThanOrEqual(MAX_STEP_DEPTH)
    expect(historyOf(steps)).toHaveLength(20_000)
    expect(JSON.stringify(steps).length).toBeGreaterThan(0)
  })
})
