/**
 * What a request's span may tell (docs/observability.md). `@effect/platform` opens a server span
 * per request with its URL and its request and response headers as attributes; exported, those
 * would carry the credentials some requests and answers hold.
 *
 * - Headers: every header outside `SHOWN_HEADERS` is redacted at the source (`REDACTED_HEADERS`,
 *   the platform's `Headers.currentRedactedNames` for the server): signatures, tokens, cookies,
 *   whatever a webhook sender authenticates with, and answers' `location` (a sign-in's session, a
 *   download link's signature).
 * - URLs: `redactedSpans` rewrites `url.full`, `url.path` and `url.query` of the request's span: a
 *   webhook delivery's URL token and the values of query parameters that may be credentials
 *   (`SECRET_PARAMS`) become `REDACTED`.
 * - `untraced`: requests that get no span at all: the health checks and `/metrics` (polled all
 *   day), and requests whose trace headers a collector would refuse (an upper-case or malformed
 *   `traceparent`, a B3 trace id that is not 32 hex digits): their work starts traces of its own.
 */
import type { HttpApp, HttpServerRequest } from "@effect/platform"
import { Effect, Option } from "effect"

/** Headers shown as sent. */
export const SHOWN_HEADERS: ReadonlyArray<string> = [
  "accept",
  "accept-encoding",
  "content-length",
  "content-type",
  "host",
  "user-agent",
  "x-team-uid",
  "x-warp-team-uid",
  "traceparent",
  "x-forwarded-for",
  "x-forwarded-proto",
  "cache-control",
  "x-should-retry",
  "retry-after"
]

/** Every header name outside `SHOWN_HEADERS`, for `Headers.currentRedactedNames`. */
export const REDACTED_HEADERS: ReadonlyArray<RegExp> = [new RegExp(`^(?!(?:${SHOWN_HEADERS.join("|")})$)`, "i")]

/** Query parameters whose values may be credentials (OAuth codes and states, signatures, keys). */
const SECRET_PARAMS = /(^|[?&])((?:signature|sig|token|access_token|id_token|api_key|apikey|key|code|state|session|client_secret|password)=)[^&#]*/gi

/** A URL (absolute, a path, or a query string) without the credentials it may hold. */
export const redactUrl = (url: string): string =>
  url.replace(/(\/webhooks\/w\/[^/?#]+\/)[^/?#]+/i, "$1REDACTED").replace(SECRET_PARAMS, "$1$2REDACTED")

const TRACEPARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/
const B3_TRACE_ID = /^(?!0{32})[0-9a-f]{32}(-|$)/

/** Whether trace headers a request sent would make spans a collector refuses. */
const badTraceHeaders = (headers: Readonly<Record<string, string | undefined>>): boolean => {
  const traceparent = headers["traceparent"]
  if (traceparent !== undefined && !TRACEPARENT.test(traceparent.trim())) return true
  const b3 = headers["b3"] ?? headers["x-b3-traceid"]
  return b3 !== undefined && b3 !== "0" && !B3_TRACE_ID.test(b3.trim())
}

/** Whether a request gets no span (see above). */
export const untraced = (request: HttpServerRequest.HttpServerRequest): boolean =>
  /\/(healthz|readyz|metrics)\/?(\?|$)/i.test(request.url) || badTraceHeaders(request.headers)

/** Rewrites the URL attributes of the request's span, when it has one. */
export const redactedSpans = <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
  Effect.flatMap(Effect.option(Effect.currentSpan), (span) => {
    if (Option.isNone(span)) return app
    const current = span.value
    for (const key of ["url.full", "url.path", "url.query"]) {
      const value = current.attributes.get(key)
      if (typeof value === "string") current.attribute(key, redactUrl(value))
    }
    return app
  })
