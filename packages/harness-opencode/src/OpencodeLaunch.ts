/**
 * The command line of opencode for one turn (docs/harnesses.md#opencode):
 * `opencode run --format json --auto --model PROVIDER/MODEL`, the message on stdin (opencode reads
 * it there when no message is in argv, so prompts of any size work; a message in argv would come
 * to the model with quotes around it); `--session SESSION` for a follow-up, else `--title "Agent
 * run"` (without a title opencode first asks the model for one). `--auto` approves
 * what opencode would ask about (nobody is there to answer; the run's sandbox is the isolation);
 * `--variant LEVEL` for the reasoning level. Everything else is in opencode's global configuration,
 * `~/.config/opencode/opencode.json` (`$XDG_CONFIG_HOME/opencode`), written for every turn:
 * - the model: `model_id` `MODEL` (or `local/MODEL`) is the model `MODEL` of our provider `local`
 *   (`@ai-sdk/openai-compatible`, built into opencode: `POST {baseURL}/chat/completions`), declared
 *   in its `models` (with `reasoning: true` when a reasoning level is set, so that `--variant`
 *   sends `reasoning_effort`); `model_id` `PROVIDER/MODEL` with another provider is opencode's
 *   built-in provider as it is (`anthropic/claude-sonnet-4-5`, `openrouter/…`: opencode's bundled
 *   catalogue, that provider's own endpoint). A model id with a slash served by the endpoint (a
 *   gateway's `qwen/qwen3-coder`) is `local/qwen/qwen3-coder`. Without `model_id` the model is
 *   `default` at the endpoint (servers of one model, llama.cpp's, ignore the name). Only that
 *   provider is enabled (`enabled_providers`), for the small model too;
 * - the endpoint: `baseURL` is `{env:OPENCODE_BASE_URL}` (opencode substitutes the variable when
 *   it reads the file), a variable of the environment, with its `/v1`
 *   (`http://127.0.0.1:8000/v1`); the key is `{env:OPENCODE_API_KEY}`, the auth secret, sent as
 *   `Authorization: Bearer` (no header without one: a local server may need no key). For a
 *   built-in provider the auth secret is its `apiKey` (without one, the provider's own variable);
 * - the base prompt as an `instructions` file (added to opencode's system prompt, which stays);
 * - the MCP servers under `mcp` (stdio: `type: "local"`, `command` with the args, `environment`;
 *   HTTP: `type: "remote"`, `url`, `headers`); opencode offers their tools as `NAME_TOOL`;
 * - the skill as `~/.config/opencode/skills/NAME/SKILL.md`, where opencode finds skills (front
 *   matter with `name` and `description` added when the skill's own lacks them: opencode lists only
 *   skills that have both).
 *
 * Offline: opencode contacts nothing but the model endpoint (and the MCP servers). No update
 * check (`autoupdate: false`, `OPENCODE_DISABLE_AUTOUPDATE`), no model catalogue download
 * (`OPENCODE_DISABLE_MODELS_FETCH`: the one built into opencode is used), no default plugins, LSP
 * downloads or sharing.
 *
 * Start-up: opencode's model catalogue (models.dev's providers and models, built into the binary
 * as a 4 MB script literal) takes about a third of the CPU of a short turn to load, and our
 * provider `local` is not in it (its model is declared in the configuration). So when the model is
 * ours, the catalogue is an empty file, `~/.agent-runs/models.json` (`{}`), named by
 * `OPENCODE_MODELS_PATH` (the catalogue file opencode reads instead of its cached or bundled one;
 * relative to the work directory, where opencode starts). A built-in provider's model keeps the
 * bundled catalogue: its endpoint, package and limits come from there.
 *
 * At start opencode installs `@opencode-ai/plugin` from the npm registry
 * into each of its configuration directories that has no `node_modules` or whose
 * `package-lock.json` lacks it: a `node_modules/` and a `package-lock.json` naming it are written
 * into `~/.config/opencode`, so there is nothing to install (a repository's own `.opencode/`
 * directory still gets its install). The grep and glob tools download ripgrep when `rg` is not
 * on the sandbox's `PATH`.
 *
 * A refused key fails at once (opencode does not retry a 401); an endpoint that cannot be reached
 * or answers 5xx is retried 5 times with back-off (about a minute; opencode has no setting for it).
 *
 * Sessions are rows of opencode's SQLite database, `~/.local/share/opencode/opencode.db` (and its
 * `-wal`), each with the directory it runs in: restored into a sandbox at another path, `run
 * --session` would answer in the old directory's instance and print nothing. So a continued run's
 * restored sessions are moved to the new work directory first (`sessionState`: `opencode db
 * "UPDATE session SET directory = … RETURNING id"`, offline, a few seconds); a session not among
 * them (`run --session` would fail, "Session not found") starts a new one told the conversation.
 */
import { AGENT_HOME } from "@agent-runs/core/ports/AgentHarness"
import type { HarnessLaunch, HarnessTurn, SessionState } from "@agent-runs/core/ports/AgentHarness"

/** Where the files of a turn go in the agent's home. */
const PROMPT = ".agent-runs/prompt.md"
const SYSTEM = ".agent-runs/system.md"
/** The model catalogue when the model is our provider's: empty (see the module's comment). */
const MODELS = ".agent-runs/models.json"
/** opencode's global configuration directory (`$XDG_CONFIG_HOME/opencode`). */
const CONFIG_DIR = ".config/opencode"

/** Our provider of the endpoint's models in opencode's configuration. */
export const PROVIDER = "local"
/** The variable of the environment that holds the endpoint's URL (with its `/v1`). */
export const BASE_URL_VARIABLE = "OPENCODE_BASE_URL"
/** The variable that carries the auth secret to the configuration. */
export const API_KEY_VARIABLE = "OPENCODE_API_KEY"
/** The model asked for at the endpoint when the run names none. */
export const DEFAULT_MODEL = "default"

const skillDir = (name: string) => name.replace(/[^A-Za-z0-9_.-]/g, "-").replace(/^[.-]+/, "") || "skill"

/** The provider and model of a run's `model_id` (see the module's comment). */
export const modelOf = (modelId: string | null): { readonly provider: string; readonly model: string } => {
  const id = modelId?.trim() ?? ""
  if (id === "") return { provider: PROVIDER, model: DEFAULT_MODEL }
  const slash = id.indexOf("/")
  if (slash <= 0 || slash === id.length - 1) return { provider: PROVIDER, model: id }
  return { provider: id.slice(0, slash), model: id.slice(slash + 1) }
}

/** opencode's `mcp` of the run's servers. */
export const mcpConfig = (servers: HarnessTurn["mcp_servers"]) =>
  Object.fromEntries(
    Object.entries(servers).map(([name, server]) => [
      name,
      "command" in server && server.command !== undefined
        ? { type: "local", command: [server.command, ...(server.args ?? [])], environment: server.env ?? {}, enabled: true }
        : {
          type: "remote",
          url: (server as { url: string }).url,
          headers: (server as { headers?: Record<string, string> }).headers ?? {},
          enabled: true
        }
    ])
  )

/** opencode's configuration for a turn. */
export const config = (turn: HarnessTurn): Record<string, unknown> => {
  const { model, provider } = modelOf(turn.model_id)
  const ref = `${provider}/${model}`
  const providers = provider === PROVIDER
    ? {
      [PROVIDER]: {
        npm: "@ai-sdk/openai-compatible",
        name: "Agent Runs endpoint",
        options: { baseURL: `{env:${BASE_URL_VARIABLE}}`, apiKey: `{env:${API_KEY_VARIABLE}}` },
        models: { [model]: { name: model, ...(turn.reasoning_level === null ? {} : { reasoning: true }) } }
      }
    }
    : turn.auth === null
    ? {}
    : { [provider]: { options: { apiKey: `{env:${API_KEY_VARIABLE}}` } } }
  return {
    $schema: "https://opencode.ai/config.json",
    model: ref,
    small_model: ref,
    enabled_providers: [provider],
    provider: providers,
    autoupdate: false,
    share: "disabled",
    ...(turn.base_prompt === null || turn.base_prompt.trim() === "" ? {} : { instructions: [`~/${SYSTEM}`] }),
    ...(Object.keys(turn.mcp_servers).length === 0 ? {} : { mcp: mcpConfig(turn.mcp_servers) })
  }
}

/** The skill's file, with front matter opencode takes (`name` and `description`). */
export const skillFile = (skill: NonNullable<HarnessTurn["skill"]>): string => {
  const front = /^---\r?\n([\s\S]*?)\r?\n---(?:\r?\n|$)/.exec(skill.content)?.[1]
  if (front !== undefined && /^name:\s*\S/m.test(front) && /^description:\s*\S/m.test(front)) return skill.content
  const body = front === undefined ? skill.content : skill.content.slice(skill.content.indexOf("---", 3) + 3).replace(/^\r?\n/, "")
  const description = skill.description.trim() === "" ? skill.name : skill.description
  return `---\nname: ${JSON.stringify(skill.name)}\ndescription: ${JSON.stringify(description)}\n---\n\n${body}`
}

/** The first message tells where the run's attachments are. */
export const withAttachments = (turn: HarnessTurn): string =>
  turn.session_id !== null || turn.attachments.length === 0
    ? turn.message
    : `${turn.message}\n\nAttached files (in the work directory):\n${turn.attachments.map((a) => `- ${a.path} (${a.media_type})`).join("\n")}`

/** The title of a new session (none of the message: argv is visible to the sandbox's processes). */
export const TITLE = "Agent run"

/** What keeps opencode offline (see the module's comment). */
const OFFLINE: Readonly<Record<string, string>> = {
  // No check for a newer opencode, and no self-update.
  OPENCODE_DISABLE_AUTOUPDATE: "1",
  // No download of models.dev's catalogue at start (and every hour after).
  OPENCODE_DISABLE_MODELS_FETCH: "1",
  // None of opencode's built-in plugins (sign-ins to providers such as ChatGPT or Copilot).
  OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
  // No language server downloaded when a file of its language is touched.
  OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
  // Sessions are never shared (uploaded to opencode's share service).
  OPENCODE_DISABLE_SHARE: "1"
}

/** opencode's database, relative to the agent's home. */
const DATABASE = ".local/share/opencode/opencode.db"

const shellQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`

/**
 * opencode's sessions, moved to the new work directory after a restore (`path`: relative to the
 * project's worktree); the session to resume must be among them (`RETURNING` lists the ids moved).
 */
export const sessionState = (command: string): SessionState => ({
  paths: [DATABASE, `${DATABASE}-wal`],
  afterRestore: [
    `d="$(pwd | sed "s/'/''/g")"`,
    `${Object.entries(OFFLINE).map(([k, v]) => `${k}=${v}`).join(" ")} ${shellQuote(command)} db ` +
    `"UPDATE session SET directory = '$d', path = ltrim(substr('$d', length(coalesce((SELECT worktree FROM project ` +
    `WHERE project.id = session.project_id), '')) + 1), '/') RETURNING id" < /dev/null | grep -xF -- "$1" > /dev/null`
  ].join("\n")
})

export const launch = (command: string) => (turn: HarnessTurn): HarnessLaunch => {
  const { model, provider } = modelOf(turn.model_id)
  const files: Array<{ path: string; content: string }> = [
    { path: PROMPT, content: withAttachments(turn) },
    { path: `${CONFIG_DIR}/opencode.json`, content: JSON.stringify(config(turn), null, 2) },
    // Nothing to install: see the module's comment.
    { path: `${CONFIG_DIR}/node_modules/.agent-runs`, content: "" },
    {
      path: `${CONFIG_DIR}/package-lock.json`,
      content: JSON.stringify({ lockfileVersion: 3, requires: true, packages: { "": { dependencies: { "@opencode-ai/plugin": "*" } } } })
    }
  ]
  const env: Record<string, string> = { ...OFFLINE }
  if (provider === PROVIDER) {
    // The catalogue of models.dev is not needed for our provider: see the module's comment.
    files.push({ path: MODELS, content: "{}" })
    env.OPENCODE_MODELS_PATH = `${AGENT_HOME}/${MODELS}`
  }
  if (turn.base_prompt !== null && turn.base_prompt.trim() !== "") files.push({ path: SYSTEM, content: turn.base_prompt })
  if (turn.skill !== null) files.push({ path: `${CONFIG_DIR}/skills/${skillDir(turn.skill.name)}/SKILL.md`, content: skillFile(turn.skill) })
  const argv = [command, "run", "--format", "json", "--auto", "--model", `${provider}/${model}`]
  if (turn.session_id !== null) argv.push("--session", turn.session_id)
  else argv.push("--title", TITLE)
  if (turn.reasoning_level !== null) argv.push("--variant", turn.reasoning_level)
  if (turn.auth !== null) env[API_KEY_VARIABLE] = turn.auth
  return { command: argv, env, files, stdin: PROMPT }
}
