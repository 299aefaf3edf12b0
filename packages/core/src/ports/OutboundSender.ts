/**
 * Port: sending an outbound webhook's request (engine/OutboundDispatch.ts) and checking where a URL
 * leads before an endpoint is saved (services/OutboundWebhooks.ts). The adapter decides which
 * addresses are refused (loopback, private, link-local and metadata ones unless an administrator
 * allows a range), checks every address a host name resolves to at each send, connects only to
 * an address it checked, follows no redirect, and bounds the time and the response it reads.
 */
import type { Effect } from "effect"
import { Context, Data } from "effect"

/** One request: a POST of `body` (JSON) with `headers`. */
export interface OutboundRequest {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/** What the receiver answered: its status and the first bytes of its body (`MAX_EXCERPT_BYTES`). */
export interface OutboundResponse {
  readonly status: number
  readonly excerpt: string
}

/**
 * The request went nowhere: `refused` (the URL or an address it resolves to is not allowed),
 * `unresolved` (no address), `timeout`, or `network` (connecting or reading failed).
 */
export class OutboundSendFailed extends Data.TaggedError("OutboundSendFailed")<{
  readonly reason: "refused" | "unresolved" | "timeout" | "network"
  readonly message: string
}> {}

export class OutboundSender extends Context.Tag("@agent-runs/core/OutboundSender")<OutboundSender, {
  readonly send: (request: OutboundRequest) => Effect.Effect<OutboundResponse, OutboundSendFailed>
  /** Fails `refused` or `unresolved` when a send to `url` would be refused now. */
  readonly check: (url: string) => Effect.Effect<void, OutboundSendFailed>
}>() {}
