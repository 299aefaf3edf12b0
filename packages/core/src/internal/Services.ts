/** Helpers shared by the application services. */
import { Effect, Option, Stream } from "effect"
import { ResourceUnavailable } from "../domain/Errors.js"
import { Health } from "../engine/Health.js"
import type { StorageError } from "../ports/Storage.js"

const unavailable = (error: StorageError) =>
  Effect.logError("storage failed", error.operation, error.cause).pipe(
    // The service is not ready for a while after (`/readyz`), where a Health is provided.
    Effect.zipRight(Effect.serviceOption(Health).pipe(Effect.flatMap(Option.match({ onNone: () => Effect.void, onSome: (h) => h.storageFailed })))),
    Effect.zipRight(Effect.fail(new ResourceUnavailable({ message: "storage is unavailable; try again shortly" })))
  )

/** Maps storage failures to 503 `resource_unavailable` (retryable), and reports them to `Health`. */
export const storageUnavailable = <A, E, R>(self: Effect.Effect<A, E | StorageError, R>) =>
  Effect.catchIf(self, (e): e is StorageError => isStorageError(e), unavailable) as Effect.Effect<
    A,
    Exclude<E, StorageError> | ResourceUnavailable,
    R
  >

const isStorageError = (e: unknown): e is StorageError =>
  typeof e === "object" && e !== null && "_tag" in e && e._tag === "StorageError"


/** `storageUnavailable` for a stream: its storage failures end it with 503 `resource_unavailable`. */
export const storageUnavailableStream = <A, E, R>(self: Stream.Stream<A, E | StorageError, R>) =>
  Stream.catchAll(self, (e): Stream.Stream<never, E | ResourceUnavailable> => (isStorageError(e) ? Stream.fromEffect(unavailable(e)) : Stream.fail(e))) as Stream.Stream<
    A,
    Exclude<E, StorageError> | ResourceUnavailable,
    R
  >
