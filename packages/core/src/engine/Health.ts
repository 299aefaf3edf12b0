/**
 * The health of the service as its own work sees it, which `/readyz` reports, and the supervisor
 * of its background loops.
 *
 * - A loop run by `supervise` repeats its iteration forever. An iteration that fails, or dies of a
 *   defect, does not end the loop: the loop is reported failing (logged once, with the cause),
 *   waits twice as long as before (from its interval up to 10 s) and tries again; the first
 *   iteration that succeeds reports it recovered (logged once) and brings back its interval.
 * - Storage is faulty for `STORAGE_FAULT_MS` after anyone reported a storage failure (a loop, an
 *   execution writing its run, a request answered 503). A lease the holder could not renew during
 *   a fault is not a dead holder: the sweep leaves leases alone until a whole lease has passed
 *   since the last fault (LeaseSweep.ts).
 * - The service is ready while no loop is failing and storage had no fault lately; `problems`
 *   names what is wrong otherwise.
 */
import { Cause, Clock, Context, Duration, Effect, Layer, Option } from "effect"

/** How long a storage failure keeps the service not ready. */
export const STORAGE_FAULT_MS = 10_000
/** The longest wait between two tries of a failing loop. */
export const MAX_BACKOFF_MS = 10_000

interface Failing {
  readonly since: number
  readonly message: string
}

export interface HealthService {
  /** Records that an iteration of `loop` failed; true when the loop was healthy until now. */
  readonly loopFailed: (loop: string, cause: Cause.Cause<unknown>) => Effect.Effect<boolean>
  /** Records that an iteration of `loop` succeeded; true when the loop was failing until now. */
  readonly loopSucceeded: (loop: string) => Effect.Effect<boolean>
  /** Records a storage failure now. */
  readonly storageFailed: Effect.Effect<void>
  /** When storage last failed, if it did. */
  readonly lastStorageFault: Effect.Effect<Option.Option<number>>
  /** What keeps the service from being ready now (failing loops, a recent storage fault); empty when ready. */
  readonly problems: Effect.Effect<ReadonlyArray<string>>
}

export class Health extends Context.Tag("@agent-runs/core/Health")<Health, HealthService>() {}

/** Whether a cause holds a storage failure (a `StorageError`, however deep). */
export const isStorageFault = (cause: Cause.Cause<unknown>): boolean =>
  Cause.failures(cause).pipe((failures) =>
    [...failures].some((e) => typeof e === "object" && e !== null && "_tag" in e && e._tag === "StorageError")
  )

/** A short description of a cause, for `/readyz`. */
const describe = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.squash(cause)
  const text = failure instanceof Error ? failure.message : typeof failure === "object" && failure !== null && "_tag" in failure ? String(failure._tag) : String(failure)
  return text.length > 200 ? `${text.slice(0, 200)}…` : text
}

export const make = (): HealthService => {
  const failing = new Map<string, Failing>()
  let storageFaultAt: number | undefined
  return {
    loopFailed: (loop, cause) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        if (isStorageFault(cause)) storageFaultAt = now
        const before = failing.get(loop)
        failing.set(loop, { since: before?.since ?? now, message: describe(cause) })
        return before === undefined
      }),
    loopSucceeded: (loop) => Effect.sync(() => failing.delete(loop)),
    storageFailed: Effect.map(Clock.currentTimeMillis, (now) => {
      storageFaultAt = now
    }),
    lastStorageFault: Effect.sync(() => Option.fromNullable(storageFaultAt)),
    problems: Effect.map(Clock.currentTimeMillis, (now) => [
      ...[...failing].map(([loop, f]) => `${loop} is failing since ${new Date(f.since).toISOString()}: ${f.message}`),
      ...(storageFaultAt !== undefined && now - storageFaultAt < STORAGE_FAULT_MS
        ? [`storage failed ${Math.round((now - storageFaultAt) / 1000)} s ago`]
        : [])
    ])
  }
}

/**
 * The storage failures of an operation repeated while they last (a lease renewal, a watch):
 * each reported to `Health`, logged once per outage, and the recovery logged too.
 */
export const outage = (health: HealthService, what: string) => {
  let failing = false
  return {
    failed: (cause: unknown) =>
      Effect.zipRight(
        health.storageFailed,
        Effect.suspend(() => {
          if (failing) return Effect.void
          failing = true
          return Effect.logWarning(`${what} failed; retried meanwhile`, cause)
        })
      ),
    succeeded: Effect.suspend(() => {
      const was = failing
      failing = false
      return was ? Effect.logInfo(`${what} works again`) : Effect.void
    })
  }
}

/** A fresh `Health` for one service. */
export const layer = Layer.sync(Health, make)

/**
 * Runs `iteration` forever, `everyMs` apart (or as long as the iteration answers, in millis),
 * under the rules above: never dies of a failure or defect of one iteration.
 */
export const supervise = <R>(
  loop: string,
  iteration: Effect.Effect<number | void, unknown, R>,
  everyMs: number
): Effect.Effect<never, never, R | Health> =>
  Effect.gen(function*() {
    const health = yield* Health
    let backoff = everyMs
    for (;;) {
      const exit = yield* Effect.exit(Effect.suspend(() => iteration))
      let wait: number
      if (exit._tag === "Success") {
        if (yield* health.loopSucceeded(loop)) yield* Effect.logInfo(`${loop}: recovered`)
        backoff = everyMs
        wait = typeof exit.value === "number" ? exit.value : everyMs
      } else {
        if (yield* health.loopFailed(loop, exit.cause)) {
          yield* Effect.logError(`${loop}: failed; retrying with backoff until it succeeds`, exit.cause)
        }
        backoff = Math.min(MAX_BACKOFF_MS, Math.max(backoff * 2, 100))
        wait = backoff
      }
      yield* Effect.sleep(Duration.millis(wait))
    }
  })

/** How long an execution retries a write of its run while storage fails before it gives up. */
export const STORAGE_PATIENCE_MS = 10 * 60_000
