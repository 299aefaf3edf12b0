import { defineConfig } from "vite"

// Benchmarks run with vite-node, resolving workspace packages to their TypeScript sources.
export default defineConfig({
  resolve: { conditions: ["@agent-runs/source"] },
  ssr: { resolve: { conditions: ["@agent-runs/source"], externalConditions: ["@agent-runs/source"] } }
})
