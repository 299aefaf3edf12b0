/**
 * Claude Code itself against the fake Anthropic Messages server: the pinned devDependency that
 * fits this Node (`claudeCodePackage`: 2.1.197 on Node 20, 2.1.332 on Node 22 and later).
 */
import { harnessSuite } from "@agent-runs/core/testing"
import { ProcessExecutor } from "@agent-runs/executor-process"
import { claudeCodePackage, cliPath, fakeModel } from "@agent-runs/testing"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { claudeHarness } from "../src/index.js"

const pkg = claudeCodePackage()
const { version } = createRequire(import.meta.url)(`${pkg}/package.json`) as { version: string }

harnessSuite(`Claude Code ${version} on Node ${process.versions.node}`, {
  harness: claudeHarness({ command: cliPath(pkg, "claude") }),
  missing: claudeHarness({ command: "/nonexistent/claude" }),
  executor: (root) => ProcessExecutor.layer({ root: Path.join(root, "sandboxes"), reposDir: Path.join(root, "repos") }),
  model: fakeModel,
  endpoint: (url) => ({ ANTHROPIC_BASE_URL: url }),
  model_id: "claude-sonnet-4-5"
})
