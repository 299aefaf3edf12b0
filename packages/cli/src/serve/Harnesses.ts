/**
 * The agent CLIs the bundled server runs (`config.harness.type`), each started by its command on
 * the sandbox's `PATH`: `claude`, `codex`, `gemini`, `opencode` (the agent image has all four;
 * on local processes, install them where the service's `PATH` finds them). Composition only.
 */
import { AgentHarnesses } from "@agent-runs/core/ports/AgentHarness"
import { claudeHarness } from "@agent-runs/harness-claude"
import { codexHarness } from "@agent-runs/harness-codex"
import { geminiHarness } from "@agent-runs/harness-gemini"
import { opencodeHarness } from "@agent-runs/harness-opencode"
import { Layer } from "effect"

export const HarnessesLive = Layer.succeed(AgentHarnesses, new Map([
  ["claude", claudeHarness()],
  ["codex", codexHarness()],
  ["gemini", geminiHarness()],
  ["opencode", opencodeHarness()]
] as const))
