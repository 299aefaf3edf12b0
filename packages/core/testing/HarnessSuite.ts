/**
 * The suite every agent CLI adapter (ports/AgentHarness.ts) runs against its real CLI: the
 * execution loop over the in-memory host, a real executor (processes), and a fake model server on
 * 127.0.0.1 the caller starts (`@agent-runs/testing`'s `startFakeModel`), scripted so that a
 * prompt `RUN: <command>` makes the model call the CLI's shell tool with it, a tool's result makes
 * it answer `DONE: <output>`, and anything else `ANSWER: <message>`.
 *
 * Cases: a run to SUCCEEDED with the expected conversation (an action of category `command`, its
 * result, the answer, the session, usage, the base prompt in the system prompt), a follow-up that
 * resumes the CLI's session, a continuation that starts from the earlier conversation, a cancel
 * while a tool runs (the CLI and its tool stopped), a refused key (FAILED
 * `integration_not_configured`), and the MCP servers reaching the CLI (it starts the server and
 * offers its tool to the model, in the request's tools or by name as a deferred tool).
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import type { Scope } from "effect"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { ConversationStep } from "../src/domain/Conversation.js"
import { foldParts } from "../src/domain/ConversationLog.js"
import { IdsLive, type RunId } from "../src/domain/Ids.js"
import * as ExecutionLoop from "../src/engine/ExecutionLoop.js"
import type { ExecutionPlan } from "../src/engine/ExecutionPlan.js"
import * as Health from "../src/engine/Health.js"
import { LiveExecutions } from "../src/engine/LiveExecutions.js"
import { defaultSettings, DispatcherConfig } from "../src/engine/Settings.js"
import { type AgentHarness, AgentHarnesses } from "../src/ports/AgentHarness.js"
import type { Executor } from "../src/ports/Executor.js"
import { memoryHost, planFor } from "./MemoryHost.js"

/** What the suite reads of a fake model server. */
export interface FakeModelLike {
  readonly url: string
  readonly turns: ReadonlyArray<{
    readonly system: string
    readonly lastUser: string
    readonly userTexts: ReadonlyArray<string>
    readonly tools: ReadonlyArray<string>
    /** Tools offered by name only, loaded on demand (Claude Code's deferred tools). */
    readonly deferredTools: ReadonlyArray<string>
  }>
}

export interface HarnessSuiteOptions {
  readonly harness: AgentHarness
  /** The same adapter with a command that does not exist (the CLI missing from the sandbox). */
  readonly missing: AgentHarness
  /** A real executor for the scope (its sandboxes under a temporary directory). */
  readonly executor: (root: string) => Layer.Layer<Executor>
  /** Starts a fake model server for the scope; with `apiKey`, other keys are refused. */
  readonly model: (options: { readonly apiKey?: string }) => Effect.Effect<FakeModelLike, never, Scope.Scope>
  /** The variables that point the CLI at the fake server (the environment's `env`). */
  readonly endpoint: (url: string) => Readonly<Record<string, string>>
  readonly model_id: string
  /** How long a case may take (the CLIs start in seconds); default 90 s. */
  readonly timeoutMs?: number
}

const KEY = "test-key-0123456789"
let runs = 0
const nextRunId = () => `01a30000-0000-7000-8000-${String(++runs).padStart(12, "0")}` as RunId

const blocksOf = (steps: ReadonlyArray<ConversationStep>): Array<{ role: string; block: Record<string, unknown> }> =>
  steps.flatMap((s) => [
    ...s.messages.flatMap((m) => m.content.map((block) => ({ role: m.role, block: block as unknown as Record<string, unknown> }))),
    ...blocksOf(s.steps)
  ])

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
  const timeout = options.timeoutMs ?? 90_000

  /** Runs `test` with a loop over a memory host, the real executor and the adapter. */
  const withLoop = <A, E>(
    test: (env: {
      readonly host: Effect.Effect.Success<ReturnType<typeof memoryHost>>
      readonly root: string
      readonly plan: (prompt: string, overrides?: Partial<ExecutionPlan>) => ExecutionPlan
      readonly until: (runId: RunId, what: string, done: () => boolean) => Effect.Effect<void>
    }) => Effect.Effect<A, E>,
    model: FakeModelLike,
    harness: AgentHarness = options.harness
  ) =>
    Effect.gen(function*() {
      const root = Fs.mkdtempSync(Path.join(Os.tmpdir(), `agent-runs-${options.harness.type}-`))
      yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(root, { recursive: true, force: true })))
      const host = yield* memoryHost(60_000)
      const plan = (prompt: string, overrides: Partial<ExecutionPlan> = {}): ExecutionPlan => {
        const base = planFor(nextRunId(), prompt)
        return {
          ...base,
          agent: { type: options.harness.type, model_id: options.model_id, reasoning_level: null, auth: KEY },
          sandbox: { ...base.sandbox, env: { ...options.endpoint(model.url) } },
          ...overrides
        }
      }
      const until = (runId: RunId, what: string, done: () => boolean) =>
        Effect.gen(function*() {
          const deadline = Date.now() + timeout
          while (!done()) {
            if (Date.now() > deadline) {
              const run = yield* host.run(runId)
              const transcript = yield* host.transcriptText(runId)
              return yield* Effect.die(new Error(
                `timed out waiting until ${what}: state ${run.snapshot.state}, events ${JSON.stringify(run.events)}, transcript ${transcript.slice(-3000)}`
              ))
            }
            yield* Effect.sleep(Duration.millis(100))
          }
        })
      const settings = {
        ...defaultSettings("false", "http://127.0.0.1:9/api/v1"),
        concurrency: 4,
        pollMs: 100,
        watchMs: 200,
        flushMs: 200,
        cancelGraceMs: 3_000
      }
      return yield* test({ host, root, plan, until }).pipe(
        Effect.provide(ExecutionLoop.layer.pipe(
          Layer.provideMerge(Layer.mergeAll(
            host.layer,
            options.executor(root),
            IdsLive,
            Health.layer,
            LiveExecutions.Default,
            Layer.succeed(DispatcherConfig, settings),
            Layer.succeed(AgentHarnesses, new Map([[harness.type, harness]]))
          ))
        ))
      )
    })

  const conversation = (host: Effect.Effect.Success<ReturnType<typeof memoryHost>>, runId: RunId) =>
    Effect.map(host.run(runId), (run) => blocksOf(foldParts(run.parts)))

  const ended = (host: Effect.Effect.Success<ReturnType<typeof memoryHost>>, runId: RunId) =>
    Effect.runSync(host.run(runId)).snapshot.state

  /** One case: a fake model server (with `modelOptions`) and a loop running `harness` over it. */
  const harnessCase = <A, E>(
    title: string,
    body: (env: Parameters<Parameters<typeof withLoop<A, E>>[0]>[0] & { readonly model: FakeModelLike }) => Effect.Effect<A, E>,
    modelOptions: { readonly apiKey?: string } = {},
    harness: AgentHarness = options.harness
  ) =>
    it.scopedLive(title, () =>
      Effect.flatMap(options.model(modelOptions), (model) => withLoop((env) => body({ ...env, model }), model, harness)), timeout * 2)

  describe(`${name}: the real CLI against a fake model server`, () => {
    harnessCase("runs a tool call and answers: SUCCEEDED with the conversation, session, usage and base prompt", ({ host, plan, until, model }) =>
      Effect.gen(function*() {
        const base = plan("RUN: echo hello > f.txt && ls")
        const p: ExecutionPlan = { ...base, start: { ...base.start, base_prompt: "BASE-PROMPT-MARKER-7" } }
        yield* host.offer(p)
        yield* until(p.run_id, "the run ends", () => ["SUCCEEDED", "FAILED", "ERROR"].includes(ended(host, p.run_id)))
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

    harnessCase("takes a follow-up by resuming the CLI's session", ({ host, plan, until, model }) =>
      Effect.gen(function*() {
        const p = plan("FIRST-QUESTION")
        yield* host.offer(p)
        yield* host.send(p.run_id, "SECOND-QUESTION")
        yield* until(p.run_id, "the run ends", () => ["SUCCEEDED", "FAILED", "ERROR"].includes(ended(host, p.run_id)))
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

    harnessCase("a continued run (a new execution) resumes the CLI's session, or starts from the conversation so far", ({ host, plan, until, model }) =>
      Effect.gen(function*() {
        const p = plan("THE-TASK")
        yield* host.offer(p)
        yield* until(p.run_id, "the first execution ends", () => ended(host, p.run_id) === "SUCCEEDED")
        const session = (yield* host.run(p.run_id)).reports.at(-1)?.session_id
        expect(session).toBeTruthy()
        // The run continues: a new execution of it, with the conversation so far and the new message.
        const continued: ExecutionPlan = {
          ...p,
          resume_session: session!,
          says_prompt: false,
          start: { ...p.start, history: [{ role: "assistant", content: [{ type: "text", text: "ANSWER: THE-TASK" }] }] }
        }
        yield* host.offer(continued)
        yield* host.send(p.run_id, "NEW-MESSAGE")
        yield* until(p.run_id, "the continuation ends", () =>
          (Effect.runSync(host.run(p.run_id)).events.length > 0) && ["SUCCEEDED", "FAILED", "ERROR"].includes(ended(host, p.run_id)))
        const run = yield* host.run(p.run_id)
        expect(run.snapshot.state, JSON.stringify(run.events)).toBe("SUCCEEDED")
        const turn = model.turns.find((t) => t.lastUser.includes("NEW-MESSAGE"))
        expect(turn).toBeDefined()
        if (options.harness.sessionState !== undefined) {
          // Resumed: the same session, the task as an earlier user message, the new message alone.
          expect(run.reports.at(-1)?.session_id).toBe(session)
          expect(turn!.userTexts.some((u) => u.includes("THE-TASK") && !u.includes("NEW-MESSAGE"))).toBe(true)
        } else {
          expect(turn!.lastUser).toContain("ANSWER: THE-TASK")
          expect(turn!.lastUser).toContain("THE-TASK")
        }
      }))

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
        yield* until(p.run_id, "the run ends", () => ["SUCCEEDED", "FAILED", "ERROR"].includes(ended(host, p.run_id)))
        const run = yield* host.run(p.run_id)
        expect(run.snapshot.state).toBe("FAILED")
        const failed = run.events.at(-1)
        expect(failed).toMatchObject({ _tag: "Fail", error_code: "integration_not_configured" })
      }), { apiKey: "the-right-key" })

    harnessCase("a CLI missing from the sandbox fails the run agent_failed, saying what to fix", ({ host, plan, until }) =>
      Effect.gen(function*() {
        const p = plan("hello")
        yield* host.offer(p)
        yield* until(p.run_id, "the run ends", () => ["SUCCEEDED", "FAILED", "ERROR"].includes(ended(host, p.run_id)))
        const run = yield* host.run(p.run_id)
        expect(run.snapshot.state).toBe("FAILED")
        expect(run.events.at(-1)).toMatchObject({ _tag: "Fail", error_code: "agent_failed" })
        expect((run.events.at(-1) as { message: string }).message).toContain(`the ${options.harness.type} CLI was not found in the sandbox`)
      }), {}, options.missing)

    harnessCase("the run's MCP servers reach the CLI: it starts them and offers their tools", ({ host, plan, root, until, model }) =>
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
        yield* until(p.run_id, "the run ends", () => ["SUCCEEDED", "FAILED", "ERROR"].includes(ended(host, p.run_id)))
        expect((yield* host.run(p.run_id)).snapshot.state).toBe("SUCCEEDED")
        expect(Fs.existsSync(marker)).toBe(true)
        expect(model.turns.some((t) => [...t.tools, ...t.deferredTools].some((tool) => tool.includes("ping")))).toBe(true)
      }))
  })
}
