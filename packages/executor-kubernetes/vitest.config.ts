import { defineProject, mergeConfig } from "vitest/config"
import shared from "../../vitest.shared.js"

// globalSetup makes sure a Docker engine answers and the test image exists: the API server double
// runs each pod's container on it.
export default mergeConfig(
  shared,
  defineProject({
    test: {
      name: "executor-kubernetes",
      globalSetup: ["./test/globalSetup.ts"],
      hookTimeout: 900_000,
      testTimeout: 60_000
    }
  })
)
