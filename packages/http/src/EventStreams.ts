/**
 * Bounds on the live event streams (`GET /agent/runs/{runId}/events`, issue 15 finding 10). A
 * stream holds a connection and polls storage for as long as its client keeps it open, so:
 * - At most `perPrincipal` streams are open at once for one principal, and `max` in all on this
 *   server; past either cap the request is a 429 `rate_limited` whose `error` names the cap (with
 *   `Retry-After`), and nothing is opened. A slot is given back when its stream ends, whatever ends it.
 * - Every `recheckMs` an open stream authenticates its request again, exactly as the
 *   authentication middleware did when it opened (the bearer token and TEAM header, read from
 *   storage), then checks that the caller still sees the run. When the token was revoked, the
 *   principal left the team, or the run is no longer visible, the stream sends a last comment
 *   (`: closed: …`) and ends; its client's reconnection then gets the 401/403/404. A storage
 *   failure during a re-check keeps the stream (the next re-check decides).
 *
 * Caps are per process: with several replicas each counts its own streams.
 */
import { Context, Effect, Layer } from "effect"
import { Errors } from "@agent-runs/core"

export interface EventStreamLimits {
  /** The most streams one principal may have open at once (16). */
  readonly perPrincipal: number
  /** The most streams open at once on this server (1,000). */
  readonly max: number
  /** How often an open stream checks its token and access again, in milliseconds (3,000). */
  readonly recheckMs: number
}

export const DEFAULT_EVENT_STREAM_LIMITS: EventStreamLimits = { perPrincipal: 16, max: 1000, recheckMs: 3000 }

/** The limits in force; the defaults unless the server provides its own. */
export class EventStreamLimitsTag extends Context.Reference<EventStreamLimitsTag>()(
  "@agent-runs/http/EventStreamLimits",
  { defaultValue: (): EventStreamLimits => DEFAULT_EVENT_STREAM_LIMITS }
) {
  static readonly layer = (overrides: Partial<EventStreamLimits> = {}) =>
    Layer.succeed(EventStreamLimitsTag, { ...DEFAULT_EVENT_STREAM_LIMITS, ...overrides })
}

/** How long a client refused at a cap should wait before trying again. */
export const STREAM_RETRY_SECONDS = 5

/** The open streams of one server, counted per principal and in all. */
export interface StreamSlots {
  /** Takes a slot for `principal` (429 naming the cap when none is free); `release` gives it back. */
  readonly acquire: (principal: string) => Effect.Effect<void, Errors.RateLimited>
  readonly release: (principal: string) => Effect.Effect<void>
  /** How many streams are open, in all and for `principal`. */
  readonly open: (principal?: string) => number
}

export const makeStreamSlots = (limits: EventStreamLimits): StreamSlots => {
  const perPrincipal = new Map<string, number>()
  let total = 0
  return {
    acquire: (principal) =>
      Effect.suspend(() => {
        const mine = perPrincipal.get(principal) ?? 0
        if (mine >= limits.perPrincipal) {
          return Effect.fail(
            new Errors.RateLimited({
              message: `event streams: you already have ${mine} open, the most one caller may have ` +
                `(${limits.perPrincipal} per principal); close one first`,
              retryAfterSeconds: STREAM_RETRY_SECONDS
            })
          )
        }
        if (total >= limits.max) {
          return Effect.fail(
            new Errors.RateLimited({
              message: `event streams: the server has ${total} open, its most (${limits.max} in all); try again later`,
              retryAfterSeconds: STREAM_RETRY_SECONDS
            })
          )
        }
        perPrincipal.set(principal, mine + 1)
        total++
        return Effect.void
      }),
    release: (principal) =>
      Effect.sync(() => {
        const mine = perPrincipal.get(principal) ?? 0
        if (mine <= 1) perPrincipal.delete(principal)
        else perPrincipal.set(principal, mine - 1)
        total = Math.max(0, total - 1)
      }),
    open: (principal) => (principal === undefined ? total : perPrincipal.get(principal) ?? 0)
  }
}
