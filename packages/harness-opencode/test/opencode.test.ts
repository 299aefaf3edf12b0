/** opencode itself (the pinned devDependency) against the fake OpenAI Chat Completions server. */
import { harnessSuite } from "@agent-runs/core/testing"
import { ProcessExecutor } from "@agent-runs/executor-process"
import { cliPath, fakeModel } from "@agent-runs/testing"
import * as Path from "node:path"
import { opencodeHarness } from "../src/index.js"

harnessSuite("opencode", {
  harness: opencodeHarness({ command: cliPath("opencode-ai", "opencode") }),
  missing: opencodeHarness({ command: "/nonexistent/opencode" }),
  executor: (root) => ProcessExecutor.layer({ root: Path.join(root, "sandboxes"), reposDir: Path.join(root, "repos") }),
  model: fakeModel,
  endpoint: (url) => ({ OPENCODE_BASE_URL: `${url}/v1` }),
  model_id: "fake-model",
  // opencode starts slower than the other CLIs (a bundled Bun runtime, its SQLite database, a
  // local server it talks to): 10 to 20 s a turn here, more on a loaded machine.
  timeoutMs: 180_000
})
