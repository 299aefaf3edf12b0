import { defineProject, mergeConfig } from "vitest/config"
import shared from "../../vitest.shared.js"

// globalSetup builds the agent once: the process tests spawn packages/scripted-agent/dist/main.js.
export default mergeConfig(
  shared,
  defineProject({ test: { name: "scripted-agent", globalSetup: ["./test/globalSetup.ts"] } })
)
