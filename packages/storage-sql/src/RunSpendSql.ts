/**
 * What runs spent, in SQL (core's Budget.ts): a run's descendants with their spend and budgets (its
 * budget counts what they hold) and a team's spend by day. Both read `request_usage` out of the runs' stored documents (JSON text):
 * `json_extract` on SQLite, a cast to `json` on PostgreSQL.
 *
 * Decisions:
 * - A day is the UTC day a run was created (`created_at`, epoch millis, divided by 86,400,000): a run
 *   that goes on past midnight counts all its spend on the day it started.
 * - The spend by day reads every run of the team created in the window (through the
 *   `runs_team_created` index); the window is bounded by the caller (core's Budgets: 90 days).
 */
import type { RunId, TeamUid } from "@agent-runs/core/domain/Ids"
import { type Descendant, MAX_DESCENDANTS } from "@agent-runs/core/domain/BudgetTree"
import { isTerminal, type RunState } from "@agent-runs/core/domain/RunState"
import * as TrustedCodec from "@agent-runs/core/domain/TrustedCodec"
import type { DaySpend } from "@agent-runs/core/ports/RunStore"
import type { SqlClient } from "@effect/sql"
import { DateTime, Effect, Either, Schema } from "effect"
import { operation } from "./internal/Catalog.js"

const DAY_MS = 86_400_000

const decodeIds = TrustedCodec.decoder(Schema.parseJson(Schema.Array(Schema.String)))

type UsageField = "inference_cost" | "compute_cost" | "input_tokens" | "output_tokens"

/** A number as a driver returns an aggregate (PostgreSQL sums as strings): 0 when null or not finite. */
const numberOf = (value: number | string | null | undefined): number => {
  const n = Number(value ?? 0)
  return Number.isFinite(n) ? n : 0
}

export const runSpendSql = (reader: SqlClient.SqlClient) => {
  /** One field of a run's `request_usage`, as a number, from `runs.doc`. */
  const usage = (field: UsageField) =>
    reader.onDialectOrElse({
      pg: () => reader.literal(`CAST(CAST(runs.doc AS json)->'request_usage'->>'${field}' AS double precision)`),
      orElse: () => reader.literal(`json_extract(runs.doc, '$.request_usage.${field}')`)
    })
  const cost = reader`(${usage("inference_cost")} + ${usage("compute_cost")})`

  const maxCost = reader.onDialectOrElse({
    pg: () => reader.literal(`CAST(CAST(runs.doc AS json)->'agent_config'->>'max_cost_usd' AS double precision)`),
    orElse: () => reader.literal(`json_extract(runs.doc, '$.agent_config.max_cost_usd')`)
  })

  const descendants = Effect.fn("RunStore.descendants")(
    function* (runId: RunId) {
      const rows = yield* reader<{
        run_id: string
        state: string
        ancestor_run_ids: string
        cost: number | string | null
        max_cost_usd: number | string | null
      }>`SELECT runs.run_id, runs.state, runs.ancestor_run_ids, ${cost} AS cost, ${maxCost} AS max_cost_usd
        FROM run_ancestors a JOIN runs ON runs.run_id = a.run_id WHERE a.ancestor_run_id = ${runId} LIMIT ${MAX_DESCENDANTS}`
      return rows.map((row): Descendant => ({
        run_id: row.run_id,
        ancestor_run_ids: Either.getOrElse(decodeIds(row.ancestor_run_ids), () => []),
        live: !isTerminal(row.state as RunState),
        cost: numberOf(row.cost),
        max_cost_usd: row.max_cost_usd === null ? null : numberOf(row.max_cost_usd)
      }))
    },
    operation("RunStore.descendants")
  )

  const spendByDay = Effect.fn("RunStore.spendByDay")(
    function* (team: TeamUid, since: number) {
      // Written out, not a parameter: PostgreSQL groups by the same expression only as the same text.
      const day = reader.literal(`(runs.created_at / ${DAY_MS})`)
      const rows = yield* reader<{
        day: number | string
        runs: number | string
        cost: number | string | null
        input_tokens: number | string | null
        output_tokens: number | string | null
      }>`SELECT ${day} AS day, COUNT(*) AS runs, SUM(${cost}) AS cost,
          SUM(${usage("input_tokens")}) AS input_tokens, SUM(${usage("output_tokens")}) AS output_tokens
        FROM runs WHERE runs.team_uid = ${team} AND runs.created_at >= ${since}
        GROUP BY ${day} ORDER BY ${day}`
      return rows.map((row): DaySpend => ({
        day: DateTime.formatIsoDateUtc(DateTime.unsafeMake(numberOf(row.day) * DAY_MS)),
        runs: numberOf(row.runs),
        cost_usd: numberOf(row.cost),
        input_tokens: numberOf(row.input_tokens),
        output_tokens: numberOf(row.output_tokens)
      }))
    },
    operation("RunStore.spendByDay")
  )

  /**
   * What a run spent itself; on PostgreSQL its row is locked for the transaction (children carved
   * out of its budget at the same time wait for each other; SQLite's transactions are serial).
   */
  const lockedCost = (runId: RunId) =>
    Effect.map(
      reader<{ cost: number | string | null }>`SELECT ${cost} AS cost FROM runs WHERE run_id = ${runId} ${
        reader.onDialectOrElse({ pg: () => reader.literal("FOR UPDATE"), orElse: () => reader.literal("") })
      }`,
      (rows) => numberOf(rows[0]?.cost)
    )

  return { descendants, spendByDay, lockedCost } as const
}
