/**
 * What the tools of agent CLIs do, as action categories of the conversation (docs/harnesses.md),
 * for the harness adapters' decoders. Names are compared without case, `_` and `-`:
 * - shell tools (`Bash`, `shell`, `exec_command`, `run_shell_command`, `bash`) → `command`;
 * - reading and changing files (`Read`, `Write`, `Edit`, `MultiEdit`, `NotebookEdit`, `read_file`,
 *   `write_file`, `replace`, `apply_patch`, `list_directory`, `LS`, `patch`, `todowrite`…) → `files`;
 * - searching (`Grep`, `Glob`, `search_file_content`, `WebSearch`, `WebFetch`, `web_fetch`,
 *   `google_web_search`, `webfetch`, `codesearch`…) → `search`;
 * - MCP tools (`mcp__server__tool`, `server__tool`, Codex's `mcp_tool_call`) → `integration`;
 * - skills (`Skill`, `skill`, `activate_skill`) → `skill`;
 * - sub-agents and the rest → `command` (they act in the sandbox).
 */
import type { ActionCategory } from "./Conversation.js"

const key = (name: string) => name.toLowerCase().replace(/[-_\s]/g, "")

const SHELL = new Set(["bash", "shell", "execcommand", "runshellcommand", "localshell", "exec", "killshell", "bashoutput"])
const FILES = new Set([
  "read", "write", "edit", "multiedit", "notebookedit", "notebookread", "readfile", "writefile", "replace", "applypatch",
  "listdirectory", "ls", "list", "patch", "readmanyfiles", "todowrite", "todoread", "filechange", "view", "create"
])
const SEARCH = new Set([
  "grep", "glob", "searchfilecontent", "websearch", "webfetch", "googlewebsearch", "codesearch", "search", "find"
])
const SKILL = new Set(["skill", "activateskill"])

/** The category of a tool by its name. */
export const toolCategory = (name: string): ActionCategory => {
  if (name.startsWith("mcp__") || name.includes("__")) return "integration"
  const k = key(name)
  if (SHELL.has(k)) return "command"
  if (FILES.has(k)) return "files"
  if (SEARCH.has(k)) return "search"
  if (SKILL.has(k)) return "skill"
  return "command"
}

/** Text of a tool's output, whatever shape a CLI gives it (a string, content blocks, an object). */
export const outputText = (output: unknown): string => {
  if (typeof output === "string") return output
  if (Array.isArray(output)) {
    return output
      .map((part) => (typeof part === "object" && part !== null && typeof (part as { text?: unknown }).text === "string"
        ? (part as { text: string }).text
        : typeof part === "string" ? part : jsonText(part)))
      .join("\n")
  }
  if (output === undefined || output === null) return ""
  return jsonText(output)
}

/** JSON text of a value, or "" when it has none (too deep, a cycle, a BigInt). Never throws. */
const jsonText = (value: unknown): string => {
  try {
    return JSON.stringify(value) ?? ""
  } catch {
    return ""
  }
}
