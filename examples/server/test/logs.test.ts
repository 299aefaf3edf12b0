/**
 * Logs for operators: the built server with `AGENT_RUNS_LOG_FORMAT=json` writes one JSON object
 * per line, and a run's story (created, claimed, in progress, failed with its error code) can be
 * read by filtering on its `run_id`.
 */
import { randomBytes } from "node:crypto"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { makeTeam } from "./harness.js"
import { suiteProcess } from "./lifecycle.js"
import { call } from "./process.js"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

describe("logs (AGENT_RUNS_LOG_FORMAT=json)", () => {
  const adminToken = `ar_${randomBytes(32).toString("base64url")}`
  const started = suiteProcess({ AGENT_RUNS_ADMIN_TOKEN: adminToken, AGENT_RUNS_LOG_FORMAT: "json" })

  it("writes JSON lines; a run's transitions and failure carry its run id as a field", async () => {
    const server = started()
    const team = await makeTeam({ url: server.url, adminToken }, "logs")
    const created = await call(server, "POST", "/api/v1/agent/runs", {
      token: team.tokens.member,
      body: { prompt: "@fail budget_exceeded the budget ran out" }
    })
    const runId: string = created.body.run_id
    await Effect.runPromise(server.waitForOutput(new RegExp(`^(?=.*"run_id":"${runId}")(?=.*"to":"FAILED").*$`, "m"), "20 seconds"))
    const lines: Array<Json> = server.stdout().split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l))
    const ofRun = lines.filter((l) => l.annotations?.run_id === runId)
    expect(ofRun.map((l) => l.message)).toEqual([
      "run created (QUEUED)",
      "run QUEUED → CLAIMED",
      "run CLAIMED → INPROGRESS",
      "run INPROGRESS → FAILED"
    ])
    expect(ofRun.at(-1)).toMatchObject({
      logLevel: "WARN",
      annotations: { run_id: runId, team_uid: team.uid, from: "INPROGRESS", to: "FAILED", error_code: "budget_exceeded", message: "the budget ran out" }
    })
    expect(ofRun[1].annotations.execution_id).toEqual(expect.any(String))
    // Every line the server wrote to stdout after its banner is JSON.
    expect(server.stdout().split("\n").filter((l) => l.startsWith("{") && !l.endsWith("}"))).toEqual([])
  }, 60_000)
})
