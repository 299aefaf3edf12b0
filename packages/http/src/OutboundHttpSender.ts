/**
 * OutboundSender over `node:http` and `node:https` (docs/outbound-webhooks.md).
 *
 * Decisions:
 * - Refused: every address outside the public unicast space — the IANA special-purpose ranges
 *   below (loopback, private, carrier-grade NAT, link-local with the cloud metadata addresses,
 *   documentation, benchmarking, multicast, reserved; IPv6 unique-local, link-local, site-local,
 *   NAT64/6to4/Teredo, which embed IPv4 addresses) — unless a range the administrator allows
 *   (`allowedRanges`) contains it.
 * - Checked at every send, after DNS resolution: the host name is resolved inside the request's own
 *   `lookup`, every address it resolves to must pass, and the connection goes to the first of them,
 *   so a name cannot resolve to a public address when checked and a private one when connected
 *   (DNS rebinding). An IP literal host is checked before the request.
 * - No redirect is followed (`node:http` follows none): a 3xx is the receiver's answer.
 * - Bounded: the whole try (resolve, connect, send, response head) must finish within `timeoutMs`;
 *   at most `MAX_EXCERPT_BYTES` of the response body are read, then the connection is dropped.
 */
import { lookup as dnsLookup, type LookupAddress } from "node:dns"
import * as http from "node:http"
import * as https from "node:https"
import { isIP } from "node:net"
import { MAX_EXCERPT_BYTES } from "@agent-runs/core/domain/OutboundWebhook"
import { OutboundSender, OutboundSendFailed, type OutboundRequest } from "@agent-runs/core/ports/OutboundSender"
import { Effect, Layer } from "effect"
import { type AddressSet, addressSet } from "./AddressSet.js"

/** Addresses no outbound webhook reaches unless allowed (IANA IPv4 and IPv6 special-purpose registries). */
export const REFUSED_RANGES: ReadonlyArray<string> = [
  "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24",
  "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24",
  "224.0.0.0/4", "240.0.0.0/4",
  "::/128", "::1/128", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32", "2002::/16",
  "3fff::/20", "5f00::/16", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8"
]

/** The setting that allows ranges (named in errors). */
export const ALLOWED_RANGES_SETTING = "AGENT_RUNS_OUTBOUND_WEBHOOK_ALLOWED_RANGES"

export interface OutboundSenderSettings {
  /** Ranges outbound webhooks may reach although refused by default (for endpoints inside your network). */
  readonly allowedRanges: ReadonlyArray<string>
  /** The most a try may take, in milliseconds (10 s). */
  readonly timeoutMs: number
}

const refusedSet = addressSet(REFUSED_RANGES, "REFUSED_RANGES")

/**
 * Why an address may not be reached, or undefined when it may. The address itself is not named:
 * the message reaches the team (a 400, the delivery log), and the addresses internal names resolve
 * to are the operator's to know.
 */
const refusal = (address: string, allowed: AddressSet): string | undefined =>
  refusedSet.contains(address) && !allowed.contains(address)
    ? "the host is, or resolves to, an address that is not public (loopback, private, link-local, metadata or " +
      `reserved); an administrator can allow its range with ${ALLOWED_RANGES_SETTING}`
    : undefined

const failed = (reason: OutboundSendFailed["reason"], message: string) => new OutboundSendFailed({ reason, message })

/** The URL's host as a name to resolve, or an IP literal. */
const hostOf = (url: URL): string => url.hostname.replace(/^\[(.*)\]$/, "$1")

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | Array<LookupAddress>, family?: number) => void

/** A `lookup` that resolves every address of a name, refuses the name if any is refused, and answers the first. */
const checkedLookup = (allowed: AddressSet) =>
  (hostname: string, options: { readonly all?: boolean }, callback: LookupCallback): void => {
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) => {
      if (error !== null) return callback(error, "")
      if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" }), "")
      for (const a of addresses) {
        const why = refusal(a.address, allowed)
        if (why !== undefined) return callback(Object.assign(new Error(why), { code: "EREFUSED_ADDRESS" }), "")
      }
      const first = addresses[0]!
      return options.all === true ? callback(null, [first]) : callback(null, first.address, first.family)
    })
  }

/** What a failed request's error means. */
const failureOf = (error: NodeJS.ErrnoException): OutboundSendFailed =>
  error.code === "EREFUSED_ADDRESS"
    ? failed("refused", error.message)
    : error.code === "ENOTFOUND" || error.code === "EAI_AGAIN"
    ? failed("unresolved", "the host does not resolve")
    : error.name === "TimeoutError" || error.name === "AbortError"
    ? failed("timeout", "the endpoint did not answer in time")
    : failed("network", `cannot reach the endpoint: ${error.message}`)

/** The URL if it may be sent to as written (scheme, IP literal); else why not. */
const parseTarget = (raw: string, allowed: AddressSet): URL | OutboundSendFailed => {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return failed("refused", "the URL is not an absolute URL")
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return failed("refused", "the URL must be http or https")
  const host = hostOf(url)
  const why = isIP(host) === 0 ? undefined : refusal(host, allowed)
  return why === undefined ? url : failed("refused", why)
}

/**
 * A receiver's text as the delivery log keeps it: control characters but tab and line breaks (NUL
 * among them, which PostgreSQL's text refuses) replaced. (Decoding UTF-8 already replaced invalid bytes.)
 */
export const printable = (text: string): string =>
  // eslint-disable-next-line no-control-regex
  text.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, "\ufffd")

/** Reads at most `MAX_EXCERPT_BYTES` of a response, then stops. */
const excerptOf = (response: http.IncomingMessage): Promise<string> =>
  new Promise((resolve) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const done = () => {
      response.removeAllListeners("data")
      response.destroy()
      resolve(printable(Buffer.concat(chunks).subarray(0, MAX_EXCERPT_BYTES).toString("utf8")))
    }
    response.on("data", (chunk: Buffer) => {
      chunks.push(chunk)
      size += chunk.length
      if (size >= MAX_EXCERPT_BYTES) done()
    })
    response.on("end", done)
    response.on("error", done)
    response.on("aborted", done)
  })

/** Sends one request, bounded by `timeoutMs`. */
const post = (url: URL, request: OutboundRequest, allowed: AddressSet, timeoutMs: number) =>
  Effect.async<{ status: number; excerpt: string }, OutboundSendFailed>((resume, signal) => {
    const client = url.protocol === "https:" ? https : http
    const body = Buffer.from(request.body, "utf8")
    const req = client.request(url, {
      method: "POST",
      headers: { ...request.headers, "content-length": String(body.length) },
      lookup: checkedLookup(allowed) as never,
      signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]),
      agent: false
    }, (response) => {
      void excerptOf(response).then((excerpt) => resume(Effect.succeed({ status: response.statusCode ?? 0, excerpt })))
    })
    req.on("error", (error) => resume(Effect.fail(failureOf(error))))
    req.end(body)
  })

/** The sender under `settings`. */
export const make = (settings: OutboundSenderSettings): OutboundSender["Type"] => {
  const allowed = addressSet(settings.allowedRanges, ALLOWED_RANGES_SETTING)
  const target = (raw: string) => {
    const url = parseTarget(raw, allowed)
    return url instanceof OutboundSendFailed ? Effect.fail(url) : Effect.succeed(url)
  }
  return OutboundSender.of({
    send: (request) => Effect.flatMap(target(request.url), (url) => post(url, request, allowed, settings.timeoutMs)),
    check: (raw) =>
      Effect.flatMap(target(raw), (url) => {
        const host = hostOf(url)
        if (isIP(host) !== 0) return Effect.void
        return Effect.async<void, OutboundSendFailed>((resume) => {
          checkedLookup(allowed)(host, {}, (error) => resume(error === null ? Effect.void : Effect.fail(failureOf(error))))
        }).pipe(
          Effect.timeoutFail({ duration: settings.timeoutMs, onTimeout: () => failed("unresolved", "the host does not resolve in time") })
        )
      })
  })
}

/** OutboundSender; throws at build naming a malformed allowed range. */
export const layer = (settings: OutboundSenderSettings): Layer.Layer<OutboundSender> =>
  Layer.sync(OutboundSender, () => make(settings))
