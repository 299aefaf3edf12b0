/**
 * A team's overview in SQL (core's RunOverview.ts): the runs of the viewer's team it may see (as
 * the run list does) created at or after a time,
 * the newest first (the `runs_team_created` index, read backwards), with when each was created,
 * started and ended, and its state. `started_at` and `ended_at` are read out of the stored document
 * (JSON text): `json_extract` on SQLite, a cast to `json` on PostgreSQL.
 */
import type { Viewer } from "@agent-runs/core/domain/Access"
import type { OverviewRun } from "@agent-runs/core/domain/RunOverview"
import type { RunState } from "@agent-runs/core/domain/RunState"
import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { operation, visibleTo } from "./internal/Catalog.js"

/** An RFC 3339 time as epoch milliseconds; null when absent (or, never written so, unreadable). */
const millisOf = (value: string | null): number | null => {
  const millis = value === null ? NaN : Date.parse(value)
  return Number.isFinite(millis) ? millis : null
}

export const runOverviewSql = (reader: SqlClient.SqlClient) => {
  const field = (name: "started_at" | "ended_at") =>
    reader.onDialectOrElse({
      pg: () => reader.literal(`CAST(runs.doc AS json)->>'${name}'`),
      orElse: () => reader.literal(`json_extract(runs.doc, '$.${name}')`)
    })

  const overviewRuns = Effect.fn("RunStore.overviewRuns")(
    function* (viewer: Viewer, since: number, limit: number) {
      const rows = yield* reader<{ state: string; created_at: number | string; started_at: string | null; ended_at: string | null }>`
        SELECT runs.state, runs.created_at, ${field("started_at")} AS started_at, ${field("ended_at")} AS ended_at
        FROM runs WHERE ${visibleTo(reader, viewer, "runs")} AND runs.created_at >= ${since}
        ORDER BY runs.created_at DESC, runs.run_id DESC LIMIT ${limit}`
      return rows.map((row): OverviewRun => ({
        state: row.state as RunState,
        created_at: Number(row.created_at),
        started_at: millisOf(row.started_at),
        ended_at: millisOf(row.ended_at)
      }))
    },
    operation("RunStore.overviewRuns")
  )

  return { overviewRuns } as const
}
