/**
 * The webhook ingress on HTTP (docs/webhooks.md): `POST /webhooks/w/{uid}` and, for `url_token`
 * webhooks, `POST /webhooks/w/{uid}/{token}`. The core's `Ingress` does the checks; this adapter
 * hands it the headers, the sender's address and a body reader that stops past the limit, and
 * answers 202 `{delivery_id}` or the problem of the refusal.
 *
 * Decisions:
 * - Only POST is routed: any other method is the 404 of an unknown endpoint (the ingress's
 *   statuses are 202, 400, 401, 404, 413 and 429).
 * - The sender's address is the socket's peer. When the peer is a trusted proxy
 *   (`AGENT_RUNS_TRUSTED_PROXIES`: addresses and IPv4/IPv6 CIDR ranges), `X-Forwarded-For` is read
 *   from the right, skipping trusted proxies: the first address that is not one is the sender
 *   (if every hop is trusted, the leftmost). A malformed entry ends the walk at the hop that added
 *   it. Without trusted proxies the header is ignored, so a sender cannot pick its own rate-limit
 *   key. IPv4-mapped IPv6 addresses (`::ffff:1.2.3.4`) count as IPv4.
 * - A too-large body (413), or one refused before it was read (404, 429), is read and dropped up to
 *   1 MiB more before answering, within the core's body timeout, so that a sender still writing it
 *   sees the answer (IngressBody.ts). Whenever the body was not read to its end (past that, or too
 *   slow) the answer carries `Connection: close`, so Node does not go on draining it at the
 *   sender's pace.
 * - A body that does not arrive within the core's body timeout is answered 408 (an
 *   `invalid_request` problem naming `body`) and the connection closed.
 */
import { HttpApiBuilder, HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Ingress } from "@agent-runs/core"
import { Context, Effect, Layer, Option } from "effect"
import { isIP } from "node:net"
import { type AddressSet, addressSet, normalizeAddress } from "./AddressSet.js"
import * as Problems from "@agent-runs/api/Problems"
import { type Consumption, readBody } from "./IngressBody.js"
import { problemResponse } from "./ServerMiddleware.js"

/** Where senders post. */
export const INGRESS_PREFIX = "/webhooks/w/"

/** The proxies whose `X-Forwarded-For` is believed. */
export class TrustedProxies extends Context.Tag("@agent-runs/http/TrustedProxies")<
  TrustedProxies,
  { readonly contains: (address: string) => boolean }
>() {
  /** Parses addresses and CIDR ranges (comma or space separated); throws naming a malformed entry. */
  static readonly layer = (spec: ReadonlyArray<string>) => Layer.succeed(TrustedProxies, trustedProxies(spec))
}

/**
 * A membership test over addresses and CIDR ranges (AddressSet.ts). An address is checked against
 * the ranges of its own family only: an IPv4-mapped IPv6 address counts as the IPv4 address it
 * maps, and an IPv6 range (even `::/0`) never covers an IPv4 address.
 */
export const trustedProxies = (spec: ReadonlyArray<string>): AddressSet => addressSet(spec, "AGENT_RUNS_TRUSTED_PROXIES")

/** The sender's address: the peer, or the forwarded address behind trusted proxies. */
export const clientAddress = (
  peer: string,
  forwardedFor: string | undefined,
  trusted: { readonly contains: (address: string) => boolean }
): string => {
  let client = normalizeAddress(peer)
  if (forwardedFor === undefined || !trusted.contains(client)) return client
  const hops = forwardedFor.split(",").map((hop) => normalizeAddress(hop))
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i]!
    if (isIP(hop) === 0) return client
    client = hop
    if (!trusted.contains(hop)) return hop
  }
  return client
}

const receive = (ingress: Ingress.Ingress, trusted: TrustedProxies["Type"]) => Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const { token, uid = "" } = yield* HttpRouter.params
  const client = clientAddress(
    Option.getOrElse(request.remoteAddress, () => "unknown"),
    request.headers["x-forwarded-for"],
    trusted
  )
  const consumed: Consumption = { started: false, complete: false }
  const response = yield* ingress.receive({
    uid,
    token,
    headers: request.headers,
    client,
    readBody: (limit, timeoutMs) => readBody(request, consumed, limit, timeoutMs)
  }).pipe(
    Effect.map((receipt) => HttpServerResponse.unsafeJson({ delivery_id: receipt.delivery_id }, { status: 202 })),
    Effect.catchAll((error) => Effect.succeed(error._tag === "BodyTimedOut" ? bodyTimedOut(error) : problemResponse(error)))
  )
  // Refused before its body was read (404, 429): the body is read and dropped (up to DRAIN_BYTES,
  // within the body timeout) so that the sender sees the answer.
  if (!consumed.started) yield* readBody(request, consumed, 0, ingress.limits.bodyTimeoutMs)
  // A body left unread (cut off, timed out, or too slow to drain) is not drained at the sender's
  // pace by Node afterwards: the connection closes once the answer is sent.
  return consumed.complete ? response : HttpServerResponse.setHeader(response, "connection", "close")
})

/** The 408 of a body that did not arrive in time: an `invalid_request` problem naming `body`. */
const bodyTimedOut = (error: Ingress.BodyTimedOut) =>
  HttpServerResponse.unsafeJson(
    {
      type: Problems.problemType("invalid_request"),
      title: "Request timeout",
      status: 408,
      error: error.message,
      error_code: "invalid_request",
      retryable: true,
      field: "body"
    },
    { status: 408, contentType: Problems.PROBLEM_CONTENT_TYPE }
  )

/** The ingress routes. */
export const IngressRoutesLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const handler = receive(yield* Ingress.Ingress, yield* TrustedProxies)
    yield* router.post(`${INGRESS_PREFIX}:uid`, handler)
    yield* router.post(`${INGRESS_PREFIX}:uid/:token`, handler)
  })
)
