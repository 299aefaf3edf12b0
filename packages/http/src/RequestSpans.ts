/**
 * What a request's span may tell (docs/observability.md). `@effect/platform` opens a server span
 * per request with its URL and request headers as attributes; exported, those would carry the
 * credentials some requests hold in them. `redactedSpans` rewrites them on the request's span: a
 * webhook delivery's URL token and a download link's signature become `REDACTED`, and every
 * request header outside `SHOWN_HEADERS` (signatures, tokens, cookies, whatever a webhook sender
 * authenticates with) is `REDACTED` too. `untraced` names the requests that get no span at all:
 * the health checks and `/metrics`, polled all day.
 */
import type { HttpApp } from "@effect/platform"
import type { HttpServerRequest } from "@effect/platform"
import { Effect, Option } from "effect"

/** Request headers shown as sent. */
export const SHOWN_HEADERS: ReadonlySet<string> = new Set([
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
  "x-forwarded-proto"
])

const HEADER_PREFIX = "http.request.header."
const SECRET_PARAMS = /([?&](?:signature|token|sig)=)[^&#]*/gi

/** A URL (absolute or a path) without the credentials it may hold. */
export const redactUrl = (url: string): string =>
  url.replace(/(\/webhooks\/w\/[^/?#]+\/)[^/?#]+/, "$1REDACTED").replace(SECRET_PARAMS, "$1REDACTED")

/** Whether a request gets no span: the health checks and the metrics (any base path before them). */
export const untraced = (request: HttpServerRequest.HttpServerRequest): boolean =>
  /\/(healthz|readyz|metrics)(\?|$)/.test(request.url)

/** Rewrites the URL and header attributes of the request's span, when it has one. */
export const redactedSpans = <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(Effect.option(Effect.currentSpan), (span) => {
    if (Option.isNone(span)) return app
    const current = span.value
    for (const [key, value] of current.attributes) {
      if (key.startsWith(HEADER_PREFIX)) {
        if (!SHOWN_HEADERS.has(key.slice(HEADER_PREFIX.length))) current.attribute(key, "REDACTED")
      } else if ((key === "url.full" || key === "url.path" || key === "url.query") && typeof value === "string") {
        current.attribute(key, redactUrl(value))
      }
    }
    return app
  })
