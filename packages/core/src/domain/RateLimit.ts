/**
 * Sliding-window limits: at most `max` events per key in any window of `windowMs`. The webhook
 * ingress (docs/webhooks.md) allows 60 deliveries a minute per webhook and client address (429 with
 * `Retry-After`) and 10 authentication failures a minute (the budget: 429 once spent); `Runs`
 * bounds the runs a team creates per minute (Quotas.ts). The clock is the caller's (`now` in
 * epoch millis), so tests need no real time.
 *
 * Decisions:
 * - The window slides: an event counts for exactly `windowMs` after it happened. Each key keeps at
 *   most `max` times, so memory is bounded by the number of active keys; `prune` drops the keys
 *   whose events have all left the window.
 * - `Retry-After` is the time until the oldest counted event leaves the window, rounded up to whole
 *   seconds by the transport.
 * - Limits are per process: replicas each count what they receive (documented with ingress).
 */

export interface Limit {
  readonly max: number
  readonly windowMs: number
}

/** The answer for one event: allowed, or how long until one would be. */
export type Decision =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly retryAfterMs: number }

export interface Limiter {
  /** Whether `count` events now (1 by default) would be allowed, without counting them. */
  readonly check: (key: string, now: number, count?: number) => Decision
  /** Counts an event now, whatever `check` says (e.g. an authentication failure). */
  readonly record: (key: string, now: number) => void
  /** Counts `count` events now (1 by default) if they are allowed, all or none: `check` then `record`. */
  readonly take: (key: string, now: number, count?: number) => Decision
  /** Forgets the newest `count` events of `key` (1 by default): a refund for work that did not happen. */
  readonly refund: (key: string, count?: number) => void
  /** Forgets the keys with nothing left in the window; returns how many remain. */
  readonly prune: (now: number) => number
}

export const DELIVERIES_PER_MINUTE: Limit = { max: 60, windowMs: 60_000 }
export const AUTH_FAILURES_PER_MINUTE: Limit = { max: 10, windowMs: 60_000 }

export const makeLimiter = (limit: Limit): Limiter => {
  const events = new Map<string, Array<number>>()

  /** Index of the first of `times` still in the window at `now`. */
  const firstLive = (times: ReadonlyArray<number>, now: number): number => {
    let at = 0
    while (at < times.length && times[at]! <= now - limit.windowMs) at++
    return at
  }

  /** The key's events still in the window at `now`; older ones are dropped. */
  const live = (key: string, now: number): Array<number> => {
    const times = events.get(key)
    if (times === undefined) return []
    times.splice(0, firstLive(times, now))
    if (times.length === 0) events.delete(key)
    return times
  }

  // Reads only: a look at another time (a caller's "when could it go") changes nothing.
  const check = (key: string, now: number, count = 1): Decision => {
    const times = events.get(key) ?? []
    const first = firstLive(times, now)
    const over = times.length - first + count - limit.max
    if (over <= 0) return { allowed: true }
    // More than the limit at once is never allowed: the whole window is the honest answer.
    if (count > limit.max) return { allowed: false, retryAfterMs: limit.windowMs }
    // Allowed once the `over` oldest counted events have left the window.
    return { allowed: false, retryAfterMs: Math.max(1, times[first + over - 1]! + limit.windowMs - now) }
  }

  const record = (key: string, now: number): void => {
    const times = live(key, now)
    times.push(now)
    if (times.length > limit.max) times.splice(0, times.length - limit.max)
    events.set(key, times)
  }

  const take = (key: string, now: number, count = 1): Decision => {
    const decision = check(key, now, count)
    if (decision.allowed) for (let i = 0; i < count; i++) record(key, now)
    return decision
  }

  const refund = (key: string, count = 1): void => {
    const times = events.get(key)
    if (times === undefined) return
    times.splice(Math.max(0, times.length - count), count)
    if (times.length === 0) events.delete(key)
  }

  const prune = (now: number): number => {
    for (const key of [...events.keys()]) live(key, now)
    return events.size
  }

  return { check, record, take, refund, prune }
}

/** At most `maxCount` events, weighing at most `maxWeight` together, per key in any window of `windowMs`. */
export interface WeightedLimit {
  readonly maxCount: number
  readonly maxWeight: number
  readonly windowMs: number
}

export interface WeightedLimiter {
  /** Counts an event of `weight` now if both bounds allow it; otherwise how long until they would. */
  readonly take: (key: string, now: number, weight: number) => Decision
  /** Forgets the newest event of `key`: a refund for work that did not happen. */
  readonly refund: (key: string) => void
  /** Forgets the keys with nothing left in the window; returns how many remain. */
  readonly prune: (now: number) => number
}

/**
 * A sliding window bounding both how many events a key has and what they weigh together (bytes,
 * say), with the same decisions as `makeLimiter`: an event counts for exactly `windowMs`; the
 * answer to a refusal is the time until enough of the oldest events have left the window; an
 * event heavier than `maxWeight` alone is never allowed (the whole window is the answer).
 */
export const makeWeightedLimiter = (limit: WeightedLimit): WeightedLimiter => {
  const events = new Map<string, Array<{ readonly at: number; readonly weight: number }>>()

  const live = (key: string, now: number) => {
    const list = events.get(key) ?? []
    let first = 0
    while (first < list.length && list[first]!.at <= now - limit.windowMs) first++
    list.splice(0, first)
    if (list.length === 0) events.delete(key)
    return list
  }

  const take = (key: string, now: number, weight: number): Decision => {
    if (weight > limit.maxWeight || limit.maxCount < 1) return { allowed: false, retryAfterMs: limit.windowMs }
    const list = live(key, now)
    let count = list.length + 1
    let total = list.reduce((sum, e) => sum + e.weight, weight)
    if (count <= limit.maxCount && total <= limit.maxWeight) {
      list.push({ at: now, weight })
      events.set(key, list)
      return { allowed: true }
    }
    // The oldest events that must leave the window first.
    for (const e of list) {
      count -= 1
      total -= e.weight
      if (count <= limit.maxCount && total <= limit.maxWeight) {
        return { allowed: false, retryAfterMs: Math.max(1, e.at + limit.windowMs - now) }
      }
    }
    return { allowed: false, retryAfterMs: limit.windowMs }
  }

  const refund = (key: string): void => {
    const list = events.get(key)
    list?.pop()
    if (list?.length === 0) events.delete(key)
  }

  const prune = (now: number): number => {
    for (const key of [...events.keys()]) live(key, now)
    return events.size
  }

  return { take, refund, prune }
}
