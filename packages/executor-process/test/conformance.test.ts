/** The executor conformance suite against local processes, over temporary directories. */
import { executorConformance } from "@agent-runs/core/testing"
import { afterAll } from "@effect/vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { layer } from "../src/ProcessExecutor.js"

const base = mkdtempSync(join(tmpdir(), "agent-runs-executor-process-"))
afterAll(() => rmSync(base, { recursive: true, force: true }))

const reposDir = join(base, "repos")

executorConformance("process", {
  layer: layer({ root: join(base, "sandboxes"), reposDir, terminateGraceMs: 1_000 }),
  reposDir,
  node: process.execPath
})
