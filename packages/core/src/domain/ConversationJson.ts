/**
 * The JSON text of a `ConversationResponse` (Conversation.ts), written piece by piece with plain
 * functions instead of the whole response through Schema: the conversation endpoints stream it
 * (docs/reference/api.md) as its steps are read, without holding an encoded copy of the
 * conversation. (An ended execution's text is held whole: the first read copies it to keep it,
 * later reads write it as kept; services/ConversationText.ts.)
 *
 * The text is exactly `JSON.stringify` of the schema's encoding (the body these endpoints sent
 * before they streamed, which the published SDK reads): keys in the schema's order, optional keys
 * omitted when absent, timestamps as `DateTime.formatIso` writes them (the `Timestamp` schema's
 * encoding), JSON values (`input`, `output`, `data`) as `JSON.stringify` writes them. Only the
 * keys the schemas declare are written (as the encoding drops any other). The property tests in
 * packages/core/test/ConversationJson.test.ts check it against the schema's encodings.
 */
import { sha256 } from "@noble/hashes/sha2.js"
import { DateTime, Encoding, JSONSchema } from "effect"
import { type ContentBlock, type ConversationMessage, ConversationStep } from "./Conversation.js"
import { MAX_STEP_DEPTH } from "./ConversationLog.js"

/** About how many characters `stepsJson` puts in one piece (one write to the response). */
export const CHUNK_CHARS = 64 * 1024

/**
 * The characters `JSON.stringify` escapes in a string, and every surrogate, paired or not: a quote,
 * a backslash, or a code unit outside U+0020–U+D7FF and U+E000–U+FFFF (a control character or a
 * surrogate).
 */
const ESCAPED = /["\\]|[^\u0020-\ud7ff\ue000-\uffff]/

/**
 * A string's JSON: `JSON.stringify`'s, with a quicker path for a string it would only quote (no
 * quote, backslash, control character or surrogate), the usual text of a message; about 2.5×
 * quicker on the lines of a large conversation.
 */
const string = (s: string): string => (ESCAPED.test(s) ? JSON.stringify(s) : `"${s}"`)

/** A JSON value; `undefined` (which a JSON value never is) as `null`, so the text stays JSON. */
const json = (value: unknown): string => JSON.stringify(value) ?? "null"

/** One content block, its keys in its schema's order. */
const blockJson = (block: ContentBlock): string => {
  switch (block.type) {
    case "text":
      return `{"type":"text","text":${string(block.text)}}`
    case "action":
      return `{"type":"action","id":${string(block.id)},"category":${string(block.category)},"name":${string(block.name)},` +
        `"input":${json(block.input)}}`
    case "action_result":
      return `{"type":"action_result","action_id":${string(block.action_id)},"category":${string(block.category)},` +
        `"name":${string(block.name)},"state":${string(block.state)},"output":${json(block.output)}}`
    case "event":
      return `{"type":"event","name":${string(block.name)},"data":${json(block.data)}}`
  }
}

/**
 * Writes steps' JSON into `text`, handing it out each time it reaches `CHUNK_CHARS`.
 *
 * Timestamps: formatting dates (`DateTime.formatIso`) was about half of the writing of a large
 * conversation, whose messages mostly come in the same second as the one before. The writer keeps
 * the last one it formatted: within the same second only the milliseconds differ (the text always
 * ends in `.mmmZ`), so it writes the same text up to them, and the milliseconds.
 */
class StepsWriter {
  text = ""
  /** The second (epoch millis / 1000, floored) of the last timestamp formatted, and its text up to the milliseconds. */
  private lastSecond = Number.NaN
  private secondText = ""

  private timestamp(t: DateTime.Utc): string {
    const millis = t.epochMillis
    const second = Math.floor(millis / 1000)
    if (second !== this.lastSecond) {
      this.lastSecond = second
      const iso = DateTime.formatIso(t)
      this.secondText = `"${iso.slice(0, -4)}`
      return `"${iso}"`
    }
    return `${this.secondText}${String(millis - second * 1000).padStart(3, "0")}Z"`
  }

  /** One message: `message_ids`, `role`, `timestamp`, `content`, in schema order, optional ones when present. */
  private message(message: ConversationMessage): string {
    let text = message.message_ids === undefined ? "{" : `{"message_ids":${json(message.message_ids)},`
    text += `"role":${string(message.role)}`
    if (message.timestamp !== undefined) text += `,"timestamp":${this.timestamp(message.timestamp)}`
    text += `,"content":[`
    for (let i = 0; i < message.content.length; i++) text += (i === 0 ? "" : ",") + blockJson(message.content[i]!)
    return `${text}]}`
  }

  /** A step: `id`, the optional keys that are present, `messages`, then its nested `steps`. */
  *step(step: ConversationStep): Generator<string> {
    this.text += `{"id":${string(step.id)}`
    if (step.description !== undefined) this.text += `,"description":${string(step.description)}`
    if (step.summary !== undefined) this.text += `,"summary":${string(step.summary)}`
    if (step.started_at !== undefined) this.text += `,"started_at":${this.timestamp(step.started_at)}`
    if (step.completed_at !== undefined) this.text += `,"completed_at":${this.timestamp(step.completed_at)}`
    this.text += `,"messages":[`
    for (let i = 0; i < step.messages.length; i++) {
      this.text += (i === 0 ? "" : ",") + this.message(step.messages[i]!)
      if (this.text.length >= CHUNK_CHARS) yield* this.flush()
    }
    this.text += `],"steps":[`
    for (let i = 0; i < step.steps.length; i++) {
      if (i > 0) this.text += ","
      yield* this.step(step.steps[i]!)
    }
    this.text += "]}"
    if (this.text.length >= CHUNK_CHARS) yield* this.flush()
  }

  /** What is written so far, handed out (when there is any). */
  *flush(): Generator<string> {
    if (this.text === "") return
    const text = this.text
    this.text = ""
    yield text
  }
}

/**
 * The JSON of `steps`, items of the response's `steps` array, in pieces of about `CHUNK_CHARS`
 * characters (a piece ends after a whole message or step, so one is longer when a message is).
 * `first`: whether they open the array (else each is preceded by a comma). Lazy: a piece is
 * written when it is asked for.
 */
export function* stepsJson(steps: ReadonlyArray<ConversationStep>, first: boolean): Generator<string> {
  const writer = new StepsWriter()
  for (let i = 0; i < steps.length; i++) {
    if (i > 0 || !first) writer.text += ","
    yield* writer.step(steps[i]!)
  }
  yield* writer.flush()
}

/**
 * The fingerprint of the text `stepsJson` writes of an execution's folded steps (what storage keeps
 * of an ended execution, `RunStore.RenderedConversation`): `ConversationStep`'s encoded form (its JSON Schema),
 * the depth folding stops at, and a version of the fold (ConversationLog.ts) and of this writer:
 * raise it when either changes what it makes.
 * Storage serves a rendered execution only under the current fingerprint, so a change to either
 * never serves an old rendering as new: the execution is folded and rendered again.
 */
export const RENDERED_STEPS_SHAPE: string = Encoding.encodeHex(
  sha256(new TextEncoder().encode(JSON.stringify({ step: JSONSchema.make(ConversationStep), depth: MAX_STEP_DEPTH, version: 1 })))
).slice(0, 16)

/**
 * How many characters `renderedJson` puts in one piece: the text is in memory already, so a piece
 * is only a write to the response; larger pieces are fewer trips through the stream.
 */
export const RENDERED_PIECE_CHARS = 1024 * 1024

/**
 * An execution's kept text (`stepsJson`'s pieces of its steps, joined) as pieces of
 * `RENDERED_PIECE_CHARS` characters (one more to end on a whole character), preceded by a comma
 * unless `first` (none when `json` is empty). A piece never ends between the two halves of a
 * surrogate pair: each piece is encoded to UTF-8 on its own.
 */
export function* renderedJson(json: string, first: boolean): Generator<string> {
  if (json === "") return
  if (!first) yield ","
  for (let start = 0; start < json.length;) {
    let end = Math.min(json.length, start + RENDERED_PIECE_CHARS)
    const last = json.charCodeAt(end - 1)
    if (end < json.length && last >= 0xd800 && last <= 0xdbff) end++
    yield json.slice(start, end)
    start = end
  }
}

/** The response's text up to its steps: `{"conversation_id":…,"run_ids":[…],"steps":[`. */
export const conversationJsonHead = (conversationId: string, runIds: ReadonlyArray<string>): string =>
  `{"conversation_id":${string(conversationId)},"run_ids":${json(runIds)},"steps":[`

/** The response's text after its steps. */
export const CONVERSATION_JSON_END = "]}"
