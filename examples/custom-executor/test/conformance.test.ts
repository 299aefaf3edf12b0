/** The core's executor conformance suite against TempDirExecutor, over temporary directories. */
import { executorConformance } from "@agent-runs/core/testing"
import { afterAll } from "@effect/vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as TempDirExecutor from "../src/TempDirExecutor.js"

const base = mkdtempSync(join(tmpdir(), "agent-runs-temp-dir-executor-"))
afterAll(() => rmSync(base, { recursive: true, force: true }))

const reposDir = join(base, "repos")

executorConformance("temp dir", {
  layer: TempDirExecutor.layer({ root: join(base, "sandboxes"), reposDir, terminateGraceMs: 1_000 }),
  reposDir,
  node: process.execPath
})
