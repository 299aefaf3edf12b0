/**
 * Wake-ups in memory: an in-process signal that a run may have become claimable, as the SQLite
 * adapter's (a sliding PubSub: a listener that falls behind loses old hints, never blocks the
 * writer; dispatchers also poll, so a lost hint only delays a claim).
 */
import type { Scope } from "effect"
import { Effect, PubSub, Stream } from "effect"

export interface MemoryWakeups {
  /** Signals that a run may be claimable. */
  readonly notify: Effect.Effect<void>
  /** Every signal sent after the stream is subscribed to. */
  readonly signals: Stream.Stream<void>
}

/** Wake-ups for the scope's lifetime. */
export const makeWakeups: Effect.Effect<MemoryWakeups, never, Scope.Scope> = Effect.map(
  Effect.acquireRelease(PubSub.sliding<void>(16), PubSub.shutdown),
  (hub) => ({
    notify: Effect.asVoid(PubSub.publish(hub, undefined)),
    signals: Stream.fromPubSub(hub)
  })
)
