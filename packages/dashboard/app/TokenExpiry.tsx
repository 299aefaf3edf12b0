/**
 * The banner over every page while the signed-in token expires within 7 days (`token.expires_at`
 * of `GET /agent/me`): "Your token expires on …". Decisions: 7 days, as the CLI warns; read from
 * the answer the header already has (no call of its own), so it shows from the first page.
 */
import type { Me } from "./api.js"
import { formatTime } from "./format.js"

/** How long before a token expires the banner shows. */
export const WARN_WITHIN_MS = 7 * 24 * 60 * 60 * 1000

/** When the caller's token expires, if that is within `WARN_WITHIN_MS` of `now`. */
export const expiresSoon = (me: Me, now: number): string | undefined => {
  const at = me.token?.expires_at ?? null
  return at !== null && Date.parse(at) - now <= WARN_WITHIN_MS ? at : undefined
}

export const ExpiryBanner = (props: { readonly me: Me }) => {
  const at = expiresSoon(props.me, Date.now())
  if (at === undefined) return null
  return (
    <p class="banner expiry" role="status">
      Your token expires on {formatTime(at)}. Ask for a new one, or sign in again, before then.
    </p>
  )
}
