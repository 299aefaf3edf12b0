/**
 * The suite every agent CLI adapter (ports/AgentHarness.ts) runs against its real CLI: the
 * execution loop over the in-memory host, a real executor (processes), and a fake model server on
 * 127.0.0.1 the caller starts (`@agent-runs/testing`'s `startFakeModel`), scripted so that a
 * prompt `RUN: <command>` makes the model call the CLI's shell tool with it, a tool's result makes
 * it answer `DONE: <output>`, and anything else `ANSWER: <message>` (HarnessLoop.ts).
 *
 * Cases: a run to SUCCEEDED with the expected conversation (an action of category `command`, its
 * result, the answer, the session, usage, the base prompt in the system prompt), a follow-up that
 * resumes the CLI's session, a follow-up on an ended run that resumes it too, or starts from the
 * conversation so far when its files are gone (ContinuationSuite.ts), a cancel while a tool runs
 * (the CLI and its tool stopped), a refused key (FAILED `integration_not_configured`), and the MCP
 * servers reaching the CLI (it starts the server and offers its tool to the model, in the
 * request's tools or by name as a deferred tool).
 */
import { describe, expect } from "@effect/vitest"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { ExecutionPlan } from "../src/engine/ExecutionPlan.js"
import { continuationCases } from "./ContinuationSuite.js"
import { conversation, harnessLoop, type HarnessSuiteOptions, hasEnded, stateOf } from "./HarnessLoop.js"

export type { FakeModelLike, HarnessSuiteOptions } from "./HarnessLoop.js"

/** A stdio MCP server in one file: notes its start in `MCP_MARKER`, offers one tool `ping`. */
const MCP_SERVER = `
const fs = require("node:fs")
fs.writeFileSync(process.env.MCP_MARKER, "started")
let buffer = ""
process.stdin.on("data", (chunk) => {
  buffer += chunk
  let i
  while ((i = buffer.indexOf("\\n")) >= 0) {
    const line = buffer.slice(0, i); buffer = buffer.slice(i + 1)
    if (!line.trim()) continue
    const msg = JSON.parse(line)
    if (msg.id === undefined) continue
    let result = {}
    if (msg.method === "initialize") result = { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "probe", version: "1.0.0" } }
    else if (msg.method === "tools/list") result = { tools: [{ name: "ping", description: "Answers pong.", inputSchema: { type: "object", properties: {} } }] }
    else if (msg.method === "tools/call") result = { content: [{ type: "text", text: "pong" }] }
    process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: msg.id, result }) + "\\n")
  }
})
`

export const harnessSuite = (name: string, options: HarnessSuiteOptions): void => {
  const { harnessCase } = harnessLoop(options)

  describe(`${name}: the real CLI against a fake model server`, () => {
    harnessCase("runs a tool call and answers: SUCCEEDED with the conversation, session, usage and base prompt", ({ host, model, plan, until }) =>
      Effect.gen(function*() {
        const base = plan("RUN: echo hello > f.txt && ls")
        const p: ExecutionPlan = { ...base, start: { ...base.start, base_prompt: "BASE-PROMPT-MARKER-7" } }
        yield* host.offer(p)
        yield* until(p.run_id, "the run ends", () => hasEnded(host, p.run_id))
        const run = yield* host.run(p.run_id)
        expect(run.snapshot.state, JSON.stringify(run.events)).toBe("SUCCEEDED")
        const blocks = yield* conversation(host, p.run_id)
        const action = blocks.find((b) => b.block.type === "action")
        expect(action?.block.category).toBe("command")
        const result = blocks.find((b) => b.block.type === "action_result")
        expect(result?.block.state).toBe("completed")
        expect(JSON.stringify(result?.block.output)).toContain("f.txt")
        expect(blocks.some((b) => b.block.type === "text" && String(b.block.text).includes("DONE:") && String(b.block.text).includes("f.txt"))).toBe(true)
        const report = run.reports.at(-1)
        expect(report?.session_id).toBeTruthy()
        expect(report?.request_usage.input_tokens).toBeGreaterThan(0)
        expect(report?.request_usage.output_tokens).toBeGreaterThan(0)
        expect(model.turns.some((t) => t.system.includes("BASE-PROMPT-MARKER-7"))).toBe(true)
        expect(yield* host.transcriptText(p.run_id)).toContain(report!.session_id!)
      }))

    harnessCase("takes a follow-up by resuming the CLI's session", ({ host, model, plan, until }) =>
      Effect.gen(function*() {
        const p = plan("FIRST-QUESTION")
        yield* host.offer(p)
        yield* host.send(p.run_id, "SECOND-QUESTION")
        yield* until(p.run_id, "the run ends", () => hasEnded(host, p.run_id))
        const run = yield* host.run(p.run_id)
        expect(run.snapshot.state, JSON.stringify(run.events)).toBe("SUCCEEDED")
        const texts = (yield* conversation(host, p.run_id)).flatMap((b) => (b.block.type === "text" ? [String(b.block.text)] : []))
        expect(texts.some((t) => t.includes("ANSWER: FIRST-QUESTION"))).toBe(true)
        expect(texts.some((t) => t.includes("ANSWER: SECOND-QUESTION"))).toBe(true)
        // The second turn resumed the session: the model saw the first exchange with it.
        const second = model.turns.find((t) => t.lastUser.includes("SECOND-QUESTION"))
        expect(second?.userTexts.some((u) => u.includes("FIRST-QUESTION"))).toBe(true)
        const sessions = new Set(run.reports.flatMap((r) => (r.session_id === undefined ? [] : [r.session_id])))
        expect(sessions.size).toBe(1)
      }))

    continuationCases(options)

    harnessCase("a cancel while a tool runs stops the CLI and its tool", ({ host, plan, until }) =>
      Effect.gen(function*() {
        const marker = `${30 + Math.floor(Math.random() * 1000) / 1000}`
        // Not a command that is only a sleep: Claude Code 2.1.332 refuses one of 25 s or more
        // ("Blocked: standalone sleep", use Monitor or run_in_background).
        const p = plan(`RUN: echo started && sleep ${marker}`)
        yield* host.offer(p)
        const running = () => {
          try {
            return execFileSync("pgrep", ["-f", `sleep ${marker}`], { encoding: "utf8" }).trim() !== ""
          } catch {
            return false
          }
        }
        yield* until(p.run_id, "the tool runs", running)
        yield* host.cancel(p.run_id)
        yield* until(p.run_id, "the tool is gone", () => !running())
        const run = yield* host.run(p.run_id)
        expect(run.snapshot.state).toBe("CANCELLED")
        expect(run.events.map((e) => e._tag)).not.toContain("Succeed")
      }))

    harnessCase("a refused key fails the run with integration_not_configured", ({ host, plan, until }) =>
      Effect.gen(function*() {
        const p = plan("hello")
        yield* host.offer(p)
        yield* until(p.run_id, "the run ends", () => hasEnded(host, p.run_id))
        const run = yield* host.run(p.run_id)
        expect(run.snapshot.state).toBe("FAILED")
        const failed = run.events.at(-1)
        expect(failed).toMatchObject({ _tag: "Fail", error_code: "integration_not_configured" })
      }), { apiKey: "the-right-key" })

    harnessCase("a CLI missing from the sandbox fails the run agent_failed, saying what to fix", ({ host, plan, until }) =>
      Effect.gen(function*() {
        const p = plan("hello")
        yield* host.offer(p)
        yield* until(p.run_id, "the run ends", () => hasEnded(host, p.run_id))
        const run = yield* host.run(p.run_id)
        expect(run.snapshot.state).toBe("FAILED")
        expect(run.events.at(-1)).toMatchObject({ _tag: "Fail", error_code: "agent_failed" })
        expect((run.events.at(-1) as { message: string }).message).toContain(`the ${options.harness.type} CLI was not found in the sandbox`)
      }), {}, options.missing)

    harnessCase("the run's MCP servers reach the CLI: it starts them and offers their tools", ({ host, model, plan, root, until }) =>
      Effect.gen(function*() {
        const script = Path.join(root, "mcp-probe.cjs")
        const marker = Path.join(root, "mcp-started")
        Fs.writeFileSync(script, MCP_SERVER)
        const base = plan("hello MCP")
        const p: ExecutionPlan = {
          ...base,
          start: { ...base.start, mcp_servers: { probe: { command: process.execPath, args: [script], env: { MCP_MARKER: marker } } } }
        }
        yield* host.offer(p)
        yield* until(p.run_id, "the run ends", () => hasEnded(host, p.run_id))
        expect(stateOf(host, p.run_id)).toBe("SUCCEEDED")
        expect(Fs.existsSync(marker)).toBe(true)
        expect(model.turns.some((t) => [...t.tools, ...t.deferredTools].some((tool) => tool.includes("ping")))).toBe(true)
      }))
  })
}
