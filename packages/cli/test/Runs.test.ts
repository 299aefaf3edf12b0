/**
 * `agent-runs runs watch`: the exit code of each state a run ends in (Failure.ts). Following a
 * run against a server (exit 5 naming why it FAILED, 6 CANCELLED, 130 on Ctrl-C) is tested
 * black-box in examples/server/test/cli.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import { exitCodeOfState } from "../src/commands/Runs.js"

describe("runs watch", () => {
  it("exits 0 SUCCEEDED, 5 FAILED or ERROR, 6 CANCELLED, 7 BLOCKED", () => {
    expect(exitCodeOfState("SUCCEEDED")).toBe(0)
    expect(exitCodeOfState("FAILED")).toBe(5)
    expect(exitCodeOfState("ERROR")).toBe(5)
    expect(exitCodeOfState("CANCELLED")).toBe(6)
    expect(exitCodeOfState("BLOCKED")).toBe(7)
  })
})
