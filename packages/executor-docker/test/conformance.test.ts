/** The executor conformance suite of @agent-runs/core against the Docker executor and the test image. */
import { executorConformance } from "@agent-runs/core/testing"
import { afterAll } from "@effect/vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DockerExecutor } from "../src/index.js"
import { testImage } from "../testing/engine.js"

const base = mkdtempSync(join(tmpdir(), "agent-runs-executor-docker-"))
afterAll(() => rmSync(base, { recursive: true, force: true }))

const reposDir = join(base, "repos")

executorConformance("docker", {
  layer: DockerExecutor.layer({ root: join(base, "sandboxes"), reposDir, image: testImage }),
  reposDir,
  node: "node"
})
