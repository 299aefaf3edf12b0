/**
 * Budgets (Budget.ts): how a new run's budget is resolved, and how an execution's turns and spend
 * pass it (Harness.ts's reducer).
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import type { Viewer } from "../src/domain/Access.js"
import { type ExecutionBudget, leftOf, overBudget, resolveBudget, startProblem } from "../src/domain/Budget.js"
import { budgetEscapeProblem, followupProblem, parentProblem } from "../src/domain/BudgetAccess.js"
import { committedBy, type Descendant, fitsInParent, heldBy, MAX_DESCENDANTS } from "../src/domain/BudgetTree.js"
import type { PrincipalUid, RunId, TeamUid } from "../src/domain/Ids.js"
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
const usage = (cost: number, turns?: number): HarnessEvent => ({
  type: "usage",
  input_tokens: 1,
  output_tokens: 1,
  inference_cost: cost,
  compute_cost: 0,
  ...(turns === undefined ? {} : { turns })
})

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

  it("an execution of a run with less than a cent left does not start", () => {
    expect(startProblem(budget({ max_cost_usd: 1, spent_before: 1.5 }))).toContain("config.max_cost_usd")
    expect(startProblem(budget({ max_cost_usd: 1, spent_before: 0.996 }))).toContain("config.max_cost_usd")
    expect(startProblem(budget({ max_cost_usd: 1, spent_before: 0.99 }))).toBeUndefined()
    expect(startProblem(budget({ spent_before: 1e9 }))).toBeUndefined()
  })

  it("without a budget nothing is ever exceeded", () => {
    expect(overBudget(budget({}), 1e9, 1e6)).toBeUndefined()
  })
})

describe("turns an agent counts itself", () => {
  it("replace the service's count once reported (opencode: one per model call)", () => {
    const state = feed(budget({ max_turns: 2 }), [
      usage(0, 1),
      act("a"), result("a"), act("b"), result("b"), act("c"), result("c"),
      usage(0, 2),
      say("done")
    ])
    expect(state.exceeded).toBeUndefined()
    reduce(state, { _tag: "Event", event: usage(0, 3) }, 20)
    expect(state.exceeded).toContain("config.max_turns")
  })
})

describe("children", () => {
  const d = (run_id: string, ancestors: ReadonlyArray<string>, cost: number, live: boolean, max: number | null = null): Descendant =>
    ({ run_id, ancestor_run_ids: ancestors, cost, live, max_cost_usd: max })

  it("hold their whole budget while they or theirs may spend, what they spent once all ended", () => {
    const tree = [
      d("c1", ["p"], 0.5, true, 4), // live: holds its 4
      d("g1", ["p", "c1"], 1, false, 2), // inside c1's 4
      d("c2", ["p"], 1.5, false, 3), // ended: what it spent
      d("c3", ["p"], 0.1, false, 1),
      d("g3", ["p", "c3"], 0.2, true, 0.9), // c3 ended, its child still spends: c3 holds its 1
      d("c4", ["p"], 5, true, 4) // spent past what it held (reported late): what it spent
    ]
    expect(committedBy("p", tree)).toBeCloseTo(4 + 1.5 + 1 + 5)
    // From a child's point of view: only its own subtree.
    expect(committedBy("c1", tree.filter((x) => x.ancestor_run_ids.includes("c1")))).toBeCloseTo(1)
  })

  it("carve their budget out of what the parent has left: nothing below a cent", () => {
    expect(leftOf(10, 4 + committedBy("p", [d("c", ["p"], 0, true, 5)]))).toBe(1)
    expect(leftOf(1, 0.1 + 0.2 + 0.7 - 1e-16)).toBe(0)
    expect(leftOf(undefined, 100)).toBeNull()
  })

  const agent = (acting: string, budgetUsd?: number): Viewer => ({
    principal_uid: "p" as PrincipalUid,
    team_uid: "t" as TeamUid,
    role: "admin",
    instance_admin: false,
    acting_run_id: acting as RunId,
    ...(budgetUsd === undefined ? {} : { acting_run_max_cost_usd: budgetUsd })
  })

  it("are made by an agent under its own run or its descendants only", () => {
    expect(parentProblem(agent("a"), { run_id: "a", ancestor_run_ids: [] })).toBeUndefined()
    expect(parentProblem(agent("a"), { run_id: "c", ancestor_run_ids: ["a"] })).toBeUndefined()
    expect(parentProblem(agent("a"), { run_id: "b", ancestor_run_ids: ["x"] })).toContain("parent_run_id")
    const person: Viewer = { principal_uid: "p" as PrincipalUid, team_uid: "t" as TeamUid, role: "member", instance_admin: false }
    expect(parentProblem(person, { run_id: "b", ancestor_run_ids: [] })).toBeUndefined()
  })

  it("fit in the parent only as far as it has left, all of it held when it has too many to read", () => {
    const live = d("c", ["p"], 0, true, 0.5)
    expect(fitsInParent("p", 1, 0.2, [live], 0.3)).toBe(true)
    expect(fitsInParent("p", 1, 0.2, [live], 0.31)).toBe(false)
    const many = Array.from({ length: MAX_DESCENDANTS }, (_, i) => d(`c${i}`, ["p"], 0, false))
    expect(heldBy("p", many)).toBeGreaterThan(1e9)
    expect(fitsInParent("p", 1e6, 0, many, 0.01)).toBe(false)
  })

  it("an agent with a cost budget sends follow-ups to its own tree only", () => {
    expect(followupProblem(agent("a", 5), { run_id: "b", ancestor_run_ids: [] })).toContain("outside the budget")
    expect(followupProblem(agent("a", 5), { run_id: "c", ancestor_run_ids: ["a"] })).toBeUndefined()
    expect(followupProblem(agent("a"), { run_id: "b", ancestor_run_ids: [] })).toBeUndefined()
  })

  it("an agent with a cost budget makes no schedules or automations", () => {
    expect(budgetEscapeProblem(agent("a", 5), "create schedules")).toContain("config.max_cost_usd")
    expect(budgetEscapeProblem(agent("a"), "create schedules")).toBeUndefined()
  })
})
