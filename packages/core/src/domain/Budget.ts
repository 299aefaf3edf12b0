/**
 * Budgets (docs/budgets.md): what a run may spend (`config.max_cost_usd`, in US dollars of the
 * usage its agent reports) and how many model turns its agent may take (`config.max_turns`).
 *
 * Decisions:
 * - A run's budget is fixed when it is created, and shown in its `agent_config`: what the request
 *   (or its schedule or automation) asks, else its environment's default, else its team's default;
 *   never more than the team's ceiling (a larger ask is lowered to it, not refused: a schedule made
 *   before the ceiling was lowered goes on starting runs).
 * - `max_cost_usd` bounds the run's whole spend (`request_usage`'s inference and compute cost, over
 *   all its executions) and its descendants': a child's budget is carved out of its parent's
 *   (BudgetTree.ts), and an execution counts what the run's children hold as spent (read at its
 *   start and at each lease renewal). An execution of a run with less than a cent left starts no
 *   agent. What an agent's run token may do around a budget is in BudgetAccess.ts.
 * - An agent may count its turns itself (`usage.turns`): its count then replaces the service's.
 * - `max_turns` bounds the turns of each execution (like `max_runtime_seconds`, and like the agent
 *   CLIs' own turn limits): a follow-up that continues an ended run starts with a fresh count. A turn
 *   is one answer of the model: the service counts one each time the agent says something or calls
 *   a tool after a tool's result or a user's message (or at its start).
 * - Past either (more spent than `max_cost_usd`, a turn beyond `max_turns`) the agent is stopped and
 *   the run ends FAILED `budget_exceeded`, the message naming the budget. The check happens when the
 *   agent reports: an agent that reports its cost only at its end (Claude Code reports it per
 *   prompt) is stopped then; one that reports none (Codex, Gemini CLI report tokens only) is bound
 *   by `max_turns` alone.
 */
import { Schema } from "effect"
import { optionalInput } from "./Common.js"
import type { RequestUsage } from "./Run.js"

/** The largest `max_cost_usd`: one million dollars. */
export const MAX_COST_USD_LIMIT = 1_000_000
/** The largest `max_turns`. */
export const MAX_TURNS_LIMIT = 100_000

/** The smallest `max_cost_usd`: a cent (less than a cent left is nothing left). */
export const MIN_COST_USD = 0.01

/** `max_cost_usd`: a cent to 1,000,000 US dollars. */
export const MaxCostUsd = Schema.Finite.pipe(Schema.greaterThanOrEqualTo(MIN_COST_USD), Schema.lessThanOrEqualTo(MAX_COST_USD_LIMIT)).annotations({
  identifier: "MaxCostUsd",
  description: "what the run and its descendants may spend, in US dollars (0.01 to 1000000)"
})

/** `max_turns`: a whole number of turns, 1 to 100,000. */
export const MaxTurns = Schema.Int.pipe(Schema.between(1, MAX_TURNS_LIMIT)).annotations({
  identifier: "MaxTurns",
  description: "how many model turns the agent may take in each execution (1 to 100000)"
})

/** A team's budgets (`GET`/`PUT /agent/team/budgets`): defaults of its runs and ceilings over them. */
export const TeamBudgets = Schema.Struct({
  default_max_cost_usd: optionalInput(MaxCostUsd),
  max_cost_usd: optionalInput(MaxCostUsd),
  default_max_turns: optionalInput(MaxTurns),
  max_turns: optionalInput(MaxTurns)
}).annotations({ identifier: "TeamBudgets" })
export type TeamBudgets = typeof TeamBudgets.Type

/** The budget asked by a configuration (a run's, an environment's defaults). */
export interface BudgetAsk {
  readonly max_cost_usd?: number | undefined
  readonly max_turns?: number | undefined
}

/** A run's budget as its configuration keeps it: unset keys absent. */
export interface BudgetConfig {
  readonly max_cost_usd?: number
  readonly max_turns?: number
}

/** What a parent run has left for a child: null when the parent has no cost budget. */
export type ParentAllowance = number | null

const lowest = (values: ReadonlyArray<number | undefined | null>): number | undefined => {
  const given = values.filter((v): v is number => typeof v === "number")
  return given.length === 0 ? undefined : Math.min(...given)
}

/**
 * A new run's budget: the request's ask, else the environment's default, else the team's; within
 * the team's ceiling and what its parent has left. Unset keys stay absent.
 */
export const resolveBudget = (
  asked: BudgetAsk,
  environment: BudgetAsk | undefined,
  team: TeamBudgets,
  parentLeft: ParentAllowance
): BudgetConfig => {
  const cost = lowest([asked.max_cost_usd ?? environment?.max_cost_usd ?? team.default_max_cost_usd, team.max_cost_usd, parentLeft])
  const turns = lowest([asked.max_turns ?? environment?.max_turns ?? team.default_max_turns, team.max_turns])
  return {
    ...(cost === undefined ? {} : { max_cost_usd: cost }),
    ...(turns === undefined ? {} : { max_turns: turns })
  }
}

/** What a usage cost, in US dollars. */
export const costOf = (usage: RequestUsage): number => usage.inference_cost + usage.compute_cost

/**
 * What a parent with `budget` has left once `spent` (by it, and held by its descendants) is gone:
 * 0 when less than a cent is; null without a budget.
 */
export const leftOf = (budget: number | undefined, spent: number): ParentAllowance =>
  budget === undefined ? null : budget - spent < MIN_COST_USD ? 0 : budget - spent

/** An execution's budget: the run's, and what was spent before the execution (the run's earlier executions) or is held by its children. */
export interface ExecutionBudget {
  readonly max_cost_usd: number | null
  readonly max_turns: number | null
  readonly spent_before: number
}

/** An execution's budget as it goes: what the run's children hold is read again while it runs. */
export type LiveBudget = { -readonly [K in keyof ExecutionBudget]: ExecutionBudget[K] }

/** Why an execution passed its budget, having spent `spent` (this execution's cost) in `turns` turns; undefined when it has not. */
export const overBudget = (budget: ExecutionBudget, spent: number, turns: number): string | undefined => {
  if (budget.max_turns !== null && turns > budget.max_turns) {
    return `the agent started turn ${turns}, past the run's budget of ${budget.max_turns} turn${budget.max_turns === 1 ? "" : "s"} (config.max_turns), and was stopped`
  }
  const total = budget.spent_before + spent
  if (budget.max_cost_usd !== null && total > budget.max_cost_usd) {
    return `the run spent $${dollars(total)}, past its budget of $${dollars(budget.max_cost_usd)} (config.max_cost_usd); the agent was stopped`
  }
  return undefined
}

/** Why an execution may not start at all: its run has nothing left of its budget (less than a cent). */
export const startProblem = (budget: ExecutionBudget): string | undefined =>
  budget.max_cost_usd !== null && leftOf(budget.max_cost_usd, budget.spent_before) === 0
    ? `the run has spent its budget of $${dollars(budget.max_cost_usd)} (config.max_cost_usd): $${dollars(budget.spent_before)} ` +
      "with what its descendants hold; the agent was not started"
    : undefined

const dollars = (n: number): string => (n >= 100 ? n.toFixed(2) : n.toPrecision(4).replace(/(\.\d*?)0+$/, "$1").replace(/\.$/, ""))
