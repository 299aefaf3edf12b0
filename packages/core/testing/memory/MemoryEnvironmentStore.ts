/**
 * EnvironmentStore in memory, with the semantics of `EnvironmentStoreSql.ts`: a viewer lists what
 * `Access.canSee` shows in its team, every environment naming it as a guest (in any team), and the
 * environments of its team whose link it opened while link sharing is on; newest `updated_at`
 * first, ties by uid (descending). Link openings are forgotten with their environment.
 */
import type { Context } from "effect"
import { DateTime, Effect, Option } from "effect"
import { canSee, type Viewer } from "../../src/domain/Access.js"
import { Environment } from "../../src/domain/Environment.js"
import type { EnvironmentUid, PrincipalUid } from "../../src/domain/Ids.js"
import { compareCodePoints } from "../../src/domain/RunQuery.js"
import { type EnvironmentRunNote, EnvironmentStore, type StoredEnvironment } from "../../src/ports/EnvironmentStore.js"
import type { StorageError } from "../../src/ports/Storage.js"
import { entryOf, type MemoryState, storageError } from "./MemoryState.js"

const copy = (e: StoredEnvironment): StoredEnvironment => ({
  item: e.item,
  team_uid: e.team_uid,
  creator_uid: e.creator_uid,
  editor: { uid: e.editor.uid, role: e.editor.role }
})

/** EnvironmentStore over the shared state. */
export const makeMemoryEnvironmentStore = (state: MemoryState): Context.Tag.Service<EnvironmentStore> => {
  const create = (environment: StoredEnvironment) =>
    Effect.suspend((): Effect.Effect<void, StorageError> => {
      if (state.environments.has(environment.item.uid)) {
        return Effect.fail(storageError("EnvironmentStore.create", `environment ${environment.item.uid} exists already`))
      }
      state.environments.set(environment.item.uid, copy(environment))
      return Effect.void
    })

  const get = (uid: EnvironmentUid) => Effect.sync(() => Option.fromNullable(state.environments.get(uid)))

  const list = (viewer: Viewer) =>
    Effect.sync(() =>
      [...state.environments.values()]
        .filter((e) =>
          canSee(viewer, { team_uid: e.team_uid, creator_uid: e.creator_uid, scope: e.item.scope }) ||
          e.item.sharing.guests.includes(viewer.principal_uid) ||
          (e.team_uid === viewer.team_uid &&
            e.item.sharing.link_sharing &&
            state.environmentLinks.get(e.item.uid)?.has(viewer.principal_uid) === true)
        )
        .sort((a, b) =>
          DateTime.toEpochMillis(b.item.updated_at) - DateTime.toEpochMillis(a.item.updated_at) ||
          compareCodePoints(b.item.uid, a.item.uid)
        )
    )

  const update = (environment: StoredEnvironment) =>
    Effect.sync(() => {
      if (state.environments.has(environment.item.uid)) state.environments.set(environment.item.uid, copy(environment))
    })

  const noteRun = (uid: EnvironmentUid, note: EnvironmentRunNote) =>
    Effect.sync(() => {
      const stored = state.environments.get(uid)
      if (stored === undefined) return
      state.environments.set(uid, {
        ...stored,
        item: new Environment({
          ...stored.item,
          ...(note.last_task_created === undefined ? {} : { last_task_created: note.last_task_created }),
          ...(note.setup_failed === undefined ? {} : { setup_failed: note.setup_failed })
        })
      })
    })

  const remove = (uid: EnvironmentUid) =>
    Effect.sync(() => {
      state.environmentLinks.delete(uid)
      return state.environments.delete(uid)
    })

  const recordLinkAccess = (uid: EnvironmentUid, principal: PrincipalUid) =>
    Effect.sync(() => {
      if (state.environments.has(uid)) entryOf(state.environmentLinks, uid, () => new Set<PrincipalUid>()).add(principal)
    })

  return EnvironmentStore.of({ create, get, list, update, noteRun, remove, recordLinkAccess })
}
