/**
 * AutomationStore in memory, with the semantics of `AutomationStoreSql.ts`: a team's automations
 * by name (then id), and the enabled ones whose trigger selects a webhook.
 */
import type { Context } from "effect"
import { Effect, Option } from "effect"
import type { AutomationId, TeamUid, WebhookUid } from "../../src/domain/Ids.js"
import { compareCodePoints } from "../../src/domain/RunQuery.js"
import { AutomationStore, type StoredAutomation } from "../../src/ports/AutomationStore.js"
import type { StorageError } from "../../src/ports/Storage.js"
import { type MemoryState, storageError } from "./MemoryState.js"

const copy = (a: StoredAutomation): StoredAutomation => ({
  item: a.item,
  team_uid: a.team_uid,
  creator_uid: a.creator_uid,
  editor: { uid: a.editor.uid, role: a.editor.role }
})

const byName = (a: StoredAutomation, b: StoredAutomation): number =>
  compareCodePoints(a.item.name, b.item.name) || compareCodePoints(a.item.id, b.item.id)

/** AutomationStore over the shared state. */
export const makeMemoryAutomationStore = (state: MemoryState): Context.Tag.Service<AutomationStore> => {
  const create = (automation: StoredAutomation) =>
    Effect.suspend((): Effect.Effect<void, StorageError> => {
      if (state.automations.has(automation.item.id)) {
        return Effect.fail(storageError("AutomationStore.create", `automation ${automation.item.id} exists already`))
      }
      state.automations.set(automation.item.id, copy(automation))
      return Effect.void
    })

  const get = (id: AutomationId) => Effect.sync(() => Option.fromNullable(state.automations.get(id)))

  const list = (team: TeamUid) =>
    Effect.sync(() => [...state.automations.values()].filter((a) => a.team_uid === team).sort(byName))

  const update = (automation: StoredAutomation) =>
    Effect.sync(() => {
      if (state.automations.has(automation.item.id)) state.automations.set(automation.item.id, copy(automation))
    })

  const remove = (id: AutomationId) => Effect.sync(() => state.automations.delete(id))

  const forWebhook = (webhook: WebhookUid) =>
    Effect.sync(() =>
      [...state.automations.values()]
        .filter((a) => a.item.enabled && a.item.trigger.filter.webhook_ids.includes(webhook))
        .sort(byName)
    )

  return AutomationStore.of({ create, get, list, update, remove, forWebhook })
}
