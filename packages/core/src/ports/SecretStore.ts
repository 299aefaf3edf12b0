/** Port: team secrets, encrypted at rest by the adapter; values leave it only as `Redacted`. */
import type { Effect, Option, Redacted } from "effect"
import { Context } from "effect"
import type { TeamUid } from "../domain/Ids.js"
import type { SecretMetadata, SecretName } from "../domain/Secret.js"
import type { StorageError } from "./Storage.js"

export class SecretStore extends Context.Tag("@agent-runs/core/SecretStore")<SecretStore, {
  /** Creates or replaces a secret. */
  readonly put: (team: TeamUid, name: SecretName, value: Redacted.Redacted<string>, now: number) => Effect.Effect<void, StorageError>
  /** Reads a secret's value, for the code that needs it. */
  readonly get: (team: TeamUid, name: SecretName) => Effect.Effect<Option.Option<Redacted.Redacted<string>>, StorageError>
  /** A team's secrets without their values, by name. */
  readonly list: (team: TeamUid) => Effect.Effect<ReadonlyArray<SecretMetadata>, StorageError>
  /** Deletes a secret; false when there was none. */
  readonly remove: (team: TeamUid, name: SecretName) => Effect.Effect<boolean, StorageError>
}>() {}
