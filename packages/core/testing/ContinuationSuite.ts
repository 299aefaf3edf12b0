/**
 * A follow-up on an ended run (a continuation: a new execution in a new sandbox) against an agent
 * CLI adapter's real CLI (HarnessLoop.ts). Part of `harnessSuite`; on its own (`continuationSuite`)
 * for the other executors an adapter runs on (isolated processes, Docker).
 *
 * - The CLI's own session is resumed: the continuation reports the first execution's session, and
 *   the model receives the first execution's tool result in the history of the new message's
 *   request (a new session told the conversation so far has only its texts). The run's usage
 *   grows by no more than the model calls of the continuation report (a CLI whose resumed session
 *   reports totals since the session began counts from the earlier ones).
 * - When the session's files are gone (the saved archive holds none), the continuation still
 *   succeeds: a new session whose first message tells the task and the conversation so far.
 */
import { describe, expect } from "@effect/vitest"
import { Effect } from "effect"
import { gzipSync } from "node:zlib"
import type { ExecutionPlan } from "../src/engine/ExecutionPlan.js"
import { type CaseEnv, harnessLoop, type HarnessSuiteOptions, hasEnded, stateOf } from "./HarnessLoop.js"

/** The usage the fake model server reports for each call (`@agent-runs/testing`'s `usage`). */
const CALL_INPUT_TOKENS = 100

/** A word the model's shell tool prints, to be found in a later request. */
const newMarker = () => `TOOL-OUTPUT-${Math.random().toString(36).slice(2, 10)}`

/** An archive of session files that holds none: an empty tar, gzipped. */
const emptyArchive = () => new Uint8Array(gzipSync(new Uint8Array(10_240)))

/** Runs `prompt` to its end, then continues the run with `message`: the first session, and the run after. */
const continued = (env: CaseEnv, prompt: string, message: string, prepare: (p: ExecutionPlan) => Effect.Effect<void> = () => Effect.void) =>
  Effect.gen(function*() {
    const { host, plan, until } = env
    const p = plan(prompt)
    yield* host.offer(p)
    yield* until(p.run_id, "the first execution ends", () => hasEnded(host, p.run_id))
    const first = yield* host.run(p.run_id)
    expect(first.snapshot.state, JSON.stringify(first.events)).toBe("SUCCEEDED")
    const session = first.reports.at(-1)?.session_id
    expect(session).toBeTruthy()
    const answer = yield* host.texts(p.run_id)
    yield* prepare(p)
    const callsBefore = env.model.turns.length
    const next: ExecutionPlan = {
      ...p,
      resume_session: session!,
      says_prompt: false,
      usage: first.reports.at(-1)!.request_usage,
      start: { ...p.start, history: [{ role: "assistant", content: answer.map((text) => ({ type: "text" as const, text })) }] }
    }
    yield* host.offer(next)
    yield* host.send(p.run_id, message)
    yield* until(p.run_id, "the continuation ends", () => Effect.runSync(host.run(p.run_id)).events.length > 0 && hasEnded(host, p.run_id))
    const run = yield* host.run(p.run_id)
    expect(stateOf(host, p.run_id), JSON.stringify(run.events)).toBe("SUCCEEDED")
    const turn = env.model.turns.find((t) => t.lastUser.includes(message))
    expect(turn).toBeDefined()
    return { first, session: session!, run, turn: turn!, calls: env.model.turns.length - callsBefore }
  })

/** Registers the cases (inside a suite's `describe`). */
export const continuationCases = (options: HarnessSuiteOptions): void => {
  const { harnessCase } = harnessLoop(options)

  harnessCase("a follow-up on an ended run resumes the CLI's session: the model sees the first execution's tool result", (env) =>
    Effect.gen(function*() {
      const marker = newMarker()
      const { calls, first, run, session, turn } = yield* continued(env, `RUN: echo ${marker}`, "NEW-MESSAGE")
      expect(run.reports.at(-1)?.session_id).toBe(session)
      expect(turn.toolOutputs.some((output) => output.includes(marker)), JSON.stringify(turn.toolOutputs)).toBe(true)
      expect(turn.userTexts.some((u) => u.includes(`RUN: echo ${marker}`) && !u.includes("NEW-MESSAGE"))).toBe(true)
      // The continuation's usage is its own model calls', the first execution's not counted again.
      const before = first.reports.at(-1)!.request_usage.input_tokens
      const after = run.reports.at(-1)!.request_usage.input_tokens
      expect(after).toBeGreaterThan(before)
      expect(after - before).toBeLessThanOrEqual(calls * CALL_INPUT_TOKENS)
    }))

  harnessCase("a follow-up on an ended run whose session files are gone starts a new session told the conversation so far", (env) =>
    Effect.gen(function*() {
      const marker = newMarker()
      const { run, session, turn } = yield* continued(
        env,
        `RUN: echo ${marker}`,
        "NEW-MESSAGE",
        (p) => env.host.keepAgentState(p.run_id, emptyArchive())
      )
      expect(run.reports.at(-1)?.session_id).toBeTruthy()
      expect(run.reports.at(-1)?.session_id).not.toBe(session)
      // The first message of the new session tells the task and what was said (the answer quoting
      // the tool's output), and carries no tool result of the first execution.
      expect(turn.lastUser).toContain(`RUN: echo ${marker}`)
      expect(turn.lastUser).toContain(`DONE:`)
      expect(turn.toolOutputs.some((output) => output.includes(marker))).toBe(false)
    }))
}

/** The continuation cases alone, for an adapter on another executor. */
export const continuationSuite = (name: string, options: HarnessSuiteOptions): void => {
  describe(`${name}: the real CLI against a fake model server`, () => {
    continuationCases(options)
  })
}
