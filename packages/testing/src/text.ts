/**
 * Reading the real user text out of what a CLI sends, and the shell tool call each CLI expects.
 *
 * How the user text is picked: the CLIs wrap the user's prompt with context of their own, which
 * is not the user's text. Claude Code adds `<system-reminder>…</system-reminder>` blocks (as
 * extra content parts, or inside a part); Codex sends `<environment_context>…` and
 * `# AGENTS.md instructions for …` user messages; Gemini CLI sends a first user part of
 * `<session_context>…`; `opencode run "PROMPT"` sends a prompt given as one argument with spaces
 * inside double quotes. So, for each text part: every `<system-reminder>` block is cut out; a part
 * that is then nothing but one `<tag>…</tag>` block (a tag name of letters, digits, `_` or `-`) or
 * an `# AGENTS.md instructions` block or Claude Code's `[Request interrupted by user…]` marker is
 * dropped; a part wholly inside double quotes loses them;
 * the remaining parts of one message are trimmed and joined with a newline. A user message with no
 * text left (only tool results, or only context) is not a user text.
 */

const systemReminder = /<system-reminder>[\s\S]*?<\/system-reminder>/g
const wholeTagBlock = /^<([A-Za-z][\w-]*)(\s[^>]*)?>[\s\S]*<\/\1>$/
const agentsMd = /^# AGENTS\.md instructions for /
const interrupted = /^\[Request interrupted by user[^\]]*\]$/

/** The text without Claude Code's `<system-reminder>` blocks (it adds them to tool results too). */
export const withoutSystemReminders = (text: string): string => text.replace(systemReminder, "")

/** One text part of a user message, with the CLI's wrappers removed ("" when it is all wrapper). */
export const userPartText = (text: string): string => {
  const cut = withoutSystemReminders(text).trim()
  if (wholeTagBlock.test(cut) || agentsMd.test(cut) || interrupted.test(cut)) return ""
  return cut.length >= 2 && cut.startsWith('"') && cut.endsWith('"') ? cut.slice(1, -1).trim() : cut
}

/** The user text of one message made of these text parts ("" when none is left). */
export const userText = (parts: ReadonlyArray<string>): string =>
  parts.map(userPartText).filter((part) => part !== "").join("\n")

/** A shell tool the fake model can call: its name and the arguments for a command. */
interface ShellTool {
  readonly name: string
  readonly input: (command: string) => Record<string, unknown>
}

/**
 * The shell tools of the four CLIs, in order of preference: Claude Code `Bash {command}`; Codex
 * `exec_command {cmd}` (unified exec), `shell_command {command}` or `shell {command: [argv]}`;
 * Gemini CLI `run_shell_command {command, description}`; opencode `bash {command, description}`.
 */
const shellTools: ReadonlyArray<ShellTool> = [
  { name: "Bash", input: (command) => ({ command }) },
  { name: "exec_command", input: (cmd) => ({ cmd }) },
  { name: "shell_command", input: (command) => ({ command }) },
  { name: "shell", input: (command) => ({ command: ["bash", "-lc", command] }) },
  { name: "run_shell_command", input: (command) => ({ command, description: "Run the requested command" }) },
  { name: "bash", input: (command) => ({ command, description: "Run the requested command" }) }
]

/** The shell tool among the offered tools' names, if any. */
export const findShellTool = (tools: ReadonlyArray<string>): string | undefined =>
  shellTools.find((tool) => tools.includes(tool.name))?.name

/** The call of the offered shell tool running this command, or undefined when none is offered. */
export const shellToolCall = (
  tools: ReadonlyArray<string>,
  command: string
): { readonly name: string; readonly input: Record<string, unknown> } | undefined => {
  const tool = shellTools.find((candidate) => tools.includes(candidate.name))
  return tool === undefined ? undefined : { name: tool.name, input: tool.input(command) }
}

/** This text cut into up to `count` non-empty pieces (code points kept whole), for streamed deltas. */
export const splitText = (text: string, count = 3): ReadonlyArray<string> => {
  const chars = Array.from(text)
  if (chars.length === 0) return [""]
  const size = Math.ceil(chars.length / count)
  const pieces: Array<string> = []
  for (let start = 0; start < chars.length; start += size) pieces.push(chars.slice(start, start + size).join(""))
  return pieces
}

/**
 * A JSON value following this JSON schema, filled with this text: an object gets every property
 * of its schema, a string the text (or its enum's first value), a number its minimum or 1, a
 * boolean false, an array []. Types may be in upper case (Gemini's schemas).
 */
export const jsonFor = (schema: unknown, text: string): unknown => {
  if (typeof schema !== "object" || schema === null) return text
  const s = schema as Record<string, unknown>
  const first = (value: unknown): unknown => (Array.isArray(value) ? value[0] : value)
  if (Array.isArray(s["enum"]) && s["enum"].length > 0) return s["enum"][0]
  if ("const" in s) return s["const"]
  const choice = first(s["anyOf"]) ?? first(s["oneOf"]) ?? first(s["allOf"])
  if (choice !== undefined && s["type"] === undefined) return jsonFor(choice, text)
  const type = String(first(s["type"]) ?? (s["properties"] === undefined ? "string" : "object")).toLowerCase()
  switch (type) {
    case "object": {
      const properties = typeof s["properties"] === "object" && s["properties"] !== null ? (s["properties"] as Record<string, unknown>) : {}
      return Object.fromEntries(Object.entries(properties).map(([key, value]) => [key, jsonFor(value, text)]))
    }
    case "array":
      return []
    case "number":
    case "integer":
      return typeof s["minimum"] === "number" ? s["minimum"] : 1
    case "boolean":
      return false
    case "null":
      return null
    default:
      return text
  }
}

/** This text when it is JSON; else the schema filled with it ({@link jsonFor}), as JSON. */
export const asJson = (schema: unknown, text: string): string => {
  try {
    JSON.parse(text)
    return text
  } catch {
    return JSON.stringify(jsonFor(schema, text))
  }
}
