/**
 * Budgets (Budget.ts): how a new run's budget is resolved, and how an execution's turns and spend
 * pass it (Harness.ts's reducer).
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { type ExecutionBudget, overBudget, resolveBudget } from "../src/domain/Budget.js"
import { type HarnessEvent, newExecutionState, outcomeOf, reduce, withBudget } from "../src/domain/Harness.js"

const budget = (b: Partial<ExecutionBudget>): ExecutionBudget => ({ max_cost_usd: null, max_turns: null, spent_before: 0, ...b })

const feed = (b: ExecutionBudget, events: ReadonlyArray<HarnessEvent>) => {
  const state = withBudget(newExecutionState("exec-1"), b)
  events.forEach((event, i) => reduce(state, { _tag: "Event", event }, i))
  return state
}

const say = (text: string): HarnessEvent => ({ type: "message", role: "assistant", text })
const act = (id: string): HarnessEvent => ({ type: "action", id, category: "command", name: "bash", input: {} })
const result = (id: string): HarnessEvent => ({ type: "action_result", action_id: id, state: "completed", output: "ok" })
const usage = (cost: number): HarnessEvent => ({ type: "usage", input_tokens: 1, output_tokens: 1, inference_cost: cost, compute_cost: 0 })

describe("resolveBudget", () => {
  it("takes the ask, else the environment's default, else the team's", () => {
    expect(resolveBudget({ max_cost_usd: 3 }, { max_cost_usd: 2 }, { default_max_cost_usd: 1 }, null)).toEqual({ max_cost_usd: 3 })
    expect(resolveBudget({}, { max_cost_usd: 2, max_turns: 9 }, { default_max_cost_usd: 1 }, null)).toEqual({ max_cost_usd: 2, max_turns: 9 })
    expect(resolveBudget({}, undefined, { default_max_cost_usd: 1, default_max_turns: 4 }, null)).toEqual({ max_cost_usd: 1, max_turns: 4 })
    expect(resolveBudget({}, undefined, {}, null)).toEqual({})
  })

  it("never goes past the team's ceiling nor what the parent has left", () => {
    expect(resolveBudget({ max_cost_usd: 50, max_turns: 500 }, undefined, { max_cost_usd: 10, max_turns: 20 }, null))
      .toEqual({ max_cost_usd: 10, max_turns: 20 })
    // A ceiling alone bounds a run that asks nothing.
    expect(resolveBudget({}, undefined, { max_cost_usd: 10 }, null)).toEqual({ max_cost_usd: 10 })
    expect(resolveBudget({ max_cost_usd: 5 }, undefined, { max_cost_usd: 10 }, 2.5)).toEqual({ max_cost_usd: 2.5 })
    expect(resolveBudget({}, undefined, {}, 2.5)).toEqual({ max_cost_usd: 2.5 })
  })

  it("is never above any bound that applies (property)", () => {
    const cost = fc.option(fc.double({ min: 0.01, max: 1e6, noNaN: true }), { nil: undefined })
    fc.assert(fc.property(cost, cost, cost, cost, fc.option(fc.double({ min: 0, max: 1e6, noNaN: true }), { nil: null }), (ask, env, def, ceiling, left) => {
      const got = resolveBudget({ max_cost_usd: ask }, { max_cost_usd: env }, {
        ...(def === undefined ? {} : { default_max_cost_usd: def }),
        ...(ceiling === undefined ? {} : { max_cost_usd: ceiling })
      }, left).max_cost_usd
      const bounds = [ask ?? env ?? def, ceiling, left ?? undefined].filter((v): v is number => v !== undefined)
      expect(got).toBe(bounds.length === 0 ? undefined : Math.min(...bounds))
    }))
  })
})

describe("turns", () => {
  it("counts one each time the agent speaks or acts after a result or a user's message", () => {
    const state = feed(budget({}), [say("looking"), act("a"), act("b"), result("a"), result("b"), act("c"), result("c"), say("done")])
    expect(state.turns).toBe(3)
    expect(state.exceeded).toBeUndefined()
  })

  it("stops the agent at the turn past max_turns: the run fails budget_exceeded naming it", () => {
    const state = feed(budget({ max_turns: 2 }), [act("a"), result("a"), act("b"), result("b")])
    expect(state.exceeded).toBeUndefined()
    reduce(state, { _tag: "Event", event: say("a third turn") }, 10)
    expect(state.exceeded).toContain("config.max_turns")
    expect(outcomeOf(state, 0)).toMatchObject({ _tag: "Failed", error_code: "budget_exceeded" })
  })
})

describe("cost", () => {
  it("counts what the run spent before the execution: past max_cost_usd fails budget_exceeded", () => {
    const state = feed(budget({ max_cost_usd: 1, spent_before: 0.5 }), [usage(0.25), usage(0.5)])
    expect(state.exceeded).toBeUndefined()
    reduce(state, { _tag: "Event", event: usage(0.51) }, 10)
    expect(state.exceeded).toContain("config.max_cost_usd")
    // Whatever the agent says after, the budget is the reason.
    reduce(state, { _tag: "Event", event: { type: "result", outcome: "succeeded" } }, 11)
    expect(outcomeOf(state, 0)).toMatchObject({ _tag: "Failed", error_code: "budget_exceeded" })
  })

  it("an execution of a run that spent its budget before is past it at once", () => {
    expect(feed(budget({ max_cost_usd: 1, spent_before: 1.5 }), []).exceeded).toContain("config.max_cost_usd")
    expect(feed(budget({ max_cost_usd: 1, spent_before: 1 }), []).exceeded).toBeUndefined()
  })

  it("without a budget nothing is ever exceeded", () => {
    expect(overBudget(budget({}), 1e9, 1e6)).toBeUndefined()
  })
})
