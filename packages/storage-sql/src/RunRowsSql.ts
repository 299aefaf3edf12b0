/**
 * Reading runs back from their rows (RunStoreSql.ts): as `StoredRun`s, decoded, or as the wire
 * JSON a list sends, spliced from the stored document and columns without decoding them
 * (core's RunJson.ts, docs/performance.md "Serving stored JSON").
 *
 * Decisions:
 * - A row's `doc` of the current `RUN_DOC_SHAPE` is spliced; any other is decoded into a
 *   `StoredRun` and encoded by the schema, so a row written by an older version reads the same.
 * - The two computed flags of an item come from the row (state, sandbox kept, source, location),
 *   never from the document: a document written before the shape was stored holds the flags it
 *   had then, and they are replaced.
 * - Artifacts are read for the runs that have any, in one query per page, as their stored JSON with
 *   their shape; a run with an artifact of another shape is decoded, as a document of another shape is.
 */
import * as TrustedCodec from "@agent-runs/core/domain/TrustedCodec"
import { Scope } from "@agent-runs/core/domain/Common"
import type { ExecutionId, PrincipalUid, RunId, TeamUid } from "@agent-runs/core/domain/Ids"
import { RunItem } from "@agent-runs/core/domain/Run"
import { RUN_DOC_SHAPE, runFlags, runJsonOf } from "@agent-runs/core/domain/RunJson"
import { ownedRunJson, storedRunJson } from "@agent-runs/core/domain/RunRecords"
import { RunExecutionLocation, RunSourceType, RunState } from "@agent-runs/core/domain/RunState"
import { type OwnedRunJson, type RunJson, runListRow, type StoredRun } from "@agent-runs/core/ports/RunStore"
import type { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { iso, JsonColumn as Json } from "./internal/Catalog.js"
import { operation } from "./internal/Catalog.js"
import * as Rows from "./Rows.js"

/** The columns a run is read from. */
export const RUN_COLUMNS = [
  "run_id",
  "team_uid",
  "creator_uid",
  "state",
  "updated_at",
  "lease_execution_id",
  "lease_expires_at",
  "at_capacity",
  "sandbox_retained",
  "has_conversation",
  "artifact_count",
  "source",
  "execution_location",
  "doc_shape",
  "doc",
  "metadata",
  "ancestor_run_ids"
].map((c) => `runs.${c}`).join(", ")

/** What a row holds as the database returns it, its JSON columns still text. */
const RawRow = Schema.Struct({
  run_id: Schema.String,
  team_uid: Schema.String,
  creator_uid: Schema.String,
  state: RunState,
  updated_at: Rows.Millis,
  lease_execution_id: Schema.NullOr(Schema.String),
  lease_expires_at: Schema.NullOr(Rows.Millis),
  at_capacity: Rows.Bool,
  sandbox_retained: Rows.Bool,
  has_conversation: Rows.Bool,
  artifact_count: Rows.Integer,
  source: RunSourceType,
  execution_location: RunExecutionLocation,
  doc_shape: Schema.NullOr(Schema.String),
  doc: Schema.String,
  metadata: Schema.String,
  ancestor_run_ids: Schema.String
})
type RawRow = typeof RawRow.Type

const decodeRawRows = TrustedCodec.decoder(Schema.Array(RawRow))
const decodeItem = TrustedCodec.decoder(RunItem)
const decodeArtifacts = TrustedCodec.decoder(Schema.Array(Json))
const decodeObject = TrustedCodec.decoder(Schema.parseJson(Schema.Record({ key: Schema.String, value: Schema.Unknown })))
const decodeJson = TrustedCodec.decoder(Json)
/** The scope of a run, from its document (the only part of it that access decisions read besides columns). */
const decodeScope = TrustedCodec.decoder(Schema.parseJson(Schema.Struct({ scope: Scope })))

/** A run's artifacts as stored, and whether every one has the current shape. */
interface StoredArtifacts {
  readonly docs: ReadonlyArray<string>
  readonly current: boolean
}
const NO_ARTIFACTS: StoredArtifacts = { docs: [], current: true }

/** Whether a row's run is spliced from its stored JSON: its document and its artifacts have the current shape. */
const splicable = (row: RawRow, artifacts: StoredArtifacts) => row.doc_shape === RUN_DOC_SHAPE && artifacts.current

/** Reading runs from their rows with `sql` (artifacts come from a second query). */
export const runRows = (sql: SqlClient.SqlClient) => {
  /** The stored JSON of the artifacts of these rows' runs, by run, in their order, and whether all have the current shape. */
  const artifactDocs = (rows: ReadonlyArray<RawRow>) => {
    const withArtifacts = rows.filter((r) => r.artifact_count > 0).map((r) => r.run_id)
    const byRun = new Map<string, { docs: Array<string>; current: boolean }>()
    if (withArtifacts.length === 0) return Effect.succeed(byRun)
    return Effect.map(
      sql<{ run_id: string; doc: string; doc_shape: string | null }>`SELECT run_id, doc, doc_shape FROM run_artifacts
        WHERE run_id IN ${sql.in(withArtifacts)} ORDER BY run_id, position`,
      (found) => {
        for (const a of found) {
          const current = a.doc_shape === RUN_DOC_SHAPE
          const held = byRun.get(a.run_id)
          if (held === undefined) byRun.set(a.run_id, { docs: [a.doc], current })
          else {
            held.docs.push(a.doc)
            held.current &&= current
          }
        }
        return byRun
      }
    )
  }

  const storedRun = (row: RawRow, artifacts: StoredArtifacts) =>
    Effect.gen(function* () {
      const item = yield* decodeItem({
        ...(yield* decodeObject(row.doc)),
        run_id: row.run_id,
        state: row.state,
        updated_at: iso(row.updated_at),
        metadata: yield* decodeJson(row.metadata),
        ancestor_run_ids: yield* decodeJson(row.ancestor_run_ids),
        artifacts: yield* decodeArtifacts(artifacts.docs),
        ...runFlags(row)
      })
      return {
        item,
        team_uid: row.team_uid as TeamUid,
        lease: row.lease_execution_id === null || row.lease_expires_at === null
          ? null
          : { execution_id: row.lease_execution_id as ExecutionId, expires_at: row.lease_expires_at },
        at_capacity: row.at_capacity,
        sandbox_retained: row.sandbox_retained,
        has_conversation: row.has_conversation
      } satisfies StoredRun
    })

  /** Stored runs from their rows. */
  const storedRuns = (raw: ReadonlyArray<unknown>) =>
    Effect.gen(function* () {
      const rows = yield* decodeRawRows(raw)
      const artifacts = yield* artifactDocs(rows)
      return yield* Effect.forEach(rows, (row) => storedRun(row, artifacts.get(row.run_id) ?? NO_ARTIFACTS))
    })

  /** A row's run as a list's JSON, spliced from its document (of the current shape). */
  const spliced = (row: RawRow, artifacts: StoredArtifacts): RunJson => ({
    run_id: row.run_id as RunId,
    json: runJsonOf({ ...row, updated_at: iso(row.updated_at), artifacts: artifacts.docs, flags: runFlags(row) }),
    listRow: Effect.suspend(() => operation("RunStore.listJson")(Effect.map(storedRun(row, artifacts), runListRow)))
  })

  /** A row's run as its JSON and owner: its scope read from its document when spliced. */
  const ownedJson = (row: RawRow, artifacts: StoredArtifacts) =>
    splicable(row, artifacts)
      ? Effect.map(decodeScope(row.doc), ({ scope }): OwnedRunJson => ({
        owned: { team_uid: row.team_uid as TeamUid, creator_uid: row.creator_uid as PrincipalUid, scope },
        json: spliced(row, artifacts).json
      }))
      : Effect.map(storedRun(row, artifacts), ownedRunJson)

  /** Runs as their JSON and owners, from their rows. */
  const ownedJsons = (raw: ReadonlyArray<unknown>) =>
    Effect.gen(function* () {
      const rows = yield* decodeRawRows(raw)
      const artifacts = yield* artifactDocs(rows)
      return yield* Effect.forEach(rows, (row) => ownedJson(row, artifacts.get(row.run_id) ?? NO_ARTIFACTS))
    })

  /** Runs as a list's JSON, from their rows: spliced when their document and artifacts have the current shape, else decoded. */
  const runJsons = (raw: ReadonlyArray<unknown>) =>
    Effect.gen(function* () {
      const rows = yield* decodeRawRows(raw)
      const artifacts = yield* artifactDocs(rows)
      const out: Array<RunJson> = []
      for (const row of rows) {
        const own = artifacts.get(row.run_id) ?? NO_ARTIFACTS
        out.push(splicable(row, own) ? spliced(row, own) : storedRunJson(yield* storedRun(row, own)))
      }
      return out
    })

  return { storedRuns, runJsons, ownedJsons } as const
}
