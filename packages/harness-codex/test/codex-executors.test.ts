/**
 * A follow-up on an ended run of Codex (the pinned devDependency) on the executors a deployment
 * runs it on besides plain processes (codex.test.ts): processes isolated as a user per sandbox
 * (the process executor as root, `AGENT_RUNS_PROCESS_ISOLATION=auto`), and Docker containers (the
 * test image, Codex's static binary mounted read-only, the host's network to reach the fake model
 * server on 127.0.0.1). Each continuation runs in a new sandbox: a new user, a new container.
 */
import { continuationSuite } from "@agent-runs/core/testing"
import { ensureEngine, ensureTestImage, testExecutorWithCli } from "@agent-runs/executor-docker/testing"
import { ProcessExecutor } from "@agent-runs/executor-process"
import { fakeModel, runnableCopy } from "@agent-runs/testing"
import { createRequire } from "node:module"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll } from "vitest"
import { codexHarness } from "../src/index.js"

const common = {
  missing: codexHarness({ command: "/nonexistent/codex" }),
  model: fakeModel,
  endpoint: (url: string) => ({ OPENAI_BASE_URL: `${url}/v1` }),
  model_id: "gpt-5-codex"
}

/** Codex's own binary (static, musl): the npm package's `codex.js` needs `/usr/bin/env`, which the test image has not. */
const codexBinary = (): { readonly dir: string; readonly binary: string } => {
  const pkg = process.arch === "arm64" ? "@openai/codex-linux-arm64" : "@openai/codex-linux-x64"
  const triple = process.arch === "arm64" ? "aarch64-unknown-linux-musl" : "x86_64-unknown-linux-musl"
  const dir = Path.dirname(createRequire(createRequire(import.meta.url).resolve("@openai/codex/package.json")).resolve(`${pkg}/package.json`))
  return { dir, binary: Path.join(dir, "vendor", triple, "bin", "codex") }
}

const codex = codexBinary()

if (process.getuid?.() === 0) {
  // A copy of the binary, which sandbox users can run wherever the checkout is.
  const shared = runnableCopy(codex.binary, "codex")
  afterAll(() => Fs.rmSync(shared.dir, { recursive: true, force: true }))
  continuationSuite("Codex on isolated processes", {
    ...common,
    harness: codexHarness({ command: shared.file }),
    executor: (root) => {
      // Sandbox users must reach the sandboxes' root (mkdtemp makes it private).
      Fs.chmodSync(root, 0o711)
      return ProcessExecutor.layer({
        root: Path.join(root, "sandboxes"),
        reposDir: Path.join(root, "repos"),
        isolation: { uids: { first: 1_700_000_000, count: 100_000 } }
      })
    }
  })
}

beforeAll(() => {
  ensureEngine()
  ensureTestImage()
}, 900_000)

continuationSuite("Codex on Docker", {
  ...common,
  harness: codexHarness({ command: codex.binary }),
  executor: (root) => testExecutorWithCli(root, codex.dir)
})
