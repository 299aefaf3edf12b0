/**
 * The executor conformance suite of @agent-runs/core against the Kubernetes executor, on the API
 * server double whose pods run on the Docker engine (the test image).
 */
import { executorConformance } from "@agent-runs/core/testing"
import { testImage } from "@agent-runs/executor-docker/testing"
import { afterAll } from "@effect/vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { KubernetesExecutor } from "../src/index.js"
import { start } from "../testing/ApiServerDouble.js"

const base = mkdtempSync(join(tmpdir(), "agent-runs-executor-kubernetes-"))
const double = await start()
afterAll(async () => {
  await double.close()
  rmSync(base, { recursive: true, force: true })
})

const reposDir = join(base, "repos")

executorConformance("kubernetes", {
  layer: KubernetesExecutor.layer({
    cluster: { options: double.kubeconfig("agents") },
    settings: { image: testImage, instance: "conformance" },
    reposDir,
    mirrorsDir: join(base, "mirrors"),
    scratchDir: join(base, "scratch")
  }),
  reposDir,
  node: "node"
})
