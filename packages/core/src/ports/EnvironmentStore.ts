/** Port: environments (sandbox image, repositories, setup commands) and their sharing. */
import type { Effect, Option } from "effect"
import { Context } from "effect"
import type { Shaper, Viewer } from "../domain/Access.js"
import type { Environment, LastTaskCreated } from "../domain/Environment.js"
import type { EnvironmentUid, PrincipalUid, TeamUid } from "../domain/Ids.js"
import type { StorageError } from "./Storage.js"

/** What `noteRun` writes; an absent field is left as it is. */
export interface EnvironmentRunNote {
  readonly last_task_created?: LastTaskCreated | null
  readonly setup_failed?: boolean
}

/**
 * An environment as stored, with who last set its configuration (`editor`, with the role it acted
 * with then): its runs' tokens act with no more than that role (docs/security.md).
 */
export interface StoredEnvironment {
  readonly item: Environment
  readonly team_uid: TeamUid
  readonly creator_uid: PrincipalUid
  readonly editor: Shaper
}

export class EnvironmentStore extends Context.Tag("@agent-runs/core/EnvironmentStore")<EnvironmentStore, {
  /** Creates an environment. */
  readonly create: (environment: StoredEnvironment) => Effect.Effect<void, StorageError>
  /** Reads an environment. */
  readonly get: (uid: EnvironmentUid) => Effect.Effect<Option.Option<StoredEnvironment>, StorageError>
  /**
   * The environments the viewer owns, was granted, or reached by link, most recently updated first
   * (ties by uid, descending): those `Access.canSee` shows in its team, those naming it as a guest
   * (in any team), and those of its team whose link it opened while link sharing is on.
   */
  readonly list: (viewer: Viewer) => Effect.Effect<ReadonlyArray<StoredEnvironment>, StorageError>
  /** Replaces an environment. */
  readonly update: (environment: StoredEnvironment) => Effect.Effect<void, StorageError>
  /**
   * Notes what runs did with an environment: its newest run (`last_task_created`) and whether its
   * setup failed, writing only these fields (a concurrent change of the configuration or sharing is
   * kept). Nothing for an unknown uid.
   */
  readonly noteRun: (uid: EnvironmentUid, note: EnvironmentRunNote) => Effect.Effect<void, StorageError>
  /** Deletes an environment; false when there was none. */
  readonly remove: (uid: EnvironmentUid) => Effect.Effect<boolean, StorageError>
  /** Remembers that a principal opened an environment's share link (idempotent; nothing for an unknown uid). */
  readonly recordLinkAccess: (uid: EnvironmentUid, principal: PrincipalUid) => Effect.Effect<void, StorageError>
}>() {}
