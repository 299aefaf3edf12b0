/**
 * A follow-up on an ended run of opencode (the pinned devDependency) on the executors a deployment
 * runs it on besides plain processes (opencode.test.ts): processes isolated as a user per sandbox
 * (the process executor as root, `AGENT_RUNS_PROCESS_ISOLATION=auto`), and Docker containers (the
 * test image, opencode's binary mounted read-only, the host's network to reach the fake model
 * server on 127.0.0.1). Each continuation runs in a new sandbox: a new user and work directory, a
 * new container.
 */
import { continuationSuite } from "@agent-runs/core/testing"
import { ensureEngine, ensureTestImage, testExecutorWithCli } from "@agent-runs/executor-docker/testing"
import { ProcessExecutor } from "@agent-runs/executor-process"
import { cliPath, fakeModel, runnableCopy } from "@agent-runs/testing"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll } from "vitest"
import { opencodeHarness } from "../src/index.js"

/** opencode's binary (its npm package's postinstall puts it there). */
const command = cliPath("opencode-ai", "opencode")

const common = {
  harness: opencodeHarness({ command }),
  missing: opencodeHarness({ command: "/nonexistent/opencode" }),
  model: fakeModel,
  endpoint: (url: string) => ({ OPENCODE_BASE_URL: `${url}/v1` }),
  model_id: "fake-model",
  // See opencode.test.ts: a turn takes 5 to 10 CPU-seconds.
  timeoutMs: 180_000
}

if (process.getuid?.() === 0) {
  // As a deployment composes it: `opencode` found on the sandbox's PATH (here a directory that is
  // not among the system directories), not an absolute path; a copy, which sandbox users can run
  // wherever the checkout is.
  const shared = runnableCopy(command, "opencode")
  afterAll(() => Fs.rmSync(shared.dir, { recursive: true, force: true }))
  continuationSuite("opencode on isolated processes, found on the PATH", {
    ...common,
    harness: opencodeHarness(),
    executor: (root) => {
      // Sandbox users must reach the sandboxes' root (mkdtemp makes it private).
      Fs.chmodSync(root, 0o711)
      return ProcessExecutor.layer({
        root: Path.join(root, "sandboxes"),
        reposDir: Path.join(root, "repos"),
        env: { PATH: `${shared.dir}:${process.env.PATH ?? "/usr/bin:/bin"}` },
        isolation: { uids: { first: 1_710_000_000, count: 100_000 } }
      })
    }
  })
}

beforeAll(() => {
  ensureEngine()
  ensureTestImage()
}, 900_000)

const packageDir = Path.dirname(Path.dirname(Fs.realpathSync(command)))
continuationSuite("opencode on Docker", {
  ...common,
  executor: (root) => testExecutorWithCli(root, packageDir)
})
