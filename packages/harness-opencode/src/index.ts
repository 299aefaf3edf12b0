/**
 * @agent-runs/harness-opencode: opencode (`opencode-ai`) as an Agent Runs harness
 * (`config.harness.type: "opencode"`). Give `opencodeHarness()` to the service's `AgentHarnesses`;
 * the `opencode` command must be on the sandbox's `PATH` (or pass its path). The model endpoint,
 * an OpenAI-compatible Chat Completions API, is `OPENCODE_BASE_URL` of the environment's variables
 * (with its `/v1`); the auth secret, when there is one, its key.
 */
import type { AgentHarness } from "@agent-runs/core/ports/AgentHarness"
import { decoder } from "./OpencodeEvents.js"
import { launch, sessionState } from "./OpencodeLaunch.js"

export interface OpencodeHarnessOptions {
  /** The command that starts opencode in the sandbox; default `opencode`. */
  readonly command?: string
}

export const opencodeHarness = (options: OpencodeHarnessOptions = {}): AgentHarness => ({
  type: "opencode",
  launch: launch(options.command ?? "opencode"),
  decoder,
  sessionState: sessionState(options.command ?? "opencode")
})

export { decoder as opencodeDecoder } from "./OpencodeEvents.js"
export {
  API_KEY_VARIABLE as OPENCODE_API_KEY_VARIABLE,
  BASE_URL_VARIABLE as OPENCODE_BASE_URL_VARIABLE,
  config as opencodeConfig,
  launch as opencodeLaunch,
  mcpConfig as opencodeMcpConfig,
  modelOf as opencodeModelOf,
  sessionState as opencodeSessionState
} from "./OpencodeLaunch.js"
