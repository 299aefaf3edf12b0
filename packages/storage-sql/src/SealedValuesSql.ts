/**
 * SealedValues over SqlClient: every sealed column, with the row identity its seal is bound to,
 * read in pages by primary key from where the last call stopped, and sealed again under the
 * current key when another key of the ring opens it. The update is guarded by the old bytes, so a
 * value written meanwhile (under the current key) is kept. A cycle reads each row once: the work
 * of a rotation grows with the number of sealed values, not with its square.
 */
import type { TeamUid } from "@agent-runs/core/domain/Ids"
import type { SecretName } from "@agent-runs/core/domain/Secret"
import { SealedValues } from "@agent-runs/core/ports/SealedValues"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option } from "effect"
import * as Crypto from "./Crypto.js"
import { rowAad as idempotencyAad } from "./IdempotencyStoreSql.js"
import { operation } from "./internal/Catalog.js"
import { secretAad } from "./OutboundEndpointsSql.js"
import { rowAad as secretRowAad } from "./SecretStoreSql.js"
import { StorageKey } from "./StorageKey.js"
import { rowAad as webhookAad } from "./WebhookStoreSql.js"

type Row = Record<string, unknown>

/** A sealed column: its table, the primary key, other columns its identity needs, and that identity. */
interface Column {
  readonly table: string
  readonly column: string
  readonly keys: ReadonlyArray<string>
  readonly extra: ReadonlyArray<string>
  readonly aad: (row: Row) => string
}

const COLUMNS: ReadonlyArray<Column> = [
  { table: "secrets", column: "value", keys: ["team_uid", "name"], extra: [], aad: (r) => secretRowAad(r.team_uid as TeamUid, r.name as SecretName) },
  { table: "webhooks", column: "secret", keys: ["uid"], extra: ["secret_version"], aad: (r) => webhookAad(String(r.uid), Number(r.secret_version)) },
  { table: "outbound_webhooks", column: "secret", keys: ["uid"], extra: [], aad: (r) => secretAad(String(r.uid)) },
  { table: "outbound_webhooks", column: "previous_secret", keys: ["uid"], extra: [], aad: (r) => secretAad(String(r.uid)) },
  { table: "idempotency_keys", column: "body", keys: ["scope", "idem_key"], extra: [], aad: (r) => idempotencyAad(String(r.scope), String(r.idem_key)) }
]

/** Rows read per statement. */
const PAGE = 500

const bytesOf = (value: unknown): Uint8Array => value instanceof Uint8Array ? value : new Uint8Array(value as ArrayBuffer)

/** Where a cycle is: the column, the last key read in it, and what the cycle did so far. */
interface Cursor {
  column: number
  after: ReadonlyArray<unknown> | undefined
  resealed: number
  unreadable: number
}

const start = (): Cursor => ({ column: 0, after: undefined, resealed: 0, unreadable: 0 })

/** SealedValues, needing `SqlClient` and `StorageKey`. */
export const layer = Layer.effect(
  SealedValues,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const ring = yield* StorageKey
    let cursor = start()

    const page = (c: Column, after: ReadonlyArray<unknown> | undefined) => {
      const keys = sql.literal(c.keys.map((k) => `"${k}"`).join(", "))
      const columns = sql.literal([...c.keys, ...c.extra, c.column].map((k) => `"${k}"`).join(", "))
      const from = after === undefined ? sql`` : sql`AND (${keys}) > (${sql.csv(after.map((v) => sql`${v as string}`))})`
      return sql<Row>`SELECT ${columns} FROM ${sql(c.table)} WHERE ${sql(c.column)} IS NOT NULL ${from} ORDER BY ${keys} LIMIT ${PAGE}`
    }

    /** Seals a row's value again when another key opened it; true when written. */
    const resealRow = (c: Column, row: Row) =>
      Effect.gen(function* () {
        const old = bytesOf(row[c.column])
        const opened = yield* Effect.option(Crypto.openSealed(ring, old, c.aad(row)))
        if (Option.isNone(opened)) {
          cursor.unreadable++
          return false
        }
        if (opened.value.current) return false
        const fresh = yield* Crypto.seal(ring.key, opened.value.value, c.aad(row))
        const where = sql.and(c.keys.map((k) => sql`${sql(k)} = ${row[k] as string}`))
        const written = yield* sql`UPDATE ${sql(c.table)} SET ${sql(c.column)} = ${fresh}
          WHERE ${where} AND ${sql(c.column)} = ${old} RETURNING 1 AS written`
        return written.length > 0
      })

    const reseal = Effect.fn("SealedValues.reseal")(
      function* (limit: number) {
        let resealed = 0
        while (ring.others.length > 0 && cursor.column < COLUMNS.length && resealed < limit) {
          const c = COLUMNS[cursor.column]!
          const rows = yield* page(c, cursor.after)
          for (const row of rows) {
            cursor.after = c.keys.map((k) => row[k])
            if (yield* resealRow(c, row)) resealed++
            if (resealed >= limit) break
          }
          if (rows.length < PAGE && resealed < limit) cursor = { ...cursor, column: cursor.column + 1, after: undefined }
        }
        cursor.resealed += resealed
        const ended = ring.others.length === 0 || cursor.column >= COLUMNS.length
        const pass = { resealed, cycleEnded: ended, cycleResealed: cursor.resealed, unreadable: cursor.unreadable }
        if (ended) cursor = start()
        return pass
      },
      operation("SealedValues.reseal")
    )

    return SealedValues.of({ reseal })
  })
)
