/** Port: automations (webhook triggers with payload filters that start runs). */
import type { Shaper } from "../domain/Access.js"
import type { Effect, Option } from "effect"
import { Context } from "effect"
import type { Automation } from "../domain/Automation.js"
import type { AutomationId, PrincipalUid, TeamUid, WebhookUid } from "../domain/Ids.js"
import type { StorageError } from "./Storage.js"

/** An automation as stored. */
export interface StoredAutomation {
  readonly item: Automation
  readonly team_uid: TeamUid
  readonly creator_uid: PrincipalUid
  /**
   * Who last set its prompt, config or trigger, with the role it acted with then: its runs act as
   * the creator with no more than this editor's role (docs/security.md).
   */
  readonly editor: Shaper
}

export class AutomationStore extends Context.Tag("@agent-runs/core/AutomationStore")<AutomationStore, {
  /** Creates an automation. */
  readonly create: (automation: StoredAutomation) => Effect.Effect<void, StorageError>
  /** Reads an automation. */
  readonly get: (id: AutomationId) => Effect.Effect<Option.Option<StoredAutomation>, StorageError>
  /** A team's automations, by name. */
  readonly list: (team: TeamUid) => Effect.Effect<ReadonlyArray<StoredAutomation>, StorageError>
  /** Replaces an automation. */
  readonly update: (automation: StoredAutomation) => Effect.Effect<void, StorageError>
  /** Deletes an automation; false when there was none. */
  readonly remove: (id: AutomationId) => Effect.Effect<boolean, StorageError>
  /**
   * The enabled automations whose trigger selects this webhook. A store may answer from a cache of
   * what it read at most a few seconds ago, emptied on every replica at each change of an automation.
   */
  readonly forWebhook: (webhook: WebhookUid) => Effect.Effect<ReadonlyArray<StoredAutomation>, StorageError>
}>() {}
