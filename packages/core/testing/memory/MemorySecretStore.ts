/**
 * SecretStore in memory, with the semantics of `SecretStoreSql.ts`: one entry per (team, name),
 * its value sealed and bound to its (team, name) (`MemoryCrypto.ts`); replacing a secret keeps its
 * creation time. Values leave only as `Redacted`; listing reads names and times only.
 */
import type { Context, Redacted } from "effect"
import { DateTime, Effect } from "effect"
import type { TeamUid } from "../../src/domain/Ids.js"
import { compareCodePoints } from "../../src/domain/RunQuery.js"
import type { SecretMetadata, SecretName } from "../../src/domain/Secret.js"
import { SecretStore } from "../../src/ports/SecretStore.js"
import { aad, type Sealer } from "./MemoryCrypto.js"
import { entryOf, type MemoryState, type SealedSecret, storageError } from "./MemoryState.js"

/** The entry a secret's value is bound to. */
const entryAad = (team: TeamUid, name: SecretName) => aad("secret", team, name)

/** SecretStore over the shared state, sealing values with `sealer`. */
export const makeMemorySecretStore = (state: MemoryState, sealer: Sealer): Context.Tag.Service<SecretStore> => {
  const put = (team: TeamUid, name: SecretName, value: Redacted.Redacted<string>, now: number) =>
    Effect.flatMap(
      Effect.mapError(sealer.seal(value, entryAad(team, name)), (cause) => storageError("SecretStore.put", cause)),
      (sealed) =>
        Effect.sync(() => {
          const secrets = entryOf(state.secrets, team, () => new Map<SecretName, SealedSecret>())
          const before = secrets.get(name)
          secrets.set(name, { value: sealed, created_at: before?.created_at ?? now, updated_at: now })
        })
    )

  const get = (team: TeamUid, name: SecretName) =>
    Effect.suspend(() => {
      const held = state.secrets.get(team)?.get(name)
      return held === undefined
        ? Effect.succeedNone
        : Effect.asSome(
          Effect.mapError(sealer.open(held.value, entryAad(team, name)), (cause) => storageError("SecretStore.get", cause))
        )
    })

  const list = (team: TeamUid) =>
    Effect.sync((): ReadonlyArray<SecretMetadata> =>
      [...(state.secrets.get(team) ?? new Map<SecretName, SealedSecret>())]
        .sort(([a], [b]) => compareCodePoints(a, b))
        .map(([name, held]) => ({
          name,
          created_at: DateTime.unsafeMake(held.created_at),
          updated_at: DateTime.unsafeMake(held.updated_at)
        }))
    )

  const remove = (team: TeamUid, name: SecretName) => Effect.sync(() => state.secrets.get(team)?.delete(name) ?? false)

  return SecretStore.of({ put, get, list, remove })
}
