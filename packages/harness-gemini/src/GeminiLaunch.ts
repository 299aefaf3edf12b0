/**
 * The command line of Gemini CLI for one turn (docs/harnesses.md#gemini-cli):
 * `gemini -p "" --output-format stream-json --yolo`, the message on stdin (Gemini CLI puts what
 * stdin holds before the `-p` text, here empty; 8 MB at most), `--resume SESSION` for a
 * follow-up, `-m` for the model (always given when the run names one: without it Gemini CLI first
 * asks a small model to route the request), and its user settings written each turn as
 * `~/.gemini/settings.json`:
 * - the auth type `gemini-api-key`; usage statistics, telemetry, update checks, update notices
 *   and the IDE connection off (nothing leaves the machine but the model calls); at most 3
 *   attempts of a model request (the default, 10 with back-off, keeps a run with an unreachable
 *   endpoint going for minutes; a refused key is not retried at all);
 * - the run's MCP servers (`mcpServers`: `{command, args, env}`, or `{type: "http", url, headers}`),
 *   and when the run has any, only those (`--allowed-mcp-server-names`: not the ones a
 *   repository's `.gemini/settings.json` adds); their tools reach the model as
 *   `mcp_SERVER_TOOL`. Gemini CLI expands `$VAR` and `${VAR}` in every string of its settings, and
 *   once more (dotenv style) in `env` and `headers` values, so a `$` of the run's values is written
 *   escaped and reaches the server as it is;
 * - the reasoning level as the model's thinking (`modelConfigs.overrides` for that model):
 *   `thinkingBudget` 1024 / 8192 / 24576 for Gemini 2.5, `thinkingLevel` LOW / MEDIUM / HIGH for
 *   later models (Gemini 3 Pro, which has no MEDIUM, gets HIGH); ignored for older models and when
 *   the run names no model (the CLI then picks models itself).
 * The base prompt is the global context file `~/.gemini/GEMINI.md`, which Gemini CLI adds to its
 * system prompt (`GEMINI_SYSTEM_MD` would replace that prompt instead). Context files import the
 * files an `@path` names, so an `@` that starts a word gets a zero-width space before it and stays
 * text. The skill is `~/.gemini/skills/NAME/SKILL.md`, where Gemini CLI discovers user skills (front
 * matter added when the file has none: it lists only skills with a name and a description).
 *
 * Sessions are files under `~/.gemini/tmp/SLUG/` (`chats/`), SLUG the project a
 * `.project_root` file in it names (the work directory's path; `~/.gemini/projects.json` only
 * caches that): a continued run's restored sessions are given to the new work directory before its
 * first turn, else `--resume` finds no session there (`sessionState`).
 *
 * The auth secret is `GEMINI_API_KEY`. `GOOGLE_GEMINI_BASE_URL` (a proxy, a gateway) comes from
 * the environment's variables. `GEMINI_CLI_TRUST_WORKSPACE` trusts the work directory (an
 * untrusted one is refused in headless mode); `GEMINI_CLI_NO_RELAUNCH` keeps it one process
 * (otherwise it starts itself again as a child with a larger heap, which costs seconds, under a
 * parent that ignores SIGINT and SIGTERM).
 */
import type { HarnessLaunch, HarnessTurn, SessionState } from "@agent-runs/core/ports/AgentHarness"

/** Where the files of a turn go in the agent's home. */
const PROMPT = ".agent-runs/prompt.md"
const SETTINGS = ".gemini/settings.json"
const CONTEXT = ".gemini/GEMINI.md"

const skillDir = (name: string) => name.replace(/[^A-Za-z0-9_.-]/g, "-").replace(/^[.-]+/, "") || "skill"

/** A string of settings.json that Gemini CLI reads back as it is: `$` before a name or `{` escaped. */
const settingsLiteral = (text: string): string => text.replace(/\$(?=[\w{])/g, () => "${AGENT_RUNS_DOLLAR:-$}")

/** The same for `env` and `headers` values, which Gemini CLI also expands dotenv style (`\$` is a `$`). */
const expandedLiteral = (text: string): string => settingsLiteral(text.replace(/\$/g, "\\$"))

const mapValues = (record: Readonly<Record<string, string>> | undefined, f: (text: string) => string) =>
  Object.fromEntries(Object.entries(record ?? {}).map(([key, value]) => [key, f(value)]))

/** Gemini CLI's `mcpServers` of the run's servers. */
export const mcpConfig = (servers: HarnessTurn["mcp_servers"]) =>
  Object.fromEntries(
    Object.entries(servers).map(([name, server]) => [
      name,
      "command" in server && server.command !== undefined
        ? {
          command: settingsLiteral(server.command),
          args: (server.args ?? []).map(settingsLiteral),
          env: mapValues(server.env, expandedLiteral)
        }
        : {
          type: "http",
          url: settingsLiteral((server as { url: string }).url),
          headers: mapValues((server as { headers?: Record<string, string> }).headers, expandedLiteral)
        }
    ])
  )

/** The model's thinking for a reasoning level: Gemini 2.5 takes a token budget, later models a level. */
export const thinkingConfig = (modelId: string, level: NonNullable<HarnessTurn["reasoning_level"]>) => {
  const id = modelId.toLowerCase().replace(/^models\//, "")
  if (/^gemini-2\.5/.test(id)) return { thinkingBudget: { low: 1024, medium: 8192, high: 24576 }[level] }
  if (/^gemini-(1|2)\./.test(id)) return undefined
  if (level === "medium" && /^gemini-3-pro/.test(id)) return { thinkingLevel: "HIGH" }
  return { thinkingLevel: level.toUpperCase() }
}

/** Gemini CLI's user settings for a turn. */
export const settings = (turn: HarnessTurn) => {
  const thinking = turn.model_id !== null && turn.reasoning_level !== null ? thinkingConfig(turn.model_id, turn.reasoning_level) : undefined
  return {
    security: { auth: { selectedType: "gemini-api-key" } },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false, logPrompts: false },
    general: { enableAutoUpdate: false, enableAutoUpdateNotification: false, maxAttempts: 3 },
    ide: { enabled: false },
    ...(Object.keys(turn.mcp_servers).length > 0 ? { mcpServers: mcpConfig(turn.mcp_servers) } : {}),
    ...(thinking === undefined || turn.model_id === null
      ? {}
      : { modelConfigs: { overrides: [{ match: { model: turn.model_id }, modelConfig: { generateContentConfig: { thinkingConfig: thinking } } }] } })
  }
}

/** The base prompt as a context file: an `@` starting a word would import a file. */
export const contextFile = (basePrompt: string): string => basePrompt.replace(/(^|[ \t\r\n])@(?=[./A-Za-z])/g, "$1\u200B@")

/** The skill's file; front matter from the skill's name and description when it has none. */
const skillFile = (skill: NonNullable<HarnessTurn["skill"]>): string =>
  /^---\r?\n/.test(skill.content)
    ? skill.content
    : `---\nname: ${JSON.stringify(skill.name)}\ndescription: ${JSON.stringify(skill.description)}\n---\n\n${skill.content}`

/** The first message tells where the run's attachments are. */
export const withAttachments = (turn: HarnessTurn): string =>
  turn.session_id !== null || turn.attachments.length === 0
    ? turn.message
    : `${turn.message}\n\nAttached files (in the work directory):\n${turn.attachments.map((a) => `- ${a.path} (${a.media_type})`).join("\n")}`

/**
 * Gemini CLI's sessions (and its shell history), owned by the new work directory after a restore:
 * one project directory per base directory (others merged into it), its `.project_root` the new
 * path, the cache of projects dropped (Gemini CLI finds the directory by its `.project_root`). The
 * session must be there: a chat file that names it (`"sessionId":"ID"`).
 */
export const sessionState: SessionState = {
  paths: [".gemini/tmp", ".gemini/history"],
  afterRestore: [
    `k="$(pwd -P)"; d="$HOME/.gemini"; rm -f "$d/projects.json"`,
    `for b in "$d/tmp" "$d/history"; do s=""`,
    `  for p in "$b"/*; do [ -L "$p" ] && { rm -f "$p"; continue; }; [ -d "$p" ] || continue; if [ -z "$s" ]; then s="$p"; else cp -a "$p"/. "$s"/ && rm -rf "$p"; fi; done`,
    `  [ -z "$s" ] || printf '%s' "$k" > "$s/.project_root"`,
    `done`,
    `grep -qsF -e '"sessionId":"'"$1"'"' -e '"sessionId": "'"$1"'"' "$d"/tmp/*/chats/*`
  ].join("\n")
}

export const launch = (command: string) => (turn: HarnessTurn): HarnessLaunch => {
  const files: Array<{ path: string; content: string }> = [
    { path: PROMPT, content: withAttachments(turn) },
    { path: SETTINGS, content: JSON.stringify(settings(turn), null, 2) }
  ]
  const argv = [command, "-p", "", "--output-format", "stream-json", "--yolo"]
  if (turn.session_id !== null) argv.push("--resume", turn.session_id)
  if (turn.model_id !== null) argv.push("-m", turn.model_id)
  for (const name of Object.keys(turn.mcp_servers)) argv.push("--allowed-mcp-server-names", name)
  if (turn.base_prompt !== null && turn.base_prompt.trim() !== "") files.push({ path: CONTEXT, content: contextFile(turn.base_prompt) })
  if (turn.skill !== null) files.push({ path: `.gemini/skills/${skillDir(turn.skill.name)}/SKILL.md`, content: skillFile(turn.skill) })
  const env: Record<string, string> = {
    GEMINI_CLI_TRUST_WORKSPACE: "true",
    GEMINI_CLI_NO_RELAUNCH: "true"
  }
  if (turn.auth !== null) env.GEMINI_API_KEY = turn.auth
  return { command: argv, env, files, stdin: PROMPT }
}
