/**
 * Runs once before the scripted-agent tests: builds the package (`npx tsc -b
 * packages/scripted-agent` at the repository root) so the process tests spawn a `dist/main.js`
 * that matches the sources. The outcome is provided rather than thrown, so a type error fails the
 * process tests (with the compiler's output) and not the in-memory ones.
 */
import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import type { TestProject } from "vitest/node"

/** The outcome of building the package. */
export interface AgentBuild {
  readonly ok: boolean
  readonly output: string
}

declare module "vitest" {
  export interface ProvidedContext {
    /** The outcome of building packages/scripted-agent before the tests. */
    readonly scriptedAgentBuild: AgentBuild
  }
}

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url))

export default function setup(project: TestProject): void {
  const result = spawnSync("npx", ["tsc", "-b", "packages/scripted-agent"], { cwd: REPO_ROOT, encoding: "utf8" })
  const output = `${result.stdout ?? ""}${result.stderr ?? ""}${result.error ? String(result.error) : ""}`
  project.provide("scriptedAgentBuild", { ok: result.status === 0, output })
}
