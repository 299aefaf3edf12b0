import { availableParallelism } from "node:os"
import { defineConfig } from "vitest/config"
import SummaryReporter from "./vitest.summary.js"

export default defineConfig({
  test: {
    projects: ["packages/*/vitest.config.ts", "examples/*/vitest.config.ts", "docs/vitest.config.ts"],
    // Test files run in parallel, one per CPU (at least two): each file has its own ports, data
    // directories and PostgreSQL databases, and its tests wait for conditions, never for a time.
    maxWorkers: Math.max(2, availableParallelism()),
    minWorkers: 1,
    // The browser tests load the web dashboard: build it first when its build is missing or stale.
    globalSetup: ["./vitest.dashboard.ts"],
    reporters: ["default", new SummaryReporter()],
    coverage: {
      provider: "v8",
      include: ["packages/core/src/**/*.ts"],
      reporter: ["text-summary", "text"],
      // Core alone (`npm run coverage`): the whole core, and the execution engine and the run,
      // follow-up and ingress services each, at 90 % of lines at least.
      thresholds: {
        lines: 90,
        "packages/core/src/engine/{ExecutionLoop,AgentSession,ExecutionPlan,RunExecutions,LocalHost,LeaseSweep,DebugWindows}.ts": { lines: 90 },
        "packages/core/src/services/Runs.ts": { lines: 90 },
        "packages/core/src/services/Followups.ts": { lines: 90 },
        "packages/core/src/services/Ingress.ts": { lines: 90 }
      }
    }
  }
})
