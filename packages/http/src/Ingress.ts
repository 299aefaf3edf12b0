/**
 * The webhook ingress on HTTP (CONTRACT §8): `POST /webhooks/w/{uid}` and, for `url_token`
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
 * - A refused body (413) is read and dropped up to 1 MiB more before answering, so that a sender
 *   still writing it sees the 413; past that the connection is closed.
 */
import { HttpApiBuilder, HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Ingress } from "@agent-runs/core"
import { Context, Effect, Layer, Option, Stream } from "effect"
import { isIP } from "node:net"
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

/** An address without an IPv4-mapped IPv6 prefix or zone, lower case. */
export const normalizeAddress = (address: string): string => {
  const bare = address.trim().toLowerCase().replace(/%.*$/, "")
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(bare)
  return mapped === null ? bare : mapped[1]!
}

/** The address as a big integer and its width in bits, or undefined when it is not an IP address. */
const toBits = (address: string): { readonly value: bigint; readonly bits: number } | undefined => {
  const a = normalizeAddress(address)
  const family = isIP(a)
  if (family === 4) {
    return { value: a.split(".").reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n), bits: 32 }
  }
  if (family !== 6) return undefined
  let text = a
  const lastColon = text.lastIndexOf(":")
  const v4Tail = text.slice(lastColon + 1)
  if (v4Tail.includes(".")) {
    const v4 = v4Tail.split(".").map(Number)
    text = `${text.slice(0, lastColon + 1)}${((v4[0]! << 8) | v4[1]!).toString(16)}:${((v4[2]! << 8) | v4[3]!).toString(16)}`
  }
  const [head = "", tail] = text.split("::")
  const before = head === "" ? [] : head.split(":")
  const after = tail === undefined || tail === "" ? [] : tail.split(":")
  const groups = tail === undefined ? before : [...before, ...Array<string>(8 - before.length - after.length).fill("0"), ...after]
  return { value: groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n), bits: 128 }
}

/** A membership test over addresses and CIDR ranges. */
export const trustedProxies = (spec: ReadonlyArray<string>): { readonly contains: (address: string) => boolean } => {
  const ranges = spec.map((entry) => {
    const [address = "", prefix] = entry.trim().split("/")
    const parsed = toBits(address)
    const length = prefix === undefined ? parsed?.bits : Number(prefix)
    if (parsed === undefined || length === undefined || !Number.isInteger(length) || length < 0 || length > parsed.bits) {
      throw new Error(`AGENT_RUNS_TRUSTED_PROXIES: ${JSON.stringify(entry)} is not an IP address or CIDR range`)
    }
    const shift = BigInt(parsed.bits - length)
    return { bits: parsed.bits, shift, network: parsed.value >> shift }
  })
  return {
    contains: (address) => {
      const parsed = toBits(address)
      return parsed !== undefined &&
        ranges.some((r) => r.bits === parsed.bits && parsed.value >> r.shift === r.network)
    }
  }
}

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

/**
 * Reads a request body, keeping at most `limit` bytes; past the limit it reads on and drops up to
 * DRAIN_BYTES more (the stream can be read once: a reader that stops early resets the connection).
 */
const readBody = (request: HttpServerRequest.HttpServerRequest, consumed: { read: boolean }) =>
(limit: number): Effect.Effect<Ingress.BodyRead> =>
  Effect.suspend(() => {
    consumed.read = true
    return request.stream.pipe(
      Stream.runFoldWhile(
        { chunks: [] as Array<Uint8Array>, size: 0 },
        (acc) => acc.size <= limit + DRAIN_BYTES,
        (acc, chunk) => {
          if (acc.size + chunk.length <= limit) acc.chunks.push(chunk)
          return { chunks: acc.chunks, size: acc.size + chunk.length }
        }
      ),
      Effect.map((acc): Ingress.BodyRead => {
        if (acc.size > limit) return { _tag: "TooLarge", sizeBytes: acc.size }
        const bytes = new Uint8Array(acc.size)
        let at = 0
        for (const chunk of acc.chunks) {
          bytes.set(chunk, at)
          at += chunk.length
        }
        return { _tag: "Complete", bytes }
      }),
      Effect.orDie
    )
  })

const receive = (ingress: Ingress.Ingress, trusted: TrustedProxies["Type"]) => Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const { token, uid = "" } = yield* HttpRouter.params
  const client = clientAddress(
    Option.getOrElse(request.remoteAddress, () => "unknown"),
    request.headers["x-forwarded-for"],
    trusted
  )
  const consumed = { read: false }
  return yield* ingress.receive({ uid, token, headers: request.headers, client, readBody: readBody(request, consumed) }).pipe(
    Effect.map((receipt) => HttpServerResponse.unsafeJson({ delivery_id: receipt.delivery_id }, { status: 202 })),
    Effect.catchAll((error) =>
      error._tag === "PayloadTooLarge" && !consumed.read
        ? Effect.as(drain(request), problemResponse(error))
        : Effect.succeed(problemResponse(error))
    )
  )
})

/** How much of a refused body is read and dropped so that the sender sees the 413 (beyond it: reset). */
export const DRAIN_BYTES = 1024 * 1024

/** Reads and drops a body that was refused unread, up to DRAIN_BYTES. */
const drain = (request: HttpServerRequest.HttpServerRequest) =>
  request.stream.pipe(
    Stream.runFoldWhile(0, (size) => size <= DRAIN_BYTES, (size, chunk) => size + chunk.length),
    Effect.ignore
  )

/** The ingress routes. */
export const IngressRoutesLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const handler = receive(yield* Ingress.Ingress, yield* TrustedProxies)
    yield* router.post(`${INGRESS_PREFIX}:uid`, handler)
    yield* router.post(`${INGRESS_PREFIX}:uid/:token`, handler)
  })
)
