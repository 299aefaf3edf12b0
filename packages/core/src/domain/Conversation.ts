/**
 * The normalized conversation of a run (docs/reference/api.md, `GET /agent/runs/{runId}/conversation`):
 * steps (which nest), messages, and content blocks.
 *
 * A block is an object discriminated by `type`: `{type: "text", text}`,
 * `{type: "action", id, category, name, input}`,
 * `{type: "action_result", action_id, category, name, state, output}` or
 * `{type: "event", name, data}`. A skill load is an `action` with category `skill`, name
 * `read_skill` and input `{skill_path, bundled_skill_id?}` (see `readSkillAction`).
 * Optional keys (`description`, `summary`, `started_at`, `completed_at`, `message_ids`,
 * `timestamp`) are omitted when unknown.
 */
import { Arbitrary, Schema } from "effect"
import type { FastCheck } from "effect"
import { JsonValue, Timestamp } from "./Common.js"
import { ConversationId, RunId } from "./Ids.js"

/** What kind of thing an action does. */
export const ActionCategory = Schema.Literal(
  "command",
  "files",
  "search",
  "integration",
  "documents",
  "computer",
  "review",
  "skill"
)
export type ActionCategory = typeof ActionCategory.Type

/** The state of an action's result. */
export const ActionResultState = Schema.Literal("running", "completed", "failed", "denied")
export type ActionResultState = typeof ActionResultState.Type

/** Who said a message. */
export const MessageRole = Schema.Literal("user", "assistant", "tool", "system")
export type MessageRole = typeof MessageRole.Type

export const TextBlock = Schema.Struct({
  type: Schema.Literal("text"),
  text: Schema.String
}).annotations({ identifier: "TextBlock" })
export type TextBlock = typeof TextBlock.Type

export const ActionBlock = Schema.Struct({
  type: Schema.Literal("action"),
  id: Schema.String,
  category: ActionCategory,
  name: Schema.String,
  input: JsonValue
}).annotations({ identifier: "ActionBlock" })
export type ActionBlock = typeof ActionBlock.Type

export const ActionResultBlock = Schema.Struct({
  type: Schema.Literal("action_result"),
  action_id: Schema.String,
  category: ActionCategory,
  name: Schema.String,
  state: ActionResultState,
  output: JsonValue
}).annotations({ identifier: "ActionResultBlock" })
export type ActionResultBlock = typeof ActionResultBlock.Type

/** Anything else the agent emitted; a harness line that is not JSON is an event named `output`. */
export const EventBlock = Schema.Struct({
  type: Schema.Literal("event"),
  name: Schema.String,
  data: JsonValue
}).annotations({ identifier: "EventBlock" })
export type EventBlock = typeof EventBlock.Type

/** A content block, discriminated by `type`. */
export const ContentBlock = Schema.Union(TextBlock, ActionBlock, ActionResultBlock, EventBlock).annotations({
  identifier: "ContentBlock"
})
export type ContentBlock = typeof ContentBlock.Type

export const ConversationMessage = Schema.Struct({
  message_ids: Schema.optional(Schema.Array(Schema.String)),
  role: MessageRole,
  timestamp: Schema.optional(Timestamp),
  content: Schema.Array(ContentBlock)
}).annotations({ identifier: "ConversationMessage" })
export type ConversationMessage = typeof ConversationMessage.Type

/** A step of the conversation; steps contain messages and nested steps. */
export interface ConversationStep {
  readonly id: string
  readonly description?: string | undefined
  readonly summary?: string | undefined
  readonly started_at?: Timestamp | undefined
  readonly completed_at?: Timestamp | undefined
  readonly messages: ReadonlyArray<ConversationMessage>
  readonly steps: ReadonlyArray<ConversationStep>
}

/** The wire form of a `ConversationStep`. */
export interface ConversationStepEncoded {
  readonly id: string
  readonly description?: string | undefined
  readonly summary?: string | undefined
  readonly started_at?: string | undefined
  readonly completed_at?: string | undefined
  readonly messages: ReadonlyArray<typeof ConversationMessage.Encoded>
  readonly steps: ReadonlyArray<ConversationStepEncoded>
}

const stepFields = {
  id: Schema.String,
  description: Schema.optional(Schema.String),
  summary: Schema.optional(Schema.String),
  started_at: Schema.optional(Timestamp),
  completed_at: Schema.optional(Timestamp),
  messages: Schema.Array(ConversationMessage)
}

/** Generates steps nested at most three deep, with few children, so property tests stay fast. */
const stepArbitrary = () => (fc: typeof FastCheck): FastCheck.Arbitrary<ConversationStep> => {
  const { messages: _, ...leafFields } = stepFields
  const leaf = Arbitrary.makeLazy(Schema.Struct(leafFields))(fc)
  const messages = fc.array(Arbitrary.makeLazy(ConversationMessage)(fc), { maxLength: 2 })
  const nest = (depth: number): FastCheck.Arbitrary<ConversationStep> =>
    fc
      .tuple(leaf, messages, depth === 0 ? fc.constant([]) : fc.array(nest(depth - 1), { maxLength: 2 }))
      .map(([step, messages, steps]) => ({ ...step, messages, steps }))
  return nest(2)
}

export const ConversationStep: Schema.Schema<ConversationStep, ConversationStepEncoded> = Schema.Struct({
  ...stepFields,
  steps: Schema.Array(
    Schema.suspend((): Schema.Schema<ConversationStep, ConversationStepEncoded> => ConversationStep)
  )
}).annotations({ identifier: "ConversationStep", arbitrary: stepArbitrary })

/** ConversationResponse: a conversation and the runs (executions) that contributed to it. */
export class ConversationResponse extends Schema.Class<ConversationResponse>("ConversationResponse")({
  conversation_id: ConversationId,
  run_ids: Schema.Array(RunId),
  steps: Schema.Array(ConversationStep)
}) {}

/** The name of the action that loads a skill. */
export const READ_SKILL_ACTION = "read_skill"

/** The `read_skill` action: `bundled_skill_id` appears in the input only when given. */
export const readSkillAction = (options: {
  readonly id: string
  readonly skillPath: string
  readonly bundledSkillId?: string | undefined
}): ActionBlock => ({
  type: "action",
  id: options.id,
  category: "skill",
  name: READ_SKILL_ACTION,
  input:
    options.bundledSkillId === undefined
      ? { skill_path: options.skillPath }
      : { skill_path: options.skillPath, bundled_skill_id: options.bundledSkillId }
})
