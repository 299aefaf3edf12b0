/**
 * The operations (ConversationLog.ts) that build given steps, for tests that store a
 * conversation: every step needs its `started_at`, every message its `timestamp`.
 */
import { DateTime } from "effect"
import type { ConversationStep } from "../src/domain/Conversation.js"
import type { ConversationOp } from "../src/domain/ConversationLog.js"

export const opsOf = (steps: ReadonlyArray<ConversationStep>, firstKey = 1): Array<ConversationOp> => {
  const ops: Array<ConversationOp> = []
  let key = firstKey - 1
  const visit = (step: ConversationStep, parent: number | null) => {
    const own = ++key
    const at = (t: DateTime.Utc | undefined) => (t === undefined ? 0 : DateTime.toEpochMillis(t))
    ops.push({
      op: "step",
      key: own,
      parent,
      id: step.id,
      ...(step.description === undefined ? {} : { description: step.description }),
      at: at(step.started_at)
    })
    for (const message of step.messages) {
      const [first, ...rest] = message.content
      if (first === undefined) continue
      ops.push({ op: "message", key: own, role: message.role, at: at(message.timestamp), block: first })
      for (const block of rest) ops.push({ op: "block", key: own, block })
    }
    for (const inner of step.steps) visit(inner, own)
    if (step.completed_at !== undefined || step.summary !== undefined) {
      ops.push({ op: "end", key: own, ...(step.summary === undefined ? {} : { summary: step.summary }), at: at(step.completed_at) })
    }
  }
  for (const step of steps) visit(step, null)
  return ops
}
