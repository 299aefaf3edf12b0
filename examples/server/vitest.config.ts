import { defineProject, mergeConfig } from "vitest/config"
import shared from "../../vitest.shared.js"

// globalSetup builds the server once: the black-box and SDK tests spawn examples/server/dist/main.js.
export default mergeConfig(
  shared,
  defineProject({ test: { name: "example-server", globalSetup: ["./test/globalSetup.ts"] } })
)
