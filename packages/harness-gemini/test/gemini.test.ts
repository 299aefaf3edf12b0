/** Gemini CLI itself (the pinned devDependency) against the fake Gemini API server. */
import { harnessSuite } from "@agent-runs/core/testing"
import { ProcessExecutor } from "@agent-runs/executor-process"
import { cliPath, fakeModel } from "@agent-runs/testing"
import * as Path from "node:path"
import { geminiHarness } from "../src/index.js"

harnessSuite("Gemini CLI", {
  harness: geminiHarness({ command: cliPath("@google/gemini-cli", "gemini") }),
  missing: geminiHarness({ command: "/nonexistent/gemini" }),
  executor: (root) => ProcessExecutor.layer({ root: Path.join(root, "sandboxes"), reposDir: Path.join(root, "repos") }),
  model: fakeModel,
  endpoint: (url) => ({ GOOGLE_GEMINI_BASE_URL: url }),
  model_id: "gemini-2.5-flash"
})
