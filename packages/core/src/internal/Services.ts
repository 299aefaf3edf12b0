/** Helpers shared by the application services. */
import { Effect } from "effect"
import { ResourceUnavailable } from "../Errors.js"
import type { StorageError } from "../ports/Storage.js"

const unavailable = (error: StorageError) =>
  Effect.logError("storage failed", error.operation, error.cause).pipe(
    Effect.zipRight(Effect.fail(new ResourceUnavailable({ message: "storage is unavailable; try again shortly" })))
  )

/** Maps storage failures to 503 `resource_unavailable` (retryable). */
export const storageUnavailable = <A, E, R>(self: Effect.Effect<A, E | StorageError, R>) =>
  Effect.catchIf(self, (e): e is StorageError => isStorageError(e), unavailable) as Effect.Effect<
    A,
    Exclude<E, StorageError> | ResourceUnavailable,
    R
  >

const isStorageError = (e: unknown): e is StorageError =>
  typeof e === "object" && e !== null && "_tag" in e && e._tag === "StorageError"

