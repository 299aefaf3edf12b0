/**
 * SecretStore over SqlClient: one row per (team, name), the value sealed with AES-256-GCM under
 * the server key and bound to its (team, name) (Crypto.ts). Values leave only as `Redacted`, to
 * the caller of `get`; listing reads names and times only.
 */
import * as TrustedCodec from "@agent-runs/core/domain/TrustedCodec"
import type { TeamUid } from "@agent-runs/core/domain/Ids"
import { SecretStore } from "@agent-runs/core/ports/SecretStore"
import type { SecretName } from "@agent-runs/core/domain/Secret"
import { SecretMetadata } from "@agent-runs/core/domain/Secret"
import { SqlClient } from "@effect/sql"
import type { Redacted } from "effect"
import { Effect, Layer, Option, Schema } from "effect"
import * as Crypto from "./Crypto.js"
import { Bytes, decodeRows, iso, operation } from "./internal/Catalog.js"
import * as Rows from "./Rows.js"
import { StorageKey } from "./StorageKey.js"

/** The row a secret's value is bound to. */
export const rowAad = (team: TeamUid, name: SecretName) => Crypto.aad("secret", team, name)

const MetadataRow = Schema.Struct({ name: Schema.String, created_at: Rows.Millis, updated_at: Rows.Millis })
const ValueRow = Schema.Struct({ value: Bytes })

const toMetadata = (row: typeof MetadataRow.Type) =>
  TrustedCodec.decoder(SecretMetadata)({ name: row.name, created_at: iso(row.created_at), updated_at: iso(row.updated_at) })

/** SecretStore, needing `SqlClient` and `StorageKey`. */
export const layer = Layer.effect(
  SecretStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const ring = yield* StorageKey
    const key = ring.key

    const put = Effect.fn("SecretStore.put")(
      function* (team: TeamUid, name: SecretName, value: Redacted.Redacted<string>, now: number) {
        const sealed = yield* Crypto.seal(key, value, rowAad(team, name))
        yield* sql`INSERT INTO secrets ${
          sql.insert({ team_uid: team, name, value: sealed, created_at: now, updated_at: now })
        } ON CONFLICT (team_uid, name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`
      },
      operation("SecretStore.put")
    )

    const get = Effect.fn("SecretStore.get")(
      function* (team: TeamUid, name: SecretName) {
        const rows = yield* sql`SELECT value FROM secrets WHERE team_uid = ${team} AND name = ${name}`.pipe(
          Effect.flatMap(decodeRows(ValueRow))
        )
        const row = rows[0]
        if (row === undefined) return Option.none()
        return Option.some(yield* Crypto.openWith(ring, row.value, rowAad(team, name)))
      },
      operation("SecretStore.get")
    )

    const list = Effect.fn("SecretStore.list")(
      function* (team: TeamUid) {
        const rows = yield* sql`SELECT name, created_at, updated_at FROM secrets WHERE team_uid = ${team} ORDER BY name`
          .pipe(Effect.flatMap(decodeRows(MetadataRow)))
        return yield* Effect.forEach(rows, toMetadata)
      },
      operation("SecretStore.list")
    )

    const remove = Effect.fn("SecretStore.remove")(
      function* (team: TeamUid, name: SecretName) {
        const rows = yield* sql`DELETE FROM secrets WHERE team_uid = ${team} AND name = ${name} RETURNING name`
        return rows.length > 0
      },
      operation("SecretStore.remove")
    )

    return SecretStore.of({ put, get, list, remove })
  })
)
