/**
 * @agent-runs/harness-gemini: Gemini CLI (`@google/gemini-cli`) as an Agent Runs harness
 * (`config.harness.type: "gemini"`). Give `geminiHarness()` to the service's `AgentHarnesses`; the
 * `gemini` command must be on the sandbox's `PATH` (or pass its path).
 */
import type { AgentHarness } from "@agent-runs/core/ports/AgentHarness"
import { decoder } from "./GeminiEvents.js"
import { launch, sessionState } from "./GeminiLaunch.js"

export interface GeminiHarnessOptions {
  /** The command that starts Gemini CLI in the sandbox; default `gemini`. */
  readonly command?: string
}

export const geminiHarness = (options: GeminiHarnessOptions = {}): AgentHarness => ({
  type: "gemini",
  launch: launch(options.command ?? "gemini"),
  decoder,
  sessionState
})

export { decoder as geminiDecoder } from "./GeminiEvents.js"
export { launch as geminiLaunch, mcpConfig as geminiMcpConfig, sessionState as geminiSessionState, settings as geminiSettings } from "./GeminiLaunch.js"
