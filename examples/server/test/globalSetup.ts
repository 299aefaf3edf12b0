/**
 * Runs once before the example-server tests: builds every package and the server
 * (`npx tsc -b tsconfig.json` at the repository root) so the black-box tests spawn a `dist` that
 * matches the sources. The outcome is provided to the tests rather than thrown here, so a type
 * error fails the tests that need the build (with the compiler's output) and not the in-process
 * ones: a test that needs it starts with `assertBuilt(inject("serverBuild"))`. It also makes sure
 * the Docker engine answers and the test image exists, for the execution tests on Docker.
 */
import { ensureEngine, ensureTestImage } from "@agent-runs/executor-docker/testing"
import type { TestProject } from "vitest/node"
import { type BuildResult, buildServer } from "./process.js"

declare module "vitest" {
  export interface ProvidedContext {
    /** The outcome of building the server before the tests. */
    readonly serverBuild: BuildResult
  }
}

export default function setup(project: TestProject): void {
  project.provide("serverBuild", buildServer())
  // The execution tests on the Docker executor: the engine answers and the test image exists.
  ensureEngine()
  ensureTestImage()
}

