import { defineConfig } from "vitest/config"
import SummaryReporter from "./vitest.summary.js"

export default defineConfig({
  test: {
    projects: ["packages/*/vitest.config.ts", "examples/*/vitest.config.ts"],
    reporters: ["default", new SummaryReporter()],
    coverage: {
      provider: "v8",
      include: ["packages/core/src/**/*.ts"],
      reporter: ["text-summary", "text"],
      thresholds: { lines: 90 }
    }
  }
})
