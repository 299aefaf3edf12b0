import { defineConfig } from "vitest/config"

// Settings every package's tests share: workspace packages resolve to their TypeScript sources
// (the "source" export condition), so tests never depend on a previous build.
export default defineConfig({
  resolve: { conditions: ["source"] },
  ssr: { resolve: { conditions: ["source"] } },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000
  }
})
