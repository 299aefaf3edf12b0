/**
 * opencode itself (the pinned devDependency) against the fake OpenAI Chat Completions server,
 * composed as a deployment does: `opencode` found on the sandbox's PATH (its npm package's
 * directory first, not among the system directories).
 */
import { harnessSuite } from "@agent-runs/core/testing"
import { ProcessExecutor } from "@agent-runs/executor-process"
import { cliPath, fakeModel } from "@agent-runs/testing"
import * as Path from "node:path"
import { opencodeHarness } from "../src/index.js"

const PATH = `${Path.dirname(cliPath("opencode-ai", "opencode"))}:${process.env.PATH ?? "/usr/bin:/bin"}`

harnessSuite("opencode", {
  harness: opencodeHarness(),
  missing: opencodeHarness({ command: "/nonexistent/opencode" }),
  executor: (root) => ProcessExecutor.layer({ root: Path.join(root, "sandboxes"), reposDir: Path.join(root, "repos"), env: { PATH, HOME: process.env.HOME ?? "/" } }),
  model: fakeModel,
  endpoint: (url) => ({ OPENCODE_BASE_URL: `${url}/v1` }),
  model_id: "fake-model",
  // opencode starts slower than the other CLIs (a Bun runtime loading a large script, its SQLite
  // database, a local server it talks to): 5 to 10 CPU-seconds a turn, a minute of wall time on a
  // heavily loaded 2-CPU machine.
  timeoutMs: 180_000
})
