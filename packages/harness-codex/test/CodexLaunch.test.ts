/**
 * Codex's command line (src/CodexLaunch.ts) run by `/bin/sh` with a stand-in for Codex that prints
 * its arguments: a new thread, and a resumed one (`resume THREAD` after every option, as `codex
 * exec` takes it, the totals of the thread's file printed first); and the restore check of a
 * continued run (`sessionState.afterRestore`): the thread's file is there, or not.
 */
import type { HarnessTurn } from "@agent-runs/core/ports/AgentHarness"
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { launch, sessionState, THREAD_TOTALS } from "../src/CodexLaunch.js"

const home = Fs.mkdtempSync(Path.join(Os.tmpdir(), "codex-launch-"))
afterAll(() => Fs.rmSync(home, { recursive: true, force: true }))

/** Prints each argument on a line of its own. */
const fakeCodex = Path.join(home, "fake-codex")
Fs.writeFileSync(fakeCodex, "#!/bin/sh\nfor a in \"$@\"; do printf 'ARG %s\\n' \"$a\"; done\n", { mode: 0o755 })

const THREAD = "01a227ec-c6fe-76a1-a053-3300a0e8adbf"

const turn = (session_id: string | null): HarnessTurn => ({
  message: "hello",
  session_id,
  base_prompt: null,
  skill: null,
  model_id: "gpt-5-codex",
  reasoning_level: null,
  mcp_servers: {},
  auth: "key",
  attachments: []
})

/** Runs a command line with `HOME` the test's home: its output lines. */
const run = (argv: ReadonlyArray<string>) => {
  const result = spawnSync(argv[0]!, argv.slice(1), { env: { PATH: process.env.PATH, HOME: home }, encoding: "utf8" })
  return { code: result.status, lines: result.stdout.split("\n").filter((line) => line !== "") }
}

const rollout = (thread: string, lines: ReadonlyArray<unknown>) => {
  const dir = Path.join(home, ".codex/sessions/2026/11/29")
  Fs.mkdirSync(dir, { recursive: true })
  Fs.writeFileSync(Path.join(dir, `rollout-2026-11-29T15-10-31-${thread}.jsonl`), lines.map((line) => JSON.stringify(line)).join("\n") + "\n")
}

const tokenCount = (input: number, output: number) => ({
  timestamp: "2026-11-29T15:10:32.000Z",
  type: "event_msg",
  payload: { type: "token_count", info: { total_token_usage: { input_tokens: input, cached_input_tokens: 0, output_tokens: output, total_tokens: input + output } } }
})

describe("Codex's command line", () => {
  it("starts a new thread: options, then `-` (the message on stdin)", () => {
    const { code, lines } = run(launch(fakeCodex)(turn(null)).command)
    expect(code).toBe(0)
    expect(lines).toEqual(["ARG exec", "ARG -c", `ARG model_providers.agent-runs.base_url="https://api.openai.com/v1"`, "ARG --json", "ARG --skip-git-repo-check", "ARG -"])
  })

  it("resumes a thread: `resume THREAD -` after every option, the totals of its file printed first", () => {
    rollout(THREAD, [{ type: "session_meta", payload: { id: THREAD } }, tokenCount(100, 20), { type: "response_item" }, tokenCount(200, 40), { type: "event_msg", payload: { type: "task_complete" } }])
    const { code, lines } = run(launch(fakeCodex)(turn(THREAD)).command)
    expect(code).toBe(0)
    expect(JSON.parse(lines[0]!)).toEqual({
      type: THREAD_TOTALS,
      thread_id: THREAD,
      usage: { input_tokens: 200, cached_input_tokens: 0, output_tokens: 40, total_tokens: 240 }
    })
    expect(lines.slice(1).slice(-5)).toEqual(["ARG --json", "ARG --skip-git-repo-check", "ARG resume", `ARG ${THREAD}`, "ARG -"])
  })

  it("resumes a thread without a file (nothing to count from) without a totals line", () => {
    const { code, lines } = run(launch(fakeCodex)(turn("01a227ec-0000-7000-8000-000000000000")).command)
    expect(code).toBe(0)
    expect(lines[0]).toBe("ARG exec")
  })

  it("after a restore, takes the thread as resumable only when its file is among the restored ones", () => {
    rollout(THREAD, [tokenCount(1, 1)])
    expect(run(["/bin/sh", "-c", sessionState.afterRestore!, "after-restore", THREAD]).code).toBe(0)
    expect(run(["/bin/sh", "-c", sessionState.afterRestore!, "after-restore", "01a227ec-1111-7000-8000-000000000000"]).code).not.toBe(0)
  })
})
