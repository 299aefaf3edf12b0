/** Claude Code itself (the pinned devDependency) against the fake Anthropic Messages server. */
import { harnessSuite } from "@agent-runs/core/testing"
import { ProcessExecutor } from "@agent-runs/executor-process"
import { cliPath, fakeModel } from "@agent-runs/testing"
import * as Path from "node:path"
import { claudeHarness } from "../src/index.js"

harnessSuite("Claude Code", {
  harness: claudeHarness({ command: cliPath("@anthropic-ai/claude-code", "claude") }),
  missing: claudeHarness({ command: "/nonexistent/claude" }),
  executor: (root) => ProcessExecutor.layer({ root: Path.join(root, "sandboxes"), reposDir: Path.join(root, "repos") }),
  model: fakeModel,
  endpoint: (url) => ({ ANTHROPIC_BASE_URL: url }),
  model_id: "claude-sonnet-4-5"
})
