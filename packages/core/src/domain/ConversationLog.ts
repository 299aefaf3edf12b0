/**
 * The conversation of an execution as an append-only log: the reducer (Harness.ts) emits
 * operations as the agent's output arrives, the dispatcher appends them to storage in numbered
 * parts (only what is new, never the whole conversation again), and reading folds them back into
 * steps. Storing a part again under its number is a no-op, so a retried write cannot double it.
 *
 * Steps are named by a key, their number in the execution (1, 2, …); an operation adds to the
 * latest message of a step, or starts a message, a step, or ends one. `text` extends the latest
 * block of a step's latest message, an `output` event block, by one more line: consecutive
 * output lines of one message are one block (up to `MAX_OUTPUT_BLOCK_CHARS` each).
 */
import { DateTime, Schema } from "effect"
import { ContentBlock, type ConversationMessage, type ConversationStep, MessageRole } from "./Conversation.js"

/** The largest epoch millis a date can have (±8.64e15, the ECMAScript range). */
const MAX_MILLIS = 8.64e15

/** Epoch millis of a date that exists. */
const At = Schema.Number.pipe(Schema.between(0, MAX_MILLIS))

/**
 * How deeply steps nest at most when a log is folded: a deeper step is shown at the top level (so a
 * log from an untrusted worker cannot nest the conversation deep enough to overflow a reader).
 */
export const MAX_STEP_DEPTH = 32

/** One operation on an execution's conversation; `at` is epoch millis. */
export const ConversationOp = Schema.Union(
  Schema.Struct({
    op: Schema.Literal("step"),
    key: Schema.Int,
    parent: Schema.NullOr(Schema.Int),
    id: Schema.String,
    description: Schema.optional(Schema.String),
    at: At
  }),
  Schema.Struct({ op: Schema.Literal("end"), key: Schema.Int, summary: Schema.optional(Schema.String), at: At }),
  Schema.Struct({ op: Schema.Literal("message"), key: Schema.Int, role: MessageRole, at: At, block: ContentBlock }),
  Schema.Struct({ op: Schema.Literal("block"), key: Schema.Int, block: ContentBlock }),
  Schema.Struct({ op: Schema.Literal("text"), key: Schema.Int, text: Schema.String })
)
export type ConversationOp = typeof ConversationOp.Type

/** A numbered part of an execution's log (`seq` from 1). */
export interface ConversationPart {
  readonly seq: number
  readonly ops: ReadonlyArray<ConversationOp>
}

interface MutableMessage {
  role: ConversationMessage["role"]
  timestamp: DateTime.Utc
  content: Array<ContentBlock>
}

interface MutableStep {
  id: string
  description?: string
  summary?: string
  started_at: DateTime.Utc
  completed_at?: DateTime.Utc
  messages: Array<MutableMessage>
  steps: Array<MutableStep>
}

/** A date from stored millis; one out of range (stored before they were checked) is the epoch. */
const utc = (millis: number) => DateTime.unsafeMake(Number.isFinite(millis) && Math.abs(millis) <= MAX_MILLIS ? millis : 0)

/** The steps operations build, given as consecutive lists (a log's parts in order, or one list). */
const fold = (lists: Iterable<Iterable<ConversationOp>>): Array<ConversationStep> => {
  const top: Array<MutableStep> = []
  const byKey = new Map<number, MutableStep>()
  const depthOf = new Map<number, number>()
  // An agent printing fast gives many operations the same millisecond: they share one date
  // (immutable): making one was about a sixth of reading a large conversation back.
  let lastMillis = Number.NaN
  let lastDate = utc(0)
  const dateOf = (millis: number) => {
    if (millis !== lastMillis) {
      lastMillis = millis
      lastDate = utc(millis)
    }
    return lastDate
  }
  for (const ops of lists) for (const op of ops) {
    if (op.op === "step") {
      const step: MutableStep = {
        id: op.id,
        ...(op.description === undefined ? {} : { description: op.description }),
        started_at: dateOf(op.at),
        messages: [],
        steps: []
      }
      const parentDepth = op.parent === null ? undefined : depthOf.get(op.parent)
      const parent = op.parent === null || parentDepth === undefined || parentDepth >= MAX_STEP_DEPTH ? undefined : byKey.get(op.parent)
      if (parent === undefined) top.push(step)
      else parent.steps.push(step)
      byKey.set(op.key, step)
      depthOf.set(op.key, parent === undefined ? 1 : parentDepth! + 1)
      continue
    }
    const step = byKey.get(op.key)
    if (step === undefined) continue
    switch (op.op) {
      case "end":
        if (op.summary !== undefined) step.summary = op.summary
        step.completed_at = dateOf(op.at)
        break
      case "message":
        step.messages.push({ role: op.role, timestamp: dateOf(op.at), content: [op.block] })
        break
      case "block": {
        const last = step.messages[step.messages.length - 1]
        if (last !== undefined) last.content.push(op.block)
        break
      }
      case "text": {
        const content = step.messages[step.messages.length - 1]?.content
        const block = content?.[content.length - 1]
        if (content !== undefined && block?.type === "event" && block.name === "output") {
          const before = (block.data as { readonly text?: unknown }).text
          content[content.length - 1] = { ...block, data: { text: typeof before === "string" ? `${before}\n${op.text}` : op.text } }
        }
        break
      }
    }
  }
  return top as Array<ConversationStep>
}

/**
 * The steps an execution's operations build, in order. Operations that name a step not opened
 * (a log cut short) are skipped: a fold never throws.
 */
export const foldConversation = (ops: Iterable<ConversationOp>): Array<ConversationStep> => fold([ops])

/** The steps of an execution's parts, whatever order they come in (by `seq`), read part by part (not copied into one list). */
export const foldParts = (parts: ReadonlyArray<ConversationPart>): Array<ConversationStep> =>
  fold([...parts].sort((a, b) => a.seq - b.seq).map((p) => p.ops))
