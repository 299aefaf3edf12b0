/**
 * Reading the real user text out of what a CLI sends, and the shell tool call each CLI expects.
 *
 * How the user text is picked: the CLIs wrap the user's prompt with context of their own, which
 * is not the user's text. Claude Code adds `<system-reminder>…</system-reminder>` blocks (as
 * extra content parts, or inside a part); Codex sends `<environment_context>…` and
 * `# AGENTS.md instructions for …` user messages; Gemini CLI sends a first user part of
 * `<session_context>…`. So, for each text part: every `<system-reminder>` block is cut out; a part
 * that is then nothing but one `<tag>…</tag>` block (a tag name with a letter, digit, `_` or `-`
 * only) or an `# AGENTS.md instructions` block is dropped; the remaining parts of one message are
 * trimmed and joined with a newline. A user message with no text left (only tool results, or only
 * context) is not a user text.
 */

const systemReminder = /<system-reminder>[\s\S]*?<\/system-reminder>/g
const wholeTagBlock = /^<([A-Za-z][\w-]*)(\s[^>]*)?>[\s\S]*<\/\1>$/
const agentsMd = /^# AGENTS\.md instructions for /

/** One text part of a user message, with the CLI's wrappers removed ("" when it is all wrapper). */
export const userPartText = (text: string): string => {
  const cut = text.replace(systemReminder, "").trim()
  if (wholeTagBlock.test(cut) || agentsMd.test(cut)) return ""
  return cut
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
