/**
 * What the catalog stores (schedules, environments, webhooks, automations, secrets, identity)
 * share: parameter encoding per dialect, time conversions, the visibility condition of
 * `Access.canSee` in SQL, row decoding, and the mapping of failures to `StorageError`.
 */
import type { Viewer } from "@agent-runs/core/domain/Access"
import * as TrustedCodec from "@agent-runs/core/domain/TrustedCodec"
import { FollowupInboxFull, FollowupTotalSpent } from "@agent-runs/core/ports/RunStore"
import { DuplicateKey, StaleWrite, StorageError } from "@agent-runs/core/ports/Storage"
import type { SqlClient, Statement } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import type { ParseResult } from "effect"
import { DateTime, Effect, Option, Schema } from "effect"

/** A boolean parameter: BOOLEAN on PostgreSQL, 0/1 on SQLite (whose driver binds no booleans). */
export const bool = (sql: SqlClient.SqlClient, value: boolean): boolean | number =>
  sql.onDialectOrElse({ pg: () => value, orElse: () => (value ? 1 : 0) })

/** The epoch milliseconds of a timestamp, as stored. */
export const millis = (t: DateTime.Utc): number => DateTime.toEpochMillis(t)

/** The wire form of stored epoch milliseconds (RFC 3339, UTC, milliseconds), for the core Schemas. */
export const iso = (ms: number): string => new Date(ms).toISOString()

/** A document for a TEXT column: the JSON of what a core Schema encoded. */
export const json = (encoded: unknown): string => JSON.stringify(encoded)

/** A TEXT column holding JSON, parsed (and checked by the core Schema decoding the row). */
export const JsonColumn = Schema.parseJson()

export { Integer as Count } from "../Rows.js"

/** A BYTEA / BLOB column. */
export const Bytes = Schema.Uint8ArrayFromSelf

/**
 * The condition `Access.canSee` puts on a resource with `team_uid`, `scope_type` and
 * `creator_uid` columns: in the viewer's team, and Team-scoped, the viewer's own, or seen by an admin.
 */
export const visibleTo = (sql: SqlClient.SqlClient, viewer: Viewer, alias: string): Statement.Fragment => {
  const column = (name: string) => sql(`${alias}.${name}`)
  return viewer.role === "admin"
    ? sql`${column("team_uid")} = ${viewer.team_uid}`
    : sql`${column("team_uid")} = ${viewer.team_uid} AND (${column("scope_type")} = 'Team' OR ${
      column("creator_uid")
    } = ${viewer.principal_uid})`
}

const decoders = new WeakMap<object, unknown>()

/**
 * Decodes the rows a query returned. The rows are this service's own writes, so only the row
 * schema's transformations run, not its checks (`TrustedCodec`; docs/performance.md).
 */
export const decodeRows = <A, I>(schema: Schema.Schema<A, I>) => {
  // One decoder per row schema: queries call this for every statement, and building one is not free.
  let decode = decoders.get(schema) as ((rows: unknown) => Effect.Effect<ReadonlyArray<A>, ParseResult.ParseError>) | undefined
  if (decode === undefined) {
    decode = TrustedCodec.decoder(Schema.Array(schema))
    decoders.set(schema, decode)
  }
  return decode as (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<A>, ParseResult.ParseError>
}

/**
 * The ports' own failures (a lost conditional write, a taken exactly-once key, a full follow-up
 * inbox, a run's spent follow-up total).
 */
type PortFailure = StaleWrite | DuplicateKey | FollowupInboxFull | FollowupTotalSpent

const isPortFailure = (e: unknown): e is PortFailure =>
  e instanceof StaleWrite || e instanceof DuplicateKey || e instanceof FollowupInboxFull || e instanceof FollowupTotalSpent

/**
 * Turns every failure of an operation except the ports' own into a `StorageError` naming the
 * operation. So does a `SqlError` defect: `@effect/sql` dies when a transaction's COMMIT or ROLLBACK
 * fails (SQLite on a full disk fails the commit), and that is a storage failure like any other, not
 * a bug. (`Effect.fn` names the span; `traced` does for plain effects.)
 */
export const operation = (name: string) => <A, E, R>(
  self: Effect.Effect<A, E, R>
): Effect.Effect<A, Extract<E, PortFailure> | StorageError, R> =>
  self.pipe(
    Effect.mapError((e): Extract<E, PortFailure> | StorageError =>
      isPortFailure(e) ? (e as Extract<E, PortFailure>) : new StorageError({ operation: name, cause: e })
    ),
    Effect.catchSomeDefect((defect) =>
      defect instanceof SqlError ? Option.some(Effect.fail(new StorageError({ operation: name, cause: defect }))) : Option.none()
    )
  )

/** `operation` for an effect that is not an `Effect.fn`: also a span of that name. */
export const traced = (name: string) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.withSpan(operation(name)(self), name)
