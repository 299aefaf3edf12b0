/**
 * @agent-runs/harness-claude: Claude Code (`@anthropic-ai/claude-code`) as an Agent Runs harness
 * (`config.harness.type: "claude"`). Give `claudeHarness()` to the service's `AgentHarnesses`; the
 * `claude` command must be on the sandbox's `PATH` (or pass its path).
 */
import type { AgentHarness } from "@agent-runs/core/ports/AgentHarness"
import { decoder } from "./ClaudeEvents.js"
import { launch, sessionState } from "./ClaudeLaunch.js"

export interface ClaudeHarnessOptions {
  /** The command that starts Claude Code in the sandbox; default `claude`. */
  readonly command?: string
}

export const claudeHarness = (options: ClaudeHarnessOptions = {}): AgentHarness => ({
  type: "claude",
  launch: launch(options.command ?? "claude"),
  decoder,
  sessionState
})

export { decoder as claudeDecoder } from "./ClaudeEvents.js"
export { launch as claudeLaunch, mcpConfig as claudeMcpConfig } from "./ClaudeLaunch.js"
