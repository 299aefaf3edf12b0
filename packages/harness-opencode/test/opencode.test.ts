/**
 * opencode itself (the pinned devDependency) against the fake OpenAI Chat Completions server,
 * composed as a deployment does: `opencode` found on the sandbox's PATH (a directory of its own
 * first, not among the system directories).
 */
import { harnessSuite } from "@agent-runs/core/testing"
import { ProcessExecutor } from "@agent-runs/executor-process"
import { cliPath, fakeModel, runnableCopy } from "@agent-runs/testing"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { afterAll } from "vitest"
import { opencodeHarness } from "../src/index.js"

// The binary as `opencode` in a directory of its own (its npm package names it `opencode.exe`;
// `node_modules/.bin` is on the PATH only when npm runs the tests).
const shared = runnableCopy(cliPath("opencode-ai", "opencode"), "opencode")
afterAll(() => Fs.rmSync(shared.dir, { recursive: true, force: true }))
const PATH = `${shared.dir}:${process.env.PATH ?? "/usr/bin:/bin"}`

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
