/**
 * AuditLog over SqlClient: one row of `audit_log` per entry (migration 0009). `recording` runs the
 * write inside a transaction and inserts the entry in the same one (the stores' own transactions
 * nest as savepoints), so the entry and the change it records commit together or not at all.
 */
import { AuditEntry, type AuditQuery } from "@agent-runs/core/domain/Audit"
import * as TrustedCodec from "@agent-runs/core/domain/TrustedCodec"
import { AuditLog } from "@agent-runs/core/ports/AuditLog"
import { StorageError } from "@agent-runs/core/ports/Storage"
import { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { Effect, Layer, Option, Schema } from "effect"
import { json, millis, operation } from "./internal/Catalog.js"

const encodeEntry = TrustedCodec.encoder(AuditEntry)

/** The `audit_log` row of an entry (also written by the run store, with the run it records). */
export const auditRow = (entry: AuditEntry) =>
  Effect.map(encodeEntry(entry), (doc) => ({
    id: entry.id,
    at: millis(entry.at),
    team_uid: entry.team_uid,
    principal_uid: entry.actor.principal_uid,
    action: entry.action,
    resource_type: entry.resource.type,
    resource_id: entry.resource.id,
    outcome: entry.outcome,
    doc: json(doc)
  }))
const decodeDocs = TrustedCodec.decoder(Schema.Array(Schema.Struct({ doc: Schema.parseJson(AuditEntry) })))

/** AuditLog, needing `SqlClient`. */
export const layer = Layer.effect(
  AuditLog,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const insert = (entry: AuditEntry) => Effect.flatMap(auditRow(entry), (row) => sql`INSERT INTO audit_log ${sql.insert(row)}`)

    const recording = <A, E, R>(write: Effect.Effect<A, E, R>, entry: (result: A) => AuditEntry) =>
      sql.withTransaction(
        Effect.tap(write, (result) => insert(entry(result)).pipe(operation("AuditLog.recording")))
      ).pipe(
        // The transaction's own statements (BEGIN, COMMIT) failing: storage failed; `write`'s errors stay as they are.
        Effect.catchIf((e): e is SqlError => e instanceof SqlError, (cause) => new StorageError({ operation: "AuditLog.recording", cause })),
        Effect.catchSomeDefect((defect) =>
          defect instanceof SqlError
            ? Option.some(Effect.fail(new StorageError({ operation: "AuditLog.recording", cause: defect })))
            : Option.none()
        ),
        Effect.withSpan("AuditLog.recording")
      )

    const record = Effect.fn("AuditLog.record")(
      function* (entry: AuditEntry) {
        yield* sql.withTransaction(insert(entry))
      },
      operation("AuditLog.record")
    )

    const list = Effect.fn("AuditLog.list")(
      function* (query: AuditQuery) {
        const conditions = [
          query.team_uid === undefined ? undefined : sql`team_uid = ${query.team_uid}`,
          query.principal_uid === undefined ? undefined : sql`principal_uid = ${query.principal_uid}`,
          query.action === undefined ? undefined : sql`action = ${query.action}`,
          query.resource_type === undefined ? undefined : sql`resource_type = ${query.resource_type}`,
          query.resource_id === undefined ? undefined : sql`resource_id = ${query.resource_id}`,
          query.outcome === undefined ? undefined : sql`outcome = ${query.outcome}`,
          query.since === undefined ? undefined : sql`at >= ${query.since}`,
          query.until === undefined ? undefined : sql`at < ${query.until}`,
          query.cursor === undefined
            ? undefined
            : query.order === "newest_first"
            ? sql`id < ${query.cursor}`
            : sql`id > ${query.cursor}`
        ].filter((c) => c !== undefined)
        const where = conditions.length === 0 ? sql`` : sql`WHERE ${sql.and(conditions)}`
        const order = sql.literal(query.order === "newest_first" ? "DESC" : "ASC")
        const rows = yield* sql`SELECT doc FROM audit_log ${where} ORDER BY id ${order} LIMIT ${query.limit}`
        return (yield* decodeDocs(rows)).map((r) => r.doc)
      },
      operation("AuditLog.list")
    )

    const prune = Effect.fn("AuditLog.prune")(
      function* (before: number, limit: number) {
        const removed = yield* sql`DELETE FROM audit_log WHERE id IN (
          SELECT id FROM audit_log WHERE at < ${before} ORDER BY at LIMIT ${limit}
        ) RETURNING id`
        return removed.length
      },
      operation("AuditLog.prune")
    )

    return AuditLog.of({ recording, record, list, prune })
  })
)
