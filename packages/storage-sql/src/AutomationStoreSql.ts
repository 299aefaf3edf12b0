/**
 * AutomationStore over SqlClient: one row per automation (agent configuration and trigger as the
 * JSON the core Schemas encode), and one `automation_webhooks` row per webhook its trigger
 * selects, so that finding the automations of a delivery's webhook is an index lookup.
 *
 * `forWebhook` answers from a bounded in-memory cache (ReadCache.ts) while its entry is fresh (an
 * empty answer too: the ingress asks only for live webhooks); an automation's creation, update or
 * removal empties it, here at once and on every replica (CachedReads.ts).
 */
import * as TrustedCodec from "@agent-runs/core/domain/TrustedCodec"
import { Automation } from "@agent-runs/core/domain/Automation"
import type { AutomationId, WebhookUid } from "@agent-runs/core/domain/Ids"
import { PrincipalUid, TeamUid } from "@agent-runs/core/domain/Ids"
import { AutomationStore } from "@agent-runs/core/ports/AutomationStore"
import type { StoredAutomation } from "@agent-runs/core/ports/AutomationStore"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option, Schema } from "effect"
import { bool, decodeRows, iso, json, JsonColumn, millis, operation } from "./internal/Catalog.js"
import { cachedRead, cacheSettings, invalidation } from "./CachedReads.js"
import * as ReadCache from "./ReadCache.js"
import * as Rows from "./Rows.js"
import { Role } from "@agent-runs/core/domain/Identity"

const AutomationRow = Schema.Struct({
  id: Schema.String,
  team_uid: TeamUid,
  creator_uid: PrincipalUid,
  name: Schema.String,
  enabled: Rows.Bool,
  prompt: Schema.String,
  agent_config: JsonColumn,
  trigger_spec: JsonColumn,
  created_at: Rows.Millis,
  updated_at: Rows.Millis,
  editor_uid: PrincipalUid,
  editor_role: Role
})

/** The stored automation of a row, its item decoded with the core Schema. */
const fromRow = (row: typeof AutomationRow.Type) =>
  Effect.map(
    TrustedCodec.decoder(Automation)({
      id: row.id,
      name: row.name,
      enabled: row.enabled,
      prompt: row.prompt,
      agent_config: row.agent_config,
      trigger: row.trigger_spec,
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at)
    }),
    (item): StoredAutomation => ({
      item,
      team_uid: row.team_uid,
      creator_uid: row.creator_uid,
      editor: { uid: row.editor_uid, role: row.editor_role }
    })
  )

const decodeAutomations = (rows: ReadonlyArray<unknown>) =>
  Effect.flatMap(decodeRows(AutomationRow)(rows), Effect.forEach(fromRow))

/** AutomationStore, needing `SqlClient` and `CacheChanges` (and `ReadCacheConfig` when not the default). */
export const layer = Layer.scoped(
  AutomationStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const settings = yield* cacheSettings
    const cache = ReadCache.make<ReadonlyArray<StoredAutomation>>(settings)
    const { changing } = yield* invalidation([cache])

    /** Every column but the id, from the core Schema's encoding of the item. */
    const columns = (a: StoredAutomation) =>
      Effect.map(Schema.encode(Automation)(a.item), (item) => ({
        team_uid: a.team_uid,
        creator_uid: a.creator_uid,
        name: item.name,
        enabled: bool(sql, item.enabled),
        prompt: item.prompt,
        agent_config: json(item.agent_config),
        trigger_spec: json(item.trigger),
        created_at: millis(a.item.created_at),
        updated_at: millis(a.item.updated_at),
        editor_uid: a.editor.uid,
        editor_role: a.editor.role
      }))

    /** Indexes the webhooks the trigger selects (each once). */
    const linkWebhooks = (a: StoredAutomation) => {
      const webhooks = [...new Set(a.item.trigger.filter.webhook_ids)]
      return webhooks.length === 0
        ? Effect.void
        : sql`INSERT INTO automation_webhooks ${
          sql.insert(webhooks.map((webhook_uid) => ({ webhook_uid, automation_id: a.item.id })))
        }`.pipe(Effect.asVoid)
    }

    const create = Effect.fn("AutomationStore.create")(
      function* (automation: StoredAutomation) {
        const row = yield* columns(automation)
        yield* sql`INSERT INTO automations ${sql.insert({ id: automation.item.id, ...row })}`
        yield* linkWebhooks(automation)
      },
      sql.withTransaction,
      changing,
      operation("AutomationStore.create")
    )

    const get = Effect.fn("AutomationStore.get")(
      function* (id: AutomationId) {
        const rows = yield* sql`SELECT * FROM automations WHERE id = ${id}`.pipe(Effect.flatMap(decodeAutomations))
        return Option.fromNullable(rows[0])
      },
      operation("AutomationStore.get")
    )

    const list = Effect.fn("AutomationStore.list")(
      function* (team: TeamUid) {
        return yield* sql`SELECT * FROM automations WHERE team_uid = ${team} ORDER BY name, id`.pipe(
          Effect.flatMap(decodeAutomations)
        )
      },
      operation("AutomationStore.list")
    )

    const update = Effect.fn("AutomationStore.update")(
      function* (automation: StoredAutomation) {
        const row = yield* columns(automation)
        const updated = yield* sql`UPDATE automations SET ${sql.update(row)} WHERE id = ${automation.item.id}
          RETURNING id`
        if (updated.length === 0) return
        yield* sql`DELETE FROM automation_webhooks WHERE automation_id = ${automation.item.id}`
        yield* linkWebhooks(automation)
      },
      sql.withTransaction,
      changing,
      operation("AutomationStore.update")
    )

    const remove = Effect.fn("AutomationStore.remove")(
      function* (id: AutomationId) {
        const rows = yield* sql`DELETE FROM automations WHERE id = ${id} RETURNING id`
        return rows.length > 0
      },
      changing,
      operation("AutomationStore.remove")
    )

    const readForWebhook = Effect.fn("AutomationStore.forWebhook")(
      function* (webhook: WebhookUid) {
        return yield* sql`SELECT a.* FROM automation_webhooks w JOIN automations a ON a.id = w.automation_id
          WHERE w.webhook_uid = ${webhook} AND a.enabled = ${bool(sql, true)}
          ORDER BY a.name, a.id`.pipe(Effect.flatMap(decodeAutomations))
      },
      operation("AutomationStore.forWebhook")
    )

    const forWebhook = (webhook: WebhookUid) =>
      Effect.map(cachedRead(cache, webhook, Effect.asSome(readForWebhook(webhook))), Option.getOrElse(() => []))

    return AutomationStore.of({ create, get, list, update, remove, forWebhook })
  })
)
