/**
 * What the suites of an agent CLI adapter (HarnessSuite.ts, ContinuationSuite.ts) run their cases
 * in: the execution loop over the in-memory host, a real executor, and a fake model server on
 * 127.0.0.1 the caller starts (`@agent-runs/testing`'s `fakeModel`), scripted so that a prompt
 * `RUN: <command>` makes the model call the CLI's shell tool with it, a tool's result makes it
 * answer `DONE: <output>`, and anything else `ANSWER: <message>`.
 */
import { it } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import type { Scope } from "effect"
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

/** What the suites read of a fake model server. */
export interface FakeModelLike {
  readonly url: string
  readonly turns: ReadonlyArray<{
    readonly system: string
    readonly lastUser: string
    readonly userTexts: ReadonlyArray<string>
    /** Every tool result the request carries (the conversation's earlier ones included). */
    readonly toolOutputs: ReadonlyArray<string>
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

export type Host = Effect.Effect.Success<ReturnType<typeof memoryHost>>

/** What a case gets: the host, the scope's directory, plans of new runs, a wait, the model server. */
export interface CaseEnv {
  readonly host: Host
  readonly root: string
  readonly plan: (prompt: string, overrides?: Partial<ExecutionPlan>) => ExecutionPlan
  readonly until: (runId: RunId, what: string, done: () => boolean) => Effect.Effect<void>
  readonly model: FakeModelLike
}

const KEY = "test-key-0123456789"
let runs = 0
const nextRunId = () => `01a30000-0000-7000-8000-${String(++runs).padStart(12, "0")}` as RunId

const blocksOf = (steps: ReadonlyArray<ConversationStep>): Array<{ role: string; block: Record<string, unknown> }> =>
  steps.flatMap((s) => [
    ...s.messages.flatMap((m) => m.content.map((block) => ({ role: m.role, block: block as unknown as Record<string, unknown> }))),
    ...blocksOf(s.steps)
  ])

/** The blocks of a run's conversation, in order, with their message's role. */
export const conversation = (host: Host, runId: RunId) => Effect.map(host.run(runId), (run) => blocksOf(foldParts(run.parts)))

/** A run's state now. */
export const stateOf = (host: Host, runId: RunId) => Effect.runSync(host.run(runId)).snapshot.state

/** Whether a run has ended. */
export const hasEnded = (host: Host, runId: RunId) => ["SUCCEEDED", "FAILED", "ERROR"].includes(stateOf(host, runId))

/** Registers cases of a suite: each runs with a fake model server and a loop over a real executor. */
export const harnessLoop = (options: HarnessSuiteOptions) => {
  const timeout = options.timeoutMs ?? 90_000

  /** Runs `test` with a loop over a memory host, the real executor and the adapter. */
  const withLoop = <A, E>(test: (env: CaseEnv) => Effect.Effect<A, E>, model: FakeModelLike, harness: AgentHarness) =>
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
      return yield* test({ host, root, plan, until, model }).pipe(
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

  /** One case: a fake model server (with `modelOptions`) and a loop running `harness` over it. */
  const harnessCase = <A, E>(
    title: string,
    body: (env: CaseEnv) => Effect.Effect<A, E>,
    modelOptions: { readonly apiKey?: string } = {},
    harness: AgentHarness = options.harness
  ) =>
    it.scopedLive(title, () => Effect.flatMap(options.model(modelOptions), (model) => withLoop(body, model, harness)), timeout * 2)

  return { harnessCase }
}
