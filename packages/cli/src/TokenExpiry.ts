/**
 * The one warning line the CLI prints when the token it uses is about to expire or has expired:
 * `warning: the token of profile "default" expires on 2026-12-01T00:00:00Z; run agent-runs login again`.
 *
 * Decisions:
 * - Warned within 7 days of `expires_at` (and after it): long enough to get a new token before a
 *   weekend, short enough not to nag about tokens made to last a month.
 * - The warning is a pure function of the expiry and the time (the caller takes the time from
 *   `Clock`), so it is tested on any date.
 */
import { DateTime, Duration } from "effect"
import * as Format from "./Format.js"

/** How long before a token expires the CLI starts warning. */
export const WARN_WITHIN = Duration.days(7)

/** Whose token it is and what to do about it, as the warning says them. */
export interface TokenSource {
  /** `the token of profile "default"`, `this token`. */
  readonly whose: string
  /** `run agent-runs login again`. */
  readonly remedy: string
}

/** The warning line for a token expiring at `expiresAt`, seen at `now`; none when it is further than `WARN_WITHIN` away. */
export const warning = (source: TokenSource, expiresAt: DateTime.Utc, now: DateTime.Utc): string | undefined => {
  const left = DateTime.distance(now, expiresAt)
  if (left > Duration.toMillis(WARN_WITHIN)) return undefined
  const verb = left <= 0 ? "expired on" : "expires on"
  return `warning: ${source.whose} ${verb} ${Format.date(expiresAt)}; ${source.remedy}`
}
