import type { Reporter, SerializedError, TestModule } from "vitest/node"

/**
 * Prints one plain closing line, "Tests: N passed, N failed, N skipped", after vitest's own
 * summary (written as the process exits, so it is the last line), so that CI can read the outcome
 * without parsing colours. Unhandled errors count as failures. Before it, the ten slowest test
 * files, to see where the suite's time goes.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<SerializedError>): void {
    let passed = 0
    let failed = 0
    let skipped = 0
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state
        if (state === "passed") passed++
        else if (state === "failed") failed++
        else skipped++
      }
      if (module.state() === "failed" && [...module.children.allTests()].length === 0) failed++
    }
    failed += unhandledErrors.length
    const line = `Tests: ${passed} passed, ${failed} failed, ${skipped} skipped`
    const slowest = [...testModules]
      .map((module) => ({ file: module.moduleId.replace(`${process.cwd()}/`, ""), ms: module.diagnostic().duration }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 10)
      .map(({ file, ms }) => `  ${(ms / 1000).toFixed(1).padStart(7)} s  ${file}`)
    const report = slowest.length > 1 ? `\nSlowest test files:\n${slowest.join("\n")}\n` : ""
    process.once("exit", () => process.stdout.write(`${report}\n${line}\n`))
  }
}
