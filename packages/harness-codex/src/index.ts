/**
 * @agent-runs/harness-codex: Codex (`@openai/codex`) as an Agent Runs harness
 * (`config.harness.type: "codex"`). Give `codexHarness()` to the service's `AgentHarnesses`; the
 * `codex` command must be on the sandbox's `PATH` (or pass its path), and `/bin/sh` there (the
 * command line reads the endpoint, `OPENAI_BASE_URL`, from the environment's variables).
 */
import type { AgentHarness } from "@agent-runs/core/ports/AgentHarness"
import { decoder } from "./CodexEvents.js"
import { launch, sessionState } from "./CodexLaunch.js"

export interface CodexHarnessOptions {
  /** The command that starts Codex in the sandbox; default `codex`. */
  readonly command?: string
}

export const codexHarness = (options: CodexHarnessOptions = {}): AgentHarness => ({
  type: "codex",
  launch: launch(options.command ?? "codex"),
  decoder,
  sessionState
})

export { decoder as codexDecoder } from "./CodexEvents.js"
export { config as codexConfig, launch as codexLaunch, mcpConfig as codexMcpConfig, sessionState as codexSessionState } from "./CodexLaunch.js"
