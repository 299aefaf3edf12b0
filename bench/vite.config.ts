import { defineConfig } from "vite"

// Benchmarks run with vite-node, resolving workspace packages to their TypeScript sources.
export default defineConfig({
  resolve: { conditions: ["source"] },
  ssr: { resolve: { conditions: ["source"], externalConditions: ["source"] } }
})
