/**
 * EnvironmentStore over SqlClient: one row per environment (configuration and last run summary as
 * the JSON the core Schemas encode), its guests in their own table in the order given, and the
 * principals who opened its share link. A viewer lists what `Access.canSee` shows in its team,
 * every environment naming it as a guest (in any team), and the environments of its team whose
 * link it opened while link sharing is on; newest `updated_at` first, ties by uid (descending).
 */
import * as TrustedCodec from "@agent-runs/core/domain/TrustedCodec"
import type { Viewer } from "@agent-runs/core/domain/Access"
import { Environment, LastTaskCreated } from "@agent-runs/core/domain/Environment"
import { Role } from "@agent-runs/core/domain/Identity"
import type { EnvironmentUid } from "@agent-runs/core/domain/Ids"
import { PrincipalUid, TeamUid } from "@agent-runs/core/domain/Ids"
import { EnvironmentStore } from "@agent-runs/core/ports/EnvironmentStore"
import type { EnvironmentRunNote, StoredEnvironment } from "@agent-runs/core/ports/EnvironmentStore"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option, Schema } from "effect"
import { bool, decodeRows, iso, json, JsonColumn, millis, operation, visibleTo } from "./internal/Catalog.js"
import * as Rows from "./Rows.js"

const EnvironmentRow = Schema.Struct({
  uid: Schema.String,
  team_uid: TeamUid,
  creator_uid: PrincipalUid,
  scope_type: Schema.String,
  scope_uid: Schema.String,
  config: JsonColumn,
  link_sharing: Rows.Bool,
  setup_failed: Rows.Bool,
  last_task_created: Schema.NullOr(JsonColumn),
  created_at: Rows.Millis,
  updated_at: Rows.Millis,
  editor_uid: PrincipalUid,
  editor_role: Role
})

const GuestRow = Schema.Struct({ environment_uid: Schema.String, principal_uid: Schema.String })

/** The stored environment of a row and its guests (in order), its item decoded with the core Schema. */
const fromRow = (row: typeof EnvironmentRow.Type, guests: ReadonlyArray<typeof GuestRow.Type>) =>
  Effect.map(
    TrustedCodec.decoder(Environment)({
      uid: row.uid,
      config: row.config,
      sharing: {
        guests: guests.filter((g) => g.environment_uid === row.uid).map((g) => g.principal_uid),
        link_sharing: row.link_sharing
      },
      setup_failed: row.setup_failed,
      last_task_created: row.last_task_created,
      scope: { type: row.scope_type, uid: row.scope_uid },
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at)
    }),
    (item): StoredEnvironment => ({
      item,
      team_uid: row.team_uid,
      creator_uid: row.creator_uid,
      editor: { uid: row.editor_uid, role: row.editor_role }
    })
  )

/** EnvironmentStore, needing `SqlClient`. */
export const layer = Layer.effect(
  EnvironmentStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** Every column but the uid, from the core Schema's encoding of the item. */
    const columns = (e: StoredEnvironment) =>
      Effect.map(Schema.encode(Environment)(e.item), (item) => ({
        team_uid: e.team_uid,
        creator_uid: e.creator_uid,
        scope_type: item.scope.type,
        scope_uid: item.scope.uid,
        config: json(item.config),
        link_sharing: bool(sql, e.item.sharing.link_sharing),
        setup_failed: bool(sql, item.setup_failed),
        last_task_created: item.last_task_created === null ? null : json(item.last_task_created),
        created_at: millis(e.item.created_at),
        updated_at: millis(e.item.updated_at),
        editor_uid: e.editor.uid,
        editor_role: e.editor.role
      }))

    const insertGuests = (e: StoredEnvironment) =>
      e.item.sharing.guests.length === 0
        ? Effect.void
        : sql`INSERT INTO environment_guests ${
          sql.insert(e.item.sharing.guests.map((principal_uid, ordinal) => ({
            environment_uid: e.item.uid,
            ordinal,
            principal_uid
          })))
        }`.pipe(Effect.asVoid)

    /** The environments of these rows, with their guests. */
    const withGuests = (rows: ReadonlyArray<typeof EnvironmentRow.Type>) =>
      Effect.gen(function* () {
        if (rows.length === 0) return []
        const guests = yield* sql`SELECT environment_uid, principal_uid FROM environment_guests
          WHERE ${sql.in("environment_uid", rows.map((r) => r.uid))} ORDER BY environment_uid, ordinal`.pipe(
          Effect.flatMap(decodeRows(GuestRow))
        )
        return yield* Effect.forEach(rows, (row) => fromRow(row, guests))
      })

    const create = Effect.fn("EnvironmentStore.create")(
      function* (environment: StoredEnvironment) {
        const row = yield* columns(environment)
        yield* sql`INSERT INTO environments ${sql.insert({ uid: environment.item.uid, ...row })}`
        yield* insertGuests(environment)
      },
      sql.withTransaction,
      operation("EnvironmentStore.create")
    )

    const get = Effect.fn("EnvironmentStore.get")(
      function* (uid: EnvironmentUid) {
        const rows = yield* sql`SELECT * FROM environments WHERE uid = ${uid}`.pipe(
          Effect.flatMap(decodeRows(EnvironmentRow)),
          Effect.flatMap(withGuests)
        )
        return Option.fromNullable(rows[0])
      },
      operation("EnvironmentStore.get")
    )

    const list = Effect.fn("EnvironmentStore.list")(
      function* (viewer: Viewer) {
        return yield* sql`SELECT * FROM environments WHERE uid IN (
            SELECT e.uid FROM environments e WHERE ${visibleTo(sql, viewer, "e")}
            UNION
            SELECT g.environment_uid FROM environment_guests g WHERE g.principal_uid = ${viewer.principal_uid}
            UNION
            SELECT l.environment_uid FROM environment_link_access l
              JOIN environments e ON e.uid = l.environment_uid
              WHERE l.principal_uid = ${viewer.principal_uid} AND e.team_uid = ${viewer.team_uid}
                AND e.link_sharing = ${bool(sql, true)}
          )
          ORDER BY updated_at DESC, uid DESC`.pipe(
          Effect.flatMap(decodeRows(EnvironmentRow)),
          Effect.flatMap(withGuests)
        )
      },
      operation("EnvironmentStore.list")
    )

    const update = Effect.fn("EnvironmentStore.update")(
      function* (environment: StoredEnvironment) {
        const row = yield* columns(environment)
        const updated = yield* sql`UPDATE environments SET ${sql.update(row)} WHERE uid = ${environment.item.uid}
          RETURNING uid`
        if (updated.length === 0) return
        yield* sql`DELETE FROM environment_guests WHERE environment_uid = ${environment.item.uid}`
        yield* insertGuests(environment)
      },
      sql.withTransaction,
      operation("EnvironmentStore.update")
    )

    const noteRun = Effect.fn("EnvironmentStore.noteRun")(
      function* (uid: EnvironmentUid, note: EnvironmentRunNote) {
        const set: Record<string, unknown> = {}
        if (note.last_task_created !== undefined) {
          set["last_task_created"] = note.last_task_created === null
            ? null
            : json(yield* Schema.encode(LastTaskCreated)(note.last_task_created))
        }
        if (note.setup_failed !== undefined) set["setup_failed"] = bool(sql, note.setup_failed)
        if (Object.keys(set).length === 0) return
        yield* sql`UPDATE environments SET ${sql.update(set)} WHERE uid = ${uid}`
      },
      operation("EnvironmentStore.noteRun")
    )

    const remove = Effect.fn("EnvironmentStore.remove")(
      function* (uid: EnvironmentUid) {
        const rows = yield* sql`DELETE FROM environments WHERE uid = ${uid} RETURNING uid`
        return rows.length > 0
      },
      operation("EnvironmentStore.remove")
    )

    const recordLinkAccess = Effect.fn("EnvironmentStore.recordLinkAccess")(
      function* (uid: EnvironmentUid, principal: PrincipalUid) {
        yield* sql`INSERT INTO environment_link_access (environment_uid, principal_uid)
          SELECT uid, CAST(${principal} AS TEXT) FROM environments WHERE uid = ${uid}
          ON CONFLICT DO NOTHING`
      },
      operation("EnvironmentStore.recordLinkAccess")
    )

    return EnvironmentStore.of({ create, get, list, update, noteRun, remove, recordLinkAccess })
  })
)
