/** Codex itself (the pinned devDependency) against the fake OpenAI Responses server. */
import { harnessSuite } from "@agent-runs/core/testing"
import { ProcessExecutor } from "@agent-runs/executor-process"
import { cliPath, fakeModel } from "@agent-runs/testing"
import * as Path from "node:path"
import { codexHarness } from "../src/index.js"

harnessSuite("Codex", {
  harness: codexHarness({ command: cliPath("@openai/codex", "codex") }),
  missing: codexHarness({ command: "/nonexistent/codex" }),
  executor: (root) => ProcessExecutor.layer({ root: Path.join(root, "sandboxes"), reposDir: Path.join(root, "repos") }),
  model: fakeModel,
  endpoint: (url) => ({ OPENAI_BASE_URL: `${url}/v1` }),
  model_id: "gpt-5-codex"
})
