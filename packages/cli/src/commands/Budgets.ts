/**
 * `agent-runs budgets show|set` and `agent-runs spend` (docs/budgets.md): the team's default budgets
 * and ceilings (`GET`/`PUT /agent/team/budgets`), and what its runs spent by day
 * (`GET /agent/team/spend`).
 *
 * Decisions:
 * - `set` replaces all four values as the API does: a value not given is removed, so the command
 *   shows what it sets first (`--default-max-cost-usd 5 --max-cost-usd 50` leaves no turn limits).
 * - `--json` prints the API's answer as it is, for scripts.
 */
import { Command, Options } from "@effect/cli"
import { AgentRunsClient } from "@agent-runs/client"
import { Budget, Budgets } from "@agent-runs/core"
import { Console, Effect, Option, Schema } from "effect"
import * as Format from "../Format.js"
import * as Connection from "./Connection.js"

const json = Options.boolean("json").pipe(Options.withDescription("print JSON (the API's answer) instead of text"))

const LABELS = [
  ["default_max_cost_usd", "default max cost (USD)"],
  ["max_cost_usd", "ceiling of max cost (USD)"],
  ["default_max_turns", "default max turns"],
  ["max_turns", "ceiling of max turns"]
] as const

/** The budgets as `key: value` lines. */
export const describeBudgets = (budgets: Budget.TeamBudgets): string =>
  LABELS.map(([key, label]) => `${`${label}:`.padEnd(27)} ${budgets[key] ?? "none"}`).join("\n")

const encodeBudgets = Schema.encodeSync(Budget.TeamBudgets)

const show = Command.make("show", { ...Connection.options, json }, (options) =>
  Effect.gen(function*() {
    const client = yield* AgentRunsClient.AgentRunsClient
    const budgets = yield* client.team.getTeamBudgets({ headers: {} })
    yield* Console.log(options.json ? JSON.stringify(encodeBudgets(budgets)) : describeBudgets(budgets))
  }).pipe(Effect.provide(Connection.clientLayer(options)))
).pipe(Command.withDescription("The team's default budgets and the ceilings over them (anyone in the team)."))

const cost = (name: string, what: string) => Options.float(name).pipe(Options.optional, Options.withDescription(what))
const turns = (name: string, what: string) => Options.integer(name).pipe(Options.optional, Options.withDescription(what))

const set = Command.make(
  "set",
  {
    ...Connection.options,
    json,
    defaultMaxCostUsd: cost("default-max-cost-usd", "max_cost_usd of a run that asks none (and whose environment sets none)"),
    maxCostUsd: cost("max-cost-usd", "the ceiling of a run's max_cost_usd"),
    defaultMaxTurns: turns("default-max-turns", "max_turns of a run that asks none (and whose environment sets none)"),
    maxTurns: turns("max-turns", "the ceiling of a run's max_turns")
  },
  (options) =>
    Effect.gen(function*() {
      const client = yield* AgentRunsClient.AgentRunsClient
      const given = (value: Option.Option<number>) => Option.getOrUndefined(value)
      const payload = Object.fromEntries(
        Object.entries({
          default_max_cost_usd: given(options.defaultMaxCostUsd),
          max_cost_usd: given(options.maxCostUsd),
          default_max_turns: given(options.defaultMaxTurns),
          max_turns: given(options.maxTurns)
        }).filter(([, value]) => value !== undefined)
      ) as Budget.TeamBudgets
      const budgets = yield* client.team.setTeamBudgets({ headers: {}, payload })
      yield* Console.log(options.json ? JSON.stringify(encodeBudgets(budgets)) : describeBudgets(budgets))
    }).pipe(Effect.provide(Connection.clientLayer(options)))
).pipe(
  Command.withDescription(
    "Replaces the team's budgets (team admins): a value not given is removed. Applies to runs created afterwards."
  )
)

/** `agent-runs budgets …`. */
export const budgetsCommand = Command.make("budgets").pipe(
  Command.withDescription("The team's default budgets and ceilings of its runs' max_cost_usd and max_turns (docs/budgets.md)."),
  Command.withSubcommands([show, set])
)

/** What the team's runs spent, as a table with the total under it. */
export const describeSpend = (spend: Budgets.TeamSpendResponse): string => {
  const dollars = (usd: number) => `$${usd.toFixed(2)}`
  const rows = spend.days.map((d) => [d.day, String(d.runs), dollars(d.cost_usd), String(d.input_tokens), String(d.output_tokens)])
  const table = rows.length === 0 ? `no runs since ${spend.since}` : Format.table(["DAY (UTC)", "RUNS", "COST", "TOKENS IN", "TOKENS OUT"], rows)
  return `${table}\ntotal since ${spend.since}: ${dollars(spend.total_cost_usd)}`
}

/** `agent-runs spend [--days N]`. */
export const spendCommand = Command.make(
  "spend",
  {
    ...Connection.options,
    json,
    days: Options.integer("days").pipe(Options.withDefault(Budgets.DEFAULT_SPEND_DAYS), Options.withDescription("how many days, today included (1 to 90)"))
  },
  (options) =>
    Effect.gen(function*() {
      const client = yield* AgentRunsClient.AgentRunsClient
      const spend = yield* client.team.getTeamSpend({ headers: {}, urlParams: { days: options.days } })
      yield* Console.log(options.json ? JSON.stringify(Schema.encodeSync(Budgets.TeamSpendResponse)(spend)) : describeSpend(spend))
    }).pipe(Effect.provide(Connection.clientLayer(options)))
).pipe(Command.withDescription("What the team's runs spent by UTC day of their creation (GET /agent/team/spend)."))
