/**
 * The command line of Codex for one turn (docs/harnesses.md#codex):
 * `codex exec --json --skip-git-repo-check -`, the message on stdin (`-`: read it there, so that
 * prompts of any size work); `codex exec --json --skip-git-repo-check resume SESSION -` for a
 * follow-up. Everything else is in `~/.codex/config.toml` (Codex's home, `CODEX_HOME`, in the
 * agent's home), written for every turn:
 * - `model` from `model_id`, `model_reasoning_effort` from `reasoning_level`;
 * - `sandbox_mode = "danger-full-access"` and `approval_policy = "never"`: the run's sandbox is the
 *   isolation, and nobody is there to approve (set in the file, not as `-s`: `exec resume` takes
 *   no `--sandbox`);
 * - the base prompt as `developer_instructions` (a developer message in every model call, after
 *   Codex's own instructions, which stay: `model_instructions_file` would replace them);
 * - the MCP servers as `[mcp_servers.NAME]` (stdio: `command`, `args`, `env`; HTTP: `url`,
 *   `http_headers`); a name is reduced to letters, digits, `_` and `-` (Codex offers the tools as
 *   `mcp__NAME`);
 * - the skill as `~/.codex/skills/NAME/SKILL.md`, where Codex finds skills (it lists them in its
 *   instructions; the base prompt carries the skill's body too);
 * - no update checks, analytics or feedback uploads, no plugins (at start Codex syncs its plugin
 *   marketplace from github.com and chatgpt.com) and no ChatGPT apps (connectors): nothing but
 *   the model endpoint and the run's MCP servers is called.
 *
 * The model endpoint is a provider of our own, `agent-runs` (`wire_api = "responses"`, `POST
 * {base_url}/responses`), not Codex's built-in `openai`: that one ignores `OPENAI_BASE_URL` in
 * 0.169.0 (it went to api.openai.com) and tries a WebSocket first. The auth secret is
 * `OPENAI_API_KEY`, the provider's `env_key` (sent as `Authorization: Bearer`). Its retries are
 * capped at 1 (`request_max_retries`, `stream_max_retries`; the defaults are 4 and 5, with
 * back-off, and Codex retries a 401 too): a refused key fails the turn in about 2 s. Unbounded
 * retries are off (`features.unbounded_connection_retries`, on by default): with it an endpoint
 * that cannot be reached keeps Codex "waiting for network" for ever; without, the turn fails in
 * about 5 s.
 *
 * The endpoint comes from the environment's variables: `OPENAI_BASE_URL` (with its `/v1`, as the
 * OpenAI SDKs take it; default `https://api.openai.com/v1`). A launch is pure and cannot see the
 * sandbox's variables, and Codex reads no variable for a custom provider's URL, so the command is a
 * small `/bin/sh -c` wrapper that passes it as `-c model_providers.agent-runs.base_url="…"` (and
 * sets `CODEX_HOME` to `$HOME/.codex`, whatever the environment says), then execs Codex.
 *
 * Sessions: Codex keeps each thread as a file, `~/.codex/sessions/YYYY/MM/DD/rollout-…-THREAD.jsonl`,
 * and `exec resume THREAD` finds it there whatever the work directory (its other files, SQLite
 * caches, are not needed). A continued run gets `~/.codex/sessions` back (`sessionState`) and
 * resumes the thread when its file is there. A resumed thread's `turn.completed` reports the
 * thread's totals since it began, earlier executions' tokens included: before resuming, the
 * wrapper prints the totals the thread's file holds (its last `total_token_usage`) as a line of
 * ours, `{"type":"agent-runs.thread_totals","thread_id","usage"}`, which the decoder
 * (CodexEvents.ts) counts from instead of zero.
 */
import type { HarnessLaunch, HarnessTurn, SessionState } from "@agent-runs/core/ports/AgentHarness"

/** Where the files of a turn go in the agent's home. */
const PROMPT = ".agent-runs/prompt.md"
const CONFIG = ".codex/config.toml"

/** Our model provider in Codex's configuration. */
export const PROVIDER = "agent-runs"

/** The endpoint when the environment sets none. */
export const DEFAULT_BASE_URL = "https://api.openai.com/v1"

/** The type of the line the wrapper prints before resuming a thread: the totals its file holds. */
export const THREAD_TOTALS = "agent-runs.thread_totals"

/** The files of thread `$t` in Codex's home (one, unless Codex split it). */
const THREAD_FILES = `"$HOME"/.codex/sessions/*/*/*/rollout-*-"$t".jsonl`

/**
 * Runs `codex ARGS… [resume THREAD] -` (`$1` the command, `$2` the thread to resume or empty) with
 * Codex's home in the agent's home and the provider's URL from `OPENAI_BASE_URL` (without a
 * trailing `/`); before resuming, prints the thread's totals so far (see the module's comment).
 */
const WRAPPER = [
  `u="\${OPENAI_BASE_URL:-${DEFAULT_BASE_URL}}"`,
  `CODEX_HOME="$HOME/.codex"; export CODEX_HOME`,
  `c="$1"; t="$2"; shift 2`,
  `if [ -n "$t" ]; then`,
  `  n="$(cat ${THREAD_FILES} 2>/dev/null | sed -n 's/.*"total_token_usage":\\({[^}]*}\\).*/\\1/p' | tail -n 1)"`,
  `  [ -z "$n" ] || printf '{"type":"${THREAD_TOTALS}","thread_id":"%s","usage":%s}\\n' "$t" "$n"`,
  `  set -- "$@" resume "$t"`,
  `fi`,
  `exec "$c" exec -c "model_providers.${PROVIDER}.base_url=\\"\${u%/}\\"" "$@" -`
].join("\n")

/** Codex's threads, resumable in a continued run when the thread's file is among them. */
export const sessionState: SessionState = {
  paths: [".codex/sessions"],
  afterRestore: `t="$1"; for f in ${THREAD_FILES}; do [ -f "$f" ] && exit 0; done; exit 1`
}

const safeName = (name: string) => name.replace(/[^A-Za-z0-9_-]/g, "-").replace(/^-+/, "") || "server"

const skillDir = (name: string) => name.replace(/[^A-Za-z0-9_.-]/g, "-").replace(/^[.-]+/, "") || "skill"

/** A TOML basic string (lone surrogates replaced, DEL escaped: TOML takes neither as they are). */
export const tomlString = (text: string): string =>
  JSON.stringify(text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd"))
    .replace(/\u007f/g, "\\u007f")

const tomlArray = (items: ReadonlyArray<string>) => `[${items.map(tomlString).join(", ")}]`

const tomlTable = (entries: Readonly<Record<string, string>>) =>
  `{ ${Object.entries(entries).map(([k, v]) => `${tomlString(k)} = ${tomlString(v)}`).join(", ")} }`

/** `[mcp_servers.NAME]` tables of the run's servers (names made unique after reducing them). */
export const mcpConfig = (servers: HarnessTurn["mcp_servers"]): string => {
  const taken = new Set<string>()
  return Object.entries(servers).map(([name, server]) => {
    let key = safeName(name)
    for (let n = 2; taken.has(key); n++) key = `${safeName(name)}-${n}`
    taken.add(key)
    const lines = [`[mcp_servers.${tomlString(key)}]`]
    if ("command" in server && server.command !== undefined) {
      lines.push(`command = ${tomlString(server.command)}`, `args = ${tomlArray(server.args ?? [])}`)
      if (server.env !== undefined && Object.keys(server.env).length > 0) lines.push(`env = ${tomlTable(server.env)}`)
    } else {
      const http = server as { url: string; headers?: Record<string, string> }
      lines.push(`url = ${tomlString(http.url)}`)
      if (http.headers !== undefined && Object.keys(http.headers).length > 0) lines.push(`http_headers = ${tomlTable(http.headers)}`)
    }
    return lines.join("\n")
  }).join("\n\n")
}

/** Codex's `config.toml` for a turn. */
export const config = (turn: HarnessTurn): string => {
  const lines = [
    `model_provider = ${tomlString(PROVIDER)}`,
    ...(turn.model_id === null ? [] : [`model = ${tomlString(turn.model_id)}`]),
    ...(turn.reasoning_level === null ? [] : [`model_reasoning_effort = ${tomlString(turn.reasoning_level)}`]),
    `sandbox_mode = "danger-full-access"`,
    `approval_policy = "never"`,
    `check_for_update_on_startup = false`,
    ...(turn.base_prompt === null || turn.base_prompt.trim() === "" ? [] : [`developer_instructions = ${tomlString(turn.base_prompt)}`]),
    "",
    "[analytics]",
    "enabled = false",
    "",
    "[feedback]",
    "enabled = false",
    "",
    "[features]",
    "plugins = false",
    "apps = false",
    "unbounded_connection_retries = false",
    "",
    `[model_providers.${tomlString(PROVIDER)}]`,
    `name = "Agent Runs endpoint"`,
    `base_url = ${tomlString(DEFAULT_BASE_URL)}`,
    `env_key = "OPENAI_API_KEY"`,
    `wire_api = "responses"`,
    "request_max_retries = 1",
    "stream_max_retries = 1"
  ]
  const mcp = mcpConfig(turn.mcp_servers)
  return `${lines.join("\n")}\n${mcp === "" ? "" : `\n${mcp}\n`}`
}

/** The first message tells where the run's attachments are. */
export const withAttachments = (turn: HarnessTurn): string =>
  turn.session_id !== null || turn.attachments.length === 0
    ? turn.message
    : `${turn.message}\n\nAttached files (in the work directory):\n${turn.attachments.map((a) => `- ${a.path} (${a.media_type})`).join("\n")}`

export const launch = (command: string) => (turn: HarnessTurn): HarnessLaunch => {
  const files: Array<{ path: string; content: string }> = [
    { path: PROMPT, content: withAttachments(turn) },
    { path: CONFIG, content: config(turn) }
  ]
  if (turn.skill !== null) files.push({ path: `.codex/skills/${skillDir(turn.skill.name)}/SKILL.md`, content: turn.skill.content })
  const argv = ["/bin/sh", "-c", WRAPPER, "codex", command, turn.session_id ?? "", "--json", "--skip-git-repo-check"]
  const env: Record<string, string> = {}
  if (turn.auth !== null) env.OPENAI_API_KEY = turn.auth
  return { command: argv, env, files, stdin: PROMPT }
}
