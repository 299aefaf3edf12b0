import { defineProject, mergeConfig } from "vitest/config"
import shared from "../../vitest.shared.js"

// globalSetup makes sure a Docker engine answers and the test image exists (installs docker.io
// and imports the image the first time: minutes; seconds afterwards).
export default mergeConfig(
  shared,
  defineProject({
    test: {
      name: "executor-docker",
      globalSetup: ["./test/globalSetup.ts"],
      hookTimeout: 900_000,
      testTimeout: 60_000
    }
  })
)
