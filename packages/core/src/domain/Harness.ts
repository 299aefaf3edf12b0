/**
 * The agent harness protocol (docs/reference/harness-protocol.md), as pure functions: the messages the service writes
 * to the agent's stdin, the events it reads from its stdout, a line splitter with a bounded
 * buffer, and the reducer that turns an execution's events into its normalized conversation and
 * the facts the run keeps (session, usage, status, artifacts, outcome).
 *
 * Decisions:
 * - A line is at most `MAX_LINE_BYTES` (16 MiB) for parsing; the splitter keeps no more than that
 *   of one line: a longer line is kept whole in the transcript (the raw bytes) and becomes an
 *   `event` block named `output_truncated` with its size and its first 1,000 characters.
 * - A line that is not JSON is an `event` block named `output` with `{text}` (at most the first
 *   64 KiB of it; the transcript keeps it all). Consecutive such lines in one message are one
 *   block, their texts joined by newlines, up to 64 KiB a block. A JSON line that is not one of the events (an
 *   unknown `type`, a wrong field) is an `event` block named `unrecognized` with the object.
 *   Blank lines are ignored. A line nesting JSON deeper than `MAX_JSON_DEPTH` (100) levels is an
 *   `event` block named `output_rejected` and a protocol violation: the agent is stopped and the
 *   run FAILED `agent_failed`.
 * - The conversation of one execution is a list of top-level steps. `step_start` opens a step
 *   inside the innermost open step (or at the top), `step_end` closes the innermost open step of
 *   that id (and any opened inside it). Content outside any open step goes to an implicit step
 *   `execution-<execution_id>` (a new one, `-2`, `-3`…, when content arrives after an explicit
 *   step at the top).
 * - `message` starts a new message with one text block. `action` and `read_skill` append an
 *   action block to the latest assistant message of the current step (a new assistant message if
 *   there is none or another message came after it); `action_result` appends to the latest `tool`
 *   message likewise, with the category and name of its action (`command`/`unknown` when the
 *   action is not known); `event` blocks go to the latest message whatever its role (a new
 *   assistant message if the step has none).
 * - `usage` replaces the execution's usage (the agent reports totals); the run's usage is the sum
 *   over executions. `status` sets an informational status message. `blocked` and `result` are
 *   the outcome; the last one wins. `artifact` is checked against the artifact schema: an invalid
 *   one is an `unrecognized` event block.
 * - Turns and budgets (Budget.ts): an assistant `message`, an `action` or a `read_skill` after an
 *   `action_result`, a user's message or at the start begins a turn; a turn past `max_turns`, or
 *   usage that takes the run's spend past `max_cost_usd`, is noted (`exceeded`): the agent is
 *   stopped and the run FAILED `budget_exceeded`, whatever it reports after.
 * - The outcome once the agent exited: a protocol violation, then a passed budget, first; a failed result → FAILED with its error code (`agent_failed`
 *   when absent or unknown) and message; `blocked` → BLOCKED; exit 0 → SUCCEEDED; any other exit
 *   → FAILED `agent_failed` "the agent exited with code N".
 */
import { DateTime, Either, Schema } from "effect"
import type { Artifact } from "./Artifact.js"
import { ArtifactReport, stampArtifact } from "./Artifact.js"
import type { JsonValue } from "./Common.js"
import { JsonObject } from "./Common.js"
import {
  type ActionCategory,
  ActionCategory as ActionCategorySchema,
  ActionResultState,
  type ContentBlock,
  type ConversationMessage,
  type ConversationStep,
  MessageRole,
  readSkillAction
} from "./Conversation.js"
import { RunErrorCode } from "./Errors.js"
import type { ConversationOp } from "./ConversationLog.js"
import { concatBytes } from "../internal/Bytes.js"
import type { RequestUsage } from "./Run.js"
import { costOf, type ExecutionBudget, overBudget } from "./Budget.js"

/** The longest stdout line parsed; longer lines are truncated in the conversation. */
export const MAX_LINE_BYTES = 16 * 1024 * 1024
/** How much of a non-JSON line an `output` event block shows. */
export const MAX_OUTPUT_BLOCK_CHARS = 64 * 1024
/**
 * The deepest nesting of arrays and objects a JSON line may have. A deeper line is refused before
 * it is parsed (the service's recursive checks would overflow the stack on it): the run fails.
 */
export const MAX_JSON_DEPTH = 100
const TRUNCATED_HEAD_CHARS = 1_000

// ---------------------------------------------------------------------------------------------
// What the service sends

/** A message of the history handed to a continuing execution. */
export interface HistoryMessage {
  readonly role: ConversationMessage["role"]
  readonly content: ReadonlyArray<ContentBlock>
}

/** The first line on the agent's stdin. */
export interface StartMessage {
  readonly type: "start"
  readonly run_id: string
  readonly execution_id: string
  readonly conversation_id: string | null
  readonly mode: "normal" | "debug"
  readonly prompt: string
  readonly title: string
  readonly base_prompt: string | null
  readonly model_id: string | null
  /**
   * The run's skill, read when the execution starts: `spec` its id (`owner/repo:path`), `path` the
   * file in the repository, `content` the whole file (front matter included).
   */
  readonly skill: {
    readonly spec: string
    readonly name: string
    readonly description: string
    readonly path: string
    readonly content: string
  } | null
  readonly mcp_servers: Readonly<Record<string, unknown>>
  readonly attachments: ReadonlyArray<{ readonly name: string; readonly path: string; readonly media_type: string }>
  readonly history: ReadonlyArray<HistoryMessage>
  readonly followups: ReadonlyArray<string>
  readonly api: { readonly base_url: string; readonly run_token: string }
}

export const followupMessage = (message: string, mode: "normal" | "debug") => ({ type: "followup", message, mode }) as const
export const cancelMessage = { type: "cancel" } as const

/** The messages of a saved conversation, in order, for a continuing execution's `history`. */
export const historyOf = (steps: ReadonlyArray<ConversationStep>): Array<HistoryMessage> =>
  steps.flatMap((step) => [
    ...step.messages.map((m) => ({ role: m.role, content: m.content })),
    ...historyOf(step.steps)
  ])

// ---------------------------------------------------------------------------------------------
// What the agent emits

const event = <T extends string, F extends Schema.Struct.Fields>(type: T, fields: F) =>
  Schema.Struct({ type: Schema.Literal(type), ...fields })

/** One line of the agent's stdout. */
export const HarnessEvent = Schema.Union(
  event("session", { session_id: Schema.String, session_link: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }) }),
  event("message", { role: MessageRole, text: Schema.String }),
  event("action", {
    id: Schema.String,
    category: ActionCategorySchema,
    name: Schema.String,
    input: Schema.optionalWith(Schema.Unknown, { default: () => null })
  }),
  event("action_result", {
    action_id: Schema.String,
    state: ActionResultState,
    output: Schema.optionalWith(Schema.Unknown, { default: () => null })
  }),
  event("read_skill", { skill_path: Schema.String, bundled_skill_id: Schema.optional(Schema.String) }),
  event("step_start", { id: Schema.String, description: Schema.optional(Schema.String) }),
  event("step_end", { id: Schema.String, summary: Schema.optional(Schema.String) }),
  event("artifact", { artifact_type: Schema.String, data: Schema.Unknown }),
  event("usage", {
    input_tokens: Schema.NonNegativeInt,
    output_tokens: Schema.NonNegativeInt,
    inference_cost: Schema.optionalWith(Schema.Finite.pipe(Schema.nonNegative()), { default: () => 0 }),
    compute_cost: Schema.optionalWith(Schema.Finite.pipe(Schema.nonNegative()), { default: () => 0 }),
    /** The model turns of the execution so far, when the agent counts them: they replace the service's count. */
    turns: Schema.optional(Schema.NonNegativeInt)
  }),
  event("status", { message: Schema.String }),
  event("blocked", { message: Schema.String }),
  event("result", {
    outcome: Schema.Literal("succeeded", "failed"),
    error_code: Schema.optional(Schema.String),
    message: Schema.optional(Schema.String)
  })
)
export type HarnessEvent = typeof HarnessEvent.Type

/** A line read: an event, a JSON object that is not one, or text that is not JSON. */
export type HarnessLine =
  | { readonly _tag: "Event"; readonly event: HarnessEvent }
  | { readonly _tag: "Unrecognized"; readonly value: JsonValue }
  | { readonly _tag: "Output"; readonly text: string }
  | { readonly _tag: "Truncated"; readonly bytes: number; readonly head: string }
  | { readonly _tag: "TooDeep"; readonly head: string }

/** Whether the JSON text nests arrays and objects deeper than `max` (strings skipped; one pass, no recursion). */
export const nestsDeeperThan = (text: string, max: number): boolean => {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c) i++
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true
    } else if (c === 0x5d || c === 0x7d) depth--
  }
  return false
}

const decodeEvent = Schema.decodeUnknownEither(HarnessEvent)
const isJson = Schema.is(Schema.Union(JsonObject, Schema.Array(Schema.Unknown)))

const outputOf = (line: string): HarnessLine => ({
  _tag: "Output",
  text: line.length > MAX_OUTPUT_BLOCK_CHARS ? line.slice(0, MAX_OUTPUT_BLOCK_CHARS) : line
})

/**
 * Whether a line may be JSON: its first character other than white space may start a JSON value.
 * Plain text is told apart without `JSON.parse` throwing on it (a throw per line is costly).
 */
const mayBeJson = (line: string): boolean => {
  const first = /\S/.exec(line)?.[0]
  return first !== undefined && '{["-0123456789tfn'.includes(first)
}

/** Parses one complete line (without its newline). Never throws. */
export const parseLine = (line: string): HarnessLine | undefined => {
  if (line.trim() === "") return undefined
  if (!mayBeJson(line)) return outputOf(line)
  if (nestsDeeperThan(line, MAX_JSON_DEPTH)) return { _tag: "TooDeep", head: line.slice(0, TRUNCATED_HEAD_CHARS) }
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch {
    return outputOf(line)
  }
  const decoded = decodeEvent(value)
  if (Either.isRight(decoded)) return { _tag: "Event", event: decoded.right }
  return isJson(value) ? { _tag: "Unrecognized", value: value as JsonValue } : { _tag: "Output", text: line }
}

// ---------------------------------------------------------------------------------------------
// Lines out of chunks

/** The splitter between chunks: the bytes of the unfinished line (at most `MAX_LINE_BYTES`). */
export interface LineBuffer {
  readonly parts: ReadonlyArray<Uint8Array>
  readonly size: number
  /** Bytes of the current line beyond the limit, dropped (0 when within it). */
  readonly dropped: number
}

export const emptyLineBuffer: LineBuffer = { parts: [], size: 0, dropped: 0 }

const NEWLINE = 0x0a
const decoder = new TextDecoder()

/**
 * How a complete line is read: our protocol's `parseLine` by default; an agent CLI's decoder
 * (ports/AgentHarness.ts) turns its own lines into our events.
 */
export type LineParser = (line: string) => HarnessLine | ReadonlyArray<HarnessLine> | undefined

/** A decoder's events as parsed lines (its lines are never text or unrecognized JSON of ours). */
export const eventLines = (decode: (line: string) => ReadonlyArray<HarnessEvent>): LineParser => (line) => {
  // The agent's output is untrusted, and so is a decoder's handling of it: a line nested too deep
  // is refused before the decoder sees it, a decoder that throws costs only that line, and what
  // it returns is checked as our own agents' events are (usage clamped to safe integers).
  if (nestsDeeperThan(line, MAX_JSON_DEPTH)) return { _tag: "TooDeep", head: line.slice(0, TRUNCATED_HEAD_CHARS) }
  let events: ReadonlyArray<HarnessEvent>
  try {
    events = decode(line)
  } catch {
    return undefined
  }
  const lines: Array<HarnessLine> = []
  for (const raw of events) {
    const event = raw.type === "usage" ? clampUsage(raw) : raw
    if (isHarnessEvent(event)) lines.push({ _tag: "Event", event })
  }
  return lines
}

const isHarnessEvent = Schema.is(HarnessEvent)

const safe = (n: number) => (Number.isFinite(n) ? Math.min(Math.max(0, Math.round(n)), Number.MAX_SAFE_INTEGER) : 0)
const safeCost = (n: number) => (Number.isFinite(n) ? Math.min(Math.max(0, n), 1e12) : 0)

const clampUsage = (e: Extract<HarnessEvent, { type: "usage" }>): HarnessEvent => ({
  ...e,
  input_tokens: safe(e.input_tokens),
  output_tokens: safe(e.output_tokens),
  inference_cost: safeCost(e.inference_cost),
  compute_cost: safeCost(e.compute_cost)
})

const lineOf = (buffer: LineBuffer, parse: LineParser, lines: Array<HarnessLine>): void => {
  const text = decoder.decode(concatBytes(buffer.parts)).replace(/\r$/, "")
  if (buffer.dropped > 0) {
    lines.push({ _tag: "Truncated", bytes: buffer.size + buffer.dropped, head: text.slice(0, TRUNCATED_HEAD_CHARS) })
    return
  }
  const parsed = parse(text)
  if (parsed === undefined) return
  if ("_tag" in parsed) lines.push(parsed as HarnessLine)
  else lines.push(...(parsed as ReadonlyArray<HarnessLine>))
}

const append = (buffer: LineBuffer, bytes: Uint8Array): LineBuffer => {
  if (bytes.length === 0) return buffer
  const room = MAX_LINE_BYTES - buffer.size
  if (room <= 0) return { ...buffer, dropped: buffer.dropped + bytes.length }
  const kept = bytes.length <= room ? bytes : bytes.subarray(0, room)
  return {
    parts: [...buffer.parts, kept],
    size: buffer.size + kept.length,
    dropped: buffer.dropped + (bytes.length - kept.length)
  }
}

/** Feeds a chunk: the lines it completes, and the buffer of the unfinished one. */
export const splitLines = (
  buffer: LineBuffer,
  chunk: Uint8Array,
  parse: LineParser = parseLine
): { buffer: LineBuffer; lines: Array<HarnessLine> } => {
  const lines: Array<HarnessLine> = []
  let current = buffer
  let start = 0
  for (let i = chunk.indexOf(NEWLINE); i !== -1; i = chunk.indexOf(NEWLINE, start)) {
    lineOf(append(current, chunk.subarray(start, i)), parse, lines)
    current = emptyLineBuffer
    start = i + 1
  }
  return { buffer: append(current, chunk.subarray(start)), lines }
}

/** The last line when the stream ended without a newline. */
export const flushLines = (buffer: LineBuffer, parse: LineParser = parseLine): Array<HarnessLine> => {
  if (buffer.size === 0 && buffer.dropped === 0) return []
  const lines: Array<HarnessLine> = []
  lineOf(buffer, parse, lines)
  return lines
}

// ---------------------------------------------------------------------------------------------
// The reducer

/** How an execution ended, as the agent told it. */
export type AgentOutcome =
  | { readonly _tag: "Succeeded"; readonly message?: string | undefined }
  | { readonly _tag: "Failed"; readonly error_code: RunErrorCode; readonly message: string }
  | { readonly _tag: "Blocked"; readonly message: string }

/** A step that may still get content: an open one, or the implicit step while it is the latest. */
interface LiveStep {
  readonly key: number
  readonly id: string
  /** The role of the step's latest message; none before its first. */
  lastRole: ConversationMessage["role"] | undefined
  /** The length of the text of the latest block when it is an `output` block that may grow. */
  outputChars: number | undefined
}

/**
 * What one execution has produced so far. Mutable for speed; owned by one execution's reader. It
 * keeps only what later output depends on (the steps that may still get content, the actions'
 * names); the conversation itself leaves as operations (`pending`, ConversationLog.ts).
 */
export interface ExecutionState {
  readonly execution_id: string
  /** The open steps, outermost first. */
  readonly open: Array<LiveStep>
  /** The implicit step content outside any open step goes to, while it is the latest top step. */
  implicit: LiveStep | undefined
  implicitCount: number
  /** The key of the latest top-level step. */
  lastTop: number | undefined
  /** Keys given to steps so far. */
  steps: number
  readonly actions: Map<string, { readonly category: ActionCategory; readonly name: string }>
  session: { readonly session_id: string; readonly session_link: string | null } | undefined
  usage: RequestUsage | undefined
  status: string | undefined
  outcome: AgentOutcome | undefined
  /**
   * Why the agent broke the protocol (JSON nested too deep, output over the run's limit), when it
   * did: the agent is stopped and the run fails with this message, whatever it reports after.
   */
  violation: string | undefined
  /** The run's budget for this execution (Budget.ts); none for a debug session. */
  budget: ExecutionBudget | undefined
  /** The model's turns so far (Budget.ts): one each time the agent says something or acts after a result or a user's message. */
  turns: number
  /** Whether the agent's latest output was its own (a turn goes on) rather than a result or a user's message. */
  inTurn: boolean
  /** The turns the agent counts itself (`usage.turns`), once it reported them: they replace `turns`. */
  reportedTurns: number | undefined
  /** Why the execution passed its budget, when it did: the agent is stopped and the run fails `budget_exceeded`. */
  exceeded: string | undefined
  /** Artifacts reported since the last `takeArtifacts`. */
  artifacts: Array<Artifact>
  /** Operations on the conversation not yet taken (`takeOps`). */
  pending: Array<ConversationOp>
  /** The user's messages given to the agent while it was in no step: they open the next step it is in. */
  waiting: Array<{ readonly text: string; readonly at: number }>
  readSkill: number
}

export const newExecutionState = (execution_id: string): ExecutionState => ({
  execution_id,
  open: [],
  implicit: undefined,
  implicitCount: 0,
  lastTop: undefined,
  steps: 0,
  actions: new Map(),
  session: undefined,
  usage: undefined,
  status: undefined,
  outcome: undefined,
  violation: undefined,
  budget: undefined,
  turns: 0,
  inTurn: false,
  reportedTurns: undefined,
  exceeded: undefined,
  artifacts: [],
  pending: [],
  waiting: [],
  readSkill: 0
})

/** An execution's state bound by `budget`. */
export const withBudget = (state: ExecutionState, budget: ExecutionBudget): ExecutionState => {
  state.budget = budget
  return state
}

/** The step content goes to now, when there is one: the innermost open step, else the implicit step while it is the latest. */
const liveStep = (state: ExecutionState): LiveStep | undefined =>
  state.open[state.open.length - 1] ??
    (state.implicit !== undefined && state.lastTop === state.implicit.key ? state.implicit : undefined)

const userMessage = (state: ExecutionState, step: LiveStep, text: string, at: number): void => {
  state.pending.push({ op: "message", key: step.key, role: "user", at, block: { type: "text", text } })
  step.lastRole = "user"
  step.outputChars = undefined
}

/** The user's messages that waited for a step, into `step` (their times kept). */
const sayWaiting = (state: ExecutionState, step: LiveStep): void => {
  for (const { at, text } of state.waiting.splice(0)) userMessage(state, step, text, at)
}

const currentStep = (state: ExecutionState, at: number): LiveStep => {
  const live = liveStep(state)
  if (live !== undefined) return live
  state.implicitCount += 1
  const id = `execution-${state.execution_id}${state.implicitCount === 1 ? "" : `-${state.implicitCount}`}`
  const step: LiveStep = { key: ++state.steps, id, lastRole: undefined, outputChars: undefined }
  state.pending.push({ op: "step", key: step.key, parent: null, id, at })
  state.implicit = step
  state.lastTop = step.key
  sayWaiting(state, step)
  return step
}

/**
 * A message of the user given to the agent at `at` (the prompt, a follow-up): a `user` message of
 * the step the agent is in, so the conversation reads as the dialogue it was. Before the agent
 * opened a step (and between its steps) the message waits, and becomes the first message of the
 * next step it opens or writes to; `endUserMessages` puts what still waits when the agent ended.
 * A blank message says nothing.
 */
export const addUserMessage = (state: ExecutionState, text: string, at: number): void => {
  if (text.trim() === "") return
  state.inTurn = false
  const step = liveStep(state)
  if (step === undefined) state.waiting.push({ text, at })
  else userMessage(state, step, text, at)
}

/** The user's messages still waiting for a step once the agent ended: in a step of their own. */
export const endUserMessages = (state: ExecutionState, at: number): void => {
  if (state.waiting.length > 0) currentStep(state, at)
}

const addBlock = (
  state: ExecutionState,
  at: number,
  block: ContentBlock,
  role: ConversationMessage["role"] | undefined
): LiveStep => {
  const step = currentStep(state, at)
  // A block without a role of its own (output, events) continues the latest message, unless the user said it.
  if (step.lastRole !== undefined && step.lastRole !== "user" && (role === undefined || step.lastRole === role)) {
    state.pending.push({ op: "block", key: step.key, block })
  } else {
    step.lastRole = role ?? "assistant"
    state.pending.push({ op: "message", key: step.key, role: step.lastRole, at, block })
  }
  step.outputChars = undefined
  return step
}

/** A line of text: one more line of the latest `output` block when it has room, else a new block. */
const addOutput = (state: ExecutionState, at: number, text: string): void => {
  const step = currentStep(state, at)
  if (step.outputChars !== undefined && step.outputChars + 1 + text.length <= MAX_OUTPUT_BLOCK_CHARS) {
    state.pending.push({ op: "text", key: step.key, text })
    step.outputChars += 1 + text.length
    return
  }
  addBlock(state, at, { type: "event", name: "output", data: { text } }, undefined).outputChars = text.length
}

const isErrorCode = Schema.is(RunErrorCode)
const decodeArtifact = Schema.decodeUnknownEither(ArtifactReport)

const asJson = (value: unknown): JsonValue => (value === undefined ? null : (value as JsonValue))

/** The agent said something or acted: a new turn when its latest output was not its own. */
const agentActs = (state: ExecutionState): void => {
  if (state.inTurn) return
  state.inTurn = true
  state.turns += 1
  checkBudget(state)
}

/** Notes the budget passed, when it is (the first reason stays). */
const checkBudget = (state: ExecutionState): void => {
  if (state.budget === undefined || state.exceeded !== undefined) return
  state.exceeded = overBudget(state.budget, state.usage === undefined ? 0 : costOf(state.usage), state.reportedTurns ?? state.turns)
}

/** Applies one line to the execution's state at `now` (epoch millis). */
export const reduce = (state: ExecutionState, line: HarnessLine, now: number): void => {
  switch (line._tag) {
    case "Output":
      return addOutput(state, now, line.text)
    case "Truncated":
      addBlock(
        state,
        now,
        { type: "event", name: "output_truncated", data: { bytes: line.bytes, head: line.head } },
        undefined
      )
      return
    case "TooDeep":
      state.violation ??= `the agent printed JSON nested deeper than ${MAX_JSON_DEPTH} levels`
      addBlock(state, now, { type: "event", name: "output_rejected", data: { reason: state.violation, head: line.head } }, undefined)
      return
    case "Unrecognized":
      addBlock(state, now, { type: "event", name: "unrecognized", data: line.value }, undefined)
      return
    case "Event":
      return reduceEvent(state, line.event, now)
  }
}

const reduceEvent = (state: ExecutionState, e: HarnessEvent, now: number): void => {
  switch (e.type) {
    case "session":
      state.session = { session_id: e.session_id, session_link: e.session_link }
      return
    case "message": {
      if (e.role === "assistant") agentActs(state)
      else state.inTurn = false
      const step = currentStep(state, now)
      state.pending.push({ op: "message", key: step.key, role: e.role, at: now, block: { type: "text", text: e.text } })
      step.lastRole = e.role
      step.outputChars = undefined
      return
    }
    case "action":
      agentActs(state)
      state.actions.set(e.id, { category: e.category, name: e.name })
      addBlock(
        state,
        now,
        { type: "action", id: e.id, category: e.category, name: e.name, input: asJson(e.input) },
        "assistant"
      )
      return
    case "read_skill": {
      agentActs(state)
      state.readSkill += 1
      const id = `read-skill-${state.readSkill}`
      state.actions.set(id, { category: "skill", name: "read_skill" })
      addBlock(
        state,
        now,
        readSkillAction({ id, skillPath: e.skill_path, bundledSkillId: e.bundled_skill_id }),
        "assistant"
      )
      return
    }
    case "action_result": {
      state.inTurn = false
      const action = state.actions.get(e.action_id) ?? { category: "command" as const, name: "unknown" }
      addBlock(
        state,
        now,
        { type: "action_result", action_id: e.action_id, ...action, state: e.state, output: asJson(e.output) },
        "tool"
      )
      return
    }
    case "step_start": {
      const step: LiveStep = { key: ++state.steps, id: e.id, lastRole: undefined, outputChars: undefined }
      const parent = state.open[state.open.length - 1]
      state.pending.push({
        op: "step",
        key: step.key,
        parent: parent?.key ?? null,
        id: e.id,
        ...(e.description === undefined ? {} : { description: e.description }),
        at: now
      })
      if (parent === undefined) state.lastTop = step.key
      state.open.push(step)
      sayWaiting(state, step)
      return
    }
    case "step_end": {
      let at = state.open.length - 1
      while (at >= 0 && state.open[at]!.id !== e.id) at--
      if (at < 0) return
      // The steps opened inside it end with it (innermost first).
      for (const inner of state.open.slice(at + 1).reverse()) state.pending.push({ op: "end", key: inner.key, at: now })
      state.pending.push({ op: "end", key: state.open[at]!.key, ...(e.summary === undefined ? {} : { summary: e.summary }), at: now })
      state.open.length = at
      return
    }
    case "artifact": {
      const decoded = decodeArtifact({ artifact_type: e.artifact_type, data: e.data })
      if (Either.isLeft(decoded)) {
        const data: JsonValue = e.data === undefined
          ? { type: "artifact", artifact_type: e.artifact_type }
          : { type: "artifact", artifact_type: e.artifact_type, data: e.data as JsonValue }
        addBlock(state, now, { type: "event", name: "unrecognized", data }, undefined)
        return
      }
      state.artifacts.push(stampArtifact(decoded.right, DateTime.unsafeMake(now)))
      return
    }
    case "usage":
      state.usage = {
        input_tokens: e.input_tokens,
        output_tokens: e.output_tokens,
        inference_cost: e.inference_cost,
        compute_cost: e.compute_cost
      }
      if (e.turns !== undefined) state.reportedTurns = e.turns
      checkBudget(state)
      return
    case "status":
      state.status = e.message
      return
    case "blocked":
      state.outcome = { _tag: "Blocked", message: e.message }
      return
    case "result":
      state.outcome = e.outcome === "succeeded"
        ? { _tag: "Succeeded", message: e.message }
        : {
          _tag: "Failed",
          error_code: e.error_code !== undefined && isErrorCode(e.error_code) ? e.error_code : "agent_failed",
          message: e.message ?? "the agent reported a failure"
        }
      return
  }
}

/** About how many characters an operation takes when stored. */
const sizeOf = (op: ConversationOp): number =>
  op.op === "text" ? op.text.length + 32 : op.op === "step" || op.op === "end" ? 128 : op.block.type === "text" ? op.block.text.length + 96 : JSON.stringify(op.block).length + 64

/**
 * The conversation's oldest operations not yet taken (ConversationLog.ts), about `maxChars` of
 * them when stored (at least one), and forgets them.
 */
export const takeOps = (state: ExecutionState, maxChars: number): Array<ConversationOp> => {
  let count = 0
  let size = 0
  while (count < state.pending.length && (count === 0 || size + sizeOf(state.pending[count]!) <= maxChars)) {
    size += sizeOf(state.pending[count]!)
    count++
  }
  return state.pending.splice(0, count)
}

/** The artifacts reported since the last call, and forgets them. */
export const takeArtifacts = (state: ExecutionState): Array<Artifact> => {
  const taken = state.artifacts
  state.artifacts = []
  return taken
}

/** How the execution ended, given the agent's exit code. */
export const outcomeOf = (state: ExecutionState, exitCode: number): AgentOutcome => {
  if (state.violation !== undefined) return { _tag: "Failed", error_code: "agent_failed", message: state.violation }
  if (state.exceeded !== undefined) return { _tag: "Failed", error_code: "budget_exceeded", message: state.exceeded }
  const told = state.outcome
  if (told !== undefined && told._tag !== "Succeeded") return told
  if (exitCode === 0) return told ?? { _tag: "Succeeded" }
  return { _tag: "Failed", error_code: "agent_failed", message: `the agent exited with code ${exitCode}` }
}

/** The sum of two usages. */
export const addUsage = (a: RequestUsage, b: RequestUsage): RequestUsage => ({
  input_tokens: Math.min(a.input_tokens + b.input_tokens, Number.MAX_SAFE_INTEGER),
  output_tokens: Math.min(a.output_tokens + b.output_tokens, Number.MAX_SAFE_INTEGER),
  inference_cost: Math.min(a.inference_cost + b.inference_cost, 1e12),
  compute_cost: Math.min(a.compute_cost + b.compute_cost, 1e12)
})
