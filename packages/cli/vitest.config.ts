import { defineProject, mergeConfig } from "vitest/config"
import shared from "../../vitest.shared.js"

// The command against a running server is tested black-box in examples/server/test/definitions.test.ts.
export default mergeConfig(shared, defineProject({ test: { name: "cli" } }))
