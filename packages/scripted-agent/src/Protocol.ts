/**
 * The agent harness protocol (docs/reference/harness-protocol.md): the JSON Lines the agent reads on stdin and writes on
 * stdout. Reading is lenient (a line that is not a JSON object, or has an unknown `type`, is
 * ignored; missing fields take harmless defaults) because an agent must never crash on its input.
 */

/** A conversation message of the start message's `history`: `{role, content: [blocks]}` or `{role, text}`. */
export interface HistoryMessage {
  readonly role: string
  readonly text: string
}

/** An attachment as the agent sees it: a file in the sandbox. */
export interface Attachment {
  readonly name: string
  readonly path: string
  readonly media_type: string
}

export type Mode = "normal" | "debug"

/** `{"type":"start", ...}`: the first line on stdin. */
export interface StartMessage {
  readonly type: "start"
  readonly run_id: string
  readonly execution_id: string
  readonly conversation_id: string
  readonly mode: Mode
  readonly prompt: string
  readonly title: string
  readonly base_prompt: string
  readonly model_id: string
  readonly skill: { readonly spec: string; readonly name: string; readonly content: string } | null
  readonly mcp_servers: unknown
  readonly attachments: ReadonlyArray<Attachment>
  readonly history: ReadonlyArray<HistoryMessage>
  readonly followups: ReadonlyArray<string>
  readonly api: { readonly base_url: string; readonly run_token: string } | null
}

/** `{"type":"followup", message, mode}`: a message sent to the running agent. */
export interface FollowupMessage {
  readonly type: "followup"
  readonly message: string
  /** Absent when the line did not say. */
  readonly mode: Mode | undefined
}

/** `{"type":"cancel"}`: stop at once. */
export interface CancelMessage {
  readonly type: "cancel"
}

export type InputMessage = StartMessage | FollowupMessage | CancelMessage

/** Everything the agent writes on stdout, one object per line. */
export type OutputMessage =
  | { readonly type: "session"; readonly session_id: string; readonly session_link: string | null }
  | { readonly type: "message"; readonly role: string; readonly text: string }
  | { readonly type: "action"; readonly id: string; readonly category: string; readonly name: string; readonly input: unknown }
  | { readonly type: "action_result"; readonly action_id: string; readonly state: string; readonly output: unknown }
  | { readonly type: "read_skill"; readonly skill_path: string; readonly bundled_skill_id?: string }
  | { readonly type: "step_start"; readonly id: string; readonly description: string }
  | { readonly type: "step_end"; readonly id: string; readonly summary: string }
  | { readonly type: "artifact"; readonly artifact_type: "PULL_REQUEST" | "EXTERNAL_REFERENCE"; readonly data: Readonly<Record<string, string>> }
  | {
      readonly type: "usage"
      readonly input_tokens: number
      readonly output_tokens: number
      readonly inference_cost: number
      readonly compute_cost: number
    }
  | { readonly type: "status"; readonly message: string }
  | { readonly type: "blocked"; readonly message: string }
  | {
      readonly type: "result"
      readonly outcome: "succeeded" | "failed"
      readonly error_code?: string
      readonly message?: string
    }

type Json = Readonly<Record<string, unknown>>

const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const str = (value: unknown, fallback = ""): string => (typeof value === "string" ? value : fallback)

const array = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])

const mode = (value: unknown): Mode | undefined =>
  value === "debug" ? "debug" : value === "normal" ? "normal" : undefined

/** The text of a history message: its text blocks joined by newlines, or its `text` field. */
const historyMessage = (value: unknown): HistoryMessage | undefined => {
  if (!isObject(value)) return undefined
  const role = str(value.role, "unknown")
  if (typeof value.text === "string") return { role, text: value.text }
  if (typeof value.content === "string") return { role, text: value.content }
  const texts = array(value.content)
    .filter(isObject)
    .filter((block) => block.type === "text" && typeof block.text === "string")
    .map((block) => block.text as string)
  return { role, text: texts.join("\n") }
}

const attachment = (value: unknown): Attachment | undefined =>
  isObject(value)
    ? { name: str(value.name), path: str(value.path), media_type: str(value.media_type, "application/octet-stream") }
    : undefined

const defined = <A>(value: A | undefined): value is A => value !== undefined

const startMessage = (json: Json): StartMessage => {
  const skill = isObject(json.skill)
    ? { spec: str(json.skill.spec), name: str(json.skill.name), content: str(json.skill.content) }
    : null
  const api = isObject(json.api) ? { base_url: str(json.api.base_url), run_token: str(json.api.run_token) } : null
  return {
    type: "start",
    run_id: str(json.run_id),
    execution_id: str(json.execution_id, "0"),
    conversation_id: str(json.conversation_id),
    mode: mode(json.mode) ?? "normal",
    prompt: str(json.prompt),
    title: str(json.title),
    base_prompt: str(json.base_prompt),
    model_id: str(json.model_id),
    skill,
    mcp_servers: json.mcp_servers ?? null,
    attachments: array(json.attachments).map(attachment).filter(defined),
    history: array(json.history).map(historyMessage).filter(defined),
    followups: array(json.followups).filter((f): f is string => typeof f === "string"),
    api
  }
}

/**
 * Reads one stdin line: the message it carries, or `undefined` for a line to ignore (not JSON,
 * not an object, or an unknown `type`). Never throws.
 */
export const parseInputLine = (line: string): InputMessage | undefined => {
  let json: unknown
  try {
    json = JSON.parse(line)
  } catch {
    return undefined
  }
  if (!isObject(json)) return undefined
  switch (json.type) {
    case "start":
      return startMessage(json)
    case "followup":
      return { type: "followup", message: str(json.message), mode: mode(json.mode) }
    case "cancel":
      return { type: "cancel" }
    default:
      return undefined
  }
}

/** One stdout line (without its newline). */
export const encodeOutput = (message: OutputMessage): string => JSON.stringify(message)
