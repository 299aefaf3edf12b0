/**
 * The executor waits on real processes and a real API server: its sleeps, timeouts and grace
 * periods use the wall clock even where the caller's fiber has a test clock (a TestClock would
 * never let them end).
 */
import { Clock, Effect } from "effect"

const wallClock = Clock.make()

export const inRealTime = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => Effect.withClock(effect, wallClock)
