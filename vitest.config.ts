import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    projects: ["packages/*/vitest.config.ts"],
    coverage: {
      provider: "v8",
      include: ["packages/core/src/**/*.ts"],
      reporter: ["text-summary", "text"],
      thresholds: { lines: 90 }
    }
  }
})
