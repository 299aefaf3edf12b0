/**
 * The rows a run store writes, and how new runs' rows are inserted (RunStoreSql.ts): a run's
 * columns and document, its timeline events, shapers and artifacts as rows, and the rows of new
 * runs by table, inserted on PostgreSQL as one statement when their parameters fit.
 */
import type { Shaper } from "@agent-runs/core/domain/Access"
import { Artifact } from "@agent-runs/core/domain/Artifact"
import type { RunId } from "@agent-runs/core/domain/Ids"
import { RunItem } from "@agent-runs/core/domain/Run"
import { type RUN_DOC_OMITS, RUN_DOC_SHAPE } from "@agent-runs/core/domain/RunJson"
import * as TrustedCodec from "@agent-runs/core/domain/TrustedCodec"
import type { NewRun, NewTimelineEvent, StoredRun } from "@agent-runs/core/ports/RunStore"
import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { auditRow } from "./AuditLogSql.js"
import { bool, json, millis } from "./internal/Catalog.js"
import { searchColumns } from "./RunListSql.js"

// A run and its artifacts are checked by their schemas when core builds them (RunItem's and
// Artifact's constructors, requests' decoders); writing them applies the transformations only.
const encodeItem = TrustedCodec.encoder(RunItem)
const encodeArtifact = TrustedCodec.encoder(Artifact)

/** Inserting many rows: chunks that stay below SQLite's limit of bound parameters per statement. */
export const MAX_PARAMETERS = 30_000

/** The tables of a new run, parents first (and the audit entry of its creation). */
export const NEW_RUN_TABLES = [
  "runs",
  "run_metadata",
  "run_ancestors",
  "run_artifacts",
  "timeline_events",
  "run_shapers",
  "audit_log"
] as const
/** The rows of runs being created, by table. */
export type NewRunRows = Record<(typeof NEW_RUN_TABLES)[number], Array<Record<string, unknown>>>

export const noRows = (): NewRunRows => ({
  runs: [],
  run_metadata: [],
  run_ancestors: [],
  run_artifacts: [],
  timeline_events: [],
  run_shapers: [],
  audit_log: []
})

/** The row writers over `sql`. */
export const runWrites = (sql: SqlClient.SqlClient) => {
  const insertAll = (table: string, rows: ReadonlyArray<Record<string, unknown>>) => {
    if (rows.length === 0) return Effect.void
    const size = Math.max(1, Math.floor(MAX_PARAMETERS / Object.keys(rows[0]!).length))
    const chunks: Array<ReadonlyArray<Record<string, unknown>>> = []
    for (let i = 0; i < rows.length; i += size) chunks.push(rows.slice(i, i + size))
    return Effect.forEach(chunks, (chunk) => sql`INSERT INTO ${sql(table)} ${sql.insert(chunk)}`, { discard: true })
  }

  /** The columns a run writes (all but the counters and the parts fixed at creation). */
  const runColumns = (run: StoredRun) =>
    Effect.map(encodeItem(run.item), (encoded) => {
      const {
        ancestor_run_ids: _ancestors,
        artifacts: _artifacts,
        metadata: _metadata,
        run_id: _runId,
        state: _state,
        updated_at: _updatedAt,
        is_sandbox_running: _running,
        is_run_type_cancellable: _cancellable,
        ...doc
      } = encoded satisfies Record<(typeof RUN_DOC_OMITS)[number], unknown>
      const item = run.item
      const config = item.agent_config
      return {
        team_uid: run.team_uid,
        creator_uid: item.creator.uid,
        scope_type: item.scope.type,
        state: item.state,
        created_at: millis(item.created_at),
        updated_at: millis(item.updated_at),
        title: item.title,
        skill_name: item.agent_skill?.name ?? null,
        agent_name: config.name ?? null,
        model_id: config.model_id ?? null,
        skill_spec: config.skill_spec ?? null,
        environment_id: item.environment_id,
        source: item.source,
        execution_location: item.execution_location,
        schedule_id: item.schedule?.schedule_id ?? null,
        executor_uid: item.executor.uid,
        worker_host: config.worker_host === undefined || config.worker_host === "" ? null : config.worker_host,
        priority: config.priority ?? 0,
        attempt: item.attempt,
        execution_count: item.execution_count,
        conversation_id: item.conversation_id,
        lease_execution_id: run.lease?.execution_id ?? null,
        lease_expires_at: run.lease?.expires_at ?? null,
        at_capacity: bool(sql, run.at_capacity),
        sandbox_retained: bool(sql, run.sandbox_retained),
        has_conversation: bool(sql, run.has_conversation),
        ...searchColumns(item.title, item.prompt, config.skill_spec),
        doc_shape: RUN_DOC_SHAPE,
        doc: json(doc)
      }
    })

  /** The events' rows, numbered from `first`. */
  const eventRows = (runId: RunId, first: number, events: ReadonlyArray<NewTimelineEvent>) =>
    events.map((e, i) => ({
      run_id: runId,
      sequence: first + i,
      event_type: e.event_type,
      occurred_at: e.occurred_at,
      execution_id: e.execution_id,
      message: e.message ?? null,
      data: e.data === undefined ? null : json(e.data)
    }))

  /** The rows of a run's shapers, each (principal, role) once. */
  const shaperRows = (runId: RunId, shapers: ReadonlyArray<Shaper>) => {
    const seen = new Set<string>()
    return shapers.flatMap((s) => {
      const key = `${s.uid} ${s.role}`
      if (seen.has(key)) return []
      seen.add(key)
      return [{ run_id: runId, principal_uid: s.uid, role: s.role }]
    })
  }

  const artifactRow = (runId: RunId, position: number, artifact: Artifact) =>
    Effect.map(encodeArtifact(artifact), (encoded) => ({
      run_id: runId,
      position,
      artifact_type: artifact.artifact_type,
      created_at: millis(artifact.created_at),
      external_url: artifact.artifact_type === "EXTERNAL_REFERENCE" ? artifact.data.url : null,
      doc: json(encoded),
      doc_shape: RUN_DOC_SHAPE
    }))

  /** The rows of new runs and their first events, by table. */
  const newRunRows = (runs: ReadonlyArray<NewRun>) =>
    Effect.gen(function* () {
      const rows = noRows()
      for (const { audit, events: first, run, shapers } of runs) {
        const item = run.item
        rows.runs.push({
          run_id: item.run_id,
          ...(yield* runColumns(run)),
          last_sequence: first.length,
          artifact_count: item.artifacts.length,
          metadata: json(item.metadata),
          ancestor_run_ids: json(item.ancestor_run_ids)
        })
        for (const [k, value] of Object.entries(item.metadata)) rows.run_metadata.push({ run_id: item.run_id, key: k, value })
        for (const ancestor of new Set(item.ancestor_run_ids)) {
          rows.run_ancestors.push({ run_id: item.run_id, ancestor_run_id: ancestor })
        }
        for (const [i, artifact] of item.artifacts.entries()) {
          rows.run_artifacts.push(yield* artifactRow(item.run_id, i + 1, artifact))
        }
        rows.timeline_events.push(...eventRows(item.run_id, 1, first))
        rows.run_shapers.push(...shaperRows(item.run_id, shapers ?? []))
        if (audit !== undefined) rows.audit_log.push(yield* auditRow(audit))
      }
      return rows
    })

  /**
   * On PostgreSQL, the rows of `newRunRows` as one statement (an INSERT per table in
   * data-modifying WITHs) when its parameters fit in one, ending in `SELECT ${signal}` when a
   * signal is given (`Wakeups.notifyExpression`); none otherwise.
   */
  const oneStatement = (rows: NewRunRows, signal: string | undefined) => {
    const tables = NEW_RUN_TABLES.filter((table) => rows[table].length > 0)
    const parameters = tables.reduce((n, table) => n + rows[table].length * Object.keys(rows[table][0]!).length, 0)
    const fits = sql.onDialectOrElse({ pg: () => tables.length > 0 && parameters <= MAX_PARAMETERS, orElse: () => false })
    if (!fits) return undefined
    const inserts = tables.map((table) => sql`INSERT INTO ${sql(table)} ${sql.insert(rows[table])}`)
    const last = signal === undefined ? inserts.pop()! : sql`SELECT ${sql.literal(signal)}`
    const withs = inserts.map((insert, i) => sql`${sql.literal(`i${i}`)} AS (${insert})`)
    return withs.length === 0 ? last : sql`WITH ${sql.csv(withs)} ${last}`
  }

  /** Writes the rows of `newRunRows` (inside the caller's transaction): one statement where it can, else an INSERT per table and chunk. */
  const insertRunRows = (rows: NewRunRows) =>
    oneStatement(rows, undefined) ?? Effect.forEach(NEW_RUN_TABLES, (table) => insertAll(table, rows[table]), { discard: true })

  return { artifactRow, eventRows, insertAll, insertRunRows, newRunRows, oneStatement, runColumns, shaperRows } as const
}
