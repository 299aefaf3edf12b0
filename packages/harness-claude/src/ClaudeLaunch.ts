/**
 * The command line of Claude Code for one turn (docs/harnesses.md#claude-code):
 * `claude -p --output-format stream-json --verbose --permission-mode bypassPermissions`, the
 * message on stdin, `--resume SESSION` for a follow-up, `--model`, `--effort` for the reasoning
 * level, the base prompt appended to the system prompt from a file, the MCP servers in a JSON file
 * (`--mcp-config`, `--strict-mcp-config`: only the run's servers), the skill as
 * `~/.claude/skills/NAME/SKILL.md`, where Claude Code finds skills.
 *
 * Sessions are files under `~/.claude/projects/<the work directory's path, each character other
 * than a letter or digit a '-'>/`: a continued run's restored sessions are moved under the new
 * work directory's name before its first turn (`sessionState`).
 *
 * The auth secret is `ANTHROPIC_API_KEY`, or `CLAUDE_CODE_OAUTH_TOKEN` for an OAuth token
 * (`sk-ant-oat…`). `ANTHROPIC_BASE_URL` (a proxy, a gateway) comes from the environment's
 * variables. Retries of a failing model request are capped at 2 (`CLAUDE_CODE_MAX_RETRIES`): the
 * default, 10 with back-off, keeps a run with a refused key going for minutes. Update checks,
 * telemetry and error reports are off. `IS_SANDBOX=1` lets it bypass permissions as root.
 */
import type { HarnessLaunch, HarnessTurn, SessionState } from "@agent-runs/core/ports/AgentHarness"
import { AGENT_HOME } from "@agent-runs/core/ports/AgentHarness"

/** Where the files of a turn go in the agent's home. */
const PROMPT = ".agent-runs/prompt.md"
const SYSTEM = ".agent-runs/system.md"
const MCP = ".agent-runs/mcp.json"

/** A path of the agent's home as the CLI sees it from the work directory. */
const fromWorkdir = (path: string) => `${AGENT_HOME}/${path}`

const skillDir = (name: string) => name.replace(/[^A-Za-z0-9_.-]/g, "-").replace(/^[.-]+/, "") || "skill"

/** Claude Code's `mcpServers` of the run's servers. */
export const mcpConfig = (servers: HarnessTurn["mcp_servers"]) => ({
  mcpServers: Object.fromEntries(
    Object.entries(servers).map(([name, server]) => [
      name,
      "command" in server && server.command !== undefined
        ? { type: "stdio", command: server.command, args: server.args ?? [], env: server.env ?? {} }
        : { type: "http", url: (server as { url: string }).url, headers: (server as { headers?: Record<string, string> }).headers ?? {} }
    ])
  )
})

/** The first message tells where the run's attachments are. */
export const withAttachments = (turn: HarnessTurn): string =>
  turn.session_id !== null || turn.attachments.length === 0
    ? turn.message
    : `${turn.message}\n\nAttached files (in the work directory):\n${turn.attachments.map((a) => `- ${a.path} (${a.media_type})`).join("\n")}`

/** Claude Code's sessions, moved to the new work directory's project after a restore; the session must be there. */
export const sessionState: SessionState = {
  paths: [".claude/projects"],
  afterRestore: [
    `k="$(pwd -P | sed 's/[^A-Za-z0-9]/-/g')"; d="$HOME/.claude/projects"`,
    `for p in "$d"/*; do [ -L "$p" ] && { rm -f "$p"; continue; }; [ "$p" = "$d/$k" ] || { mkdir -p "$d/$k" && cp -a "$p"/. "$d/$k"/ && rm -rf "$p"; }; done`,
    `[ -f "$d/$k/$1.jsonl" ]`
  ].join("\n")
}

export const launch = (command: string) => (turn: HarnessTurn): HarnessLaunch => {
  const files: Array<{ path: string; content: string }> = [{ path: PROMPT, content: withAttachments(turn) }]
  const argv = [command, "-p", "--output-format", "stream-json", "--verbose", "--permission-mode", "bypassPermissions"]
  if (turn.session_id !== null) argv.push("--resume", turn.session_id)
  if (turn.model_id !== null) argv.push("--model", turn.model_id)
  if (turn.reasoning_level !== null) argv.push("--effort", turn.reasoning_level)
  if (turn.base_prompt !== null && turn.base_prompt.trim() !== "") {
    files.push({ path: SYSTEM, content: turn.base_prompt })
    argv.push("--append-system-prompt-file", fromWorkdir(SYSTEM))
  }
  if (Object.keys(turn.mcp_servers).length > 0) {
    files.push({ path: MCP, content: JSON.stringify(mcpConfig(turn.mcp_servers)) })
    argv.push("--mcp-config", fromWorkdir(MCP), "--strict-mcp-config")
  }
  if (turn.skill !== null) files.push({ path: `.claude/skills/${skillDir(turn.skill.name)}/SKILL.md`, content: turn.skill.content })
  const env: Record<string, string> = {
    IS_SANDBOX: "1",
    CLAUDE_CODE_MAX_RETRIES: "2",
    DISABLE_AUTOUPDATER: "1",
    DISABLE_TELEMETRY: "1",
    DISABLE_ERROR_REPORTING: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1"
  }
  if (turn.auth !== null) env[turn.auth.startsWith("sk-ant-oat") ? "CLAUDE_CODE_OAUTH_TOKEN" : "ANTHROPIC_API_KEY"] = turn.auth
  return { command: argv, env, files, stdin: PROMPT }
}
