import { defineConfig } from "vitest/config"

// Settings every package's tests share: workspace packages resolve to their TypeScript sources
// (the "@agent-runs/source" export condition: namespaced, so that no third-party package's own "source" condition is taken), so tests never depend on a previous build.
export default defineConfig({
  resolve: { conditions: ["@agent-runs/source"] },
  ssr: { resolve: { conditions: ["@agent-runs/source"] } },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000
  }
})
