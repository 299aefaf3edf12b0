/**
 * Webhook signature verification (docs/webhooks.md): every `SignatureScheme`, an HMAC-SHA256
 * (internal/Sha256.ts) over the raw body bytes compared in constant time. `verify` yields the
 * provider's delivery id when the scheme's headers carry one; `sign` produces the headers a sender
 * would send (tests, the CLI).
 *
 * Decisions:
 * - Header names are looked up in lower case; values are trimmed. A blank header counts as absent.
 * - Standard Webhooks: the `webhook-*` headers are used when `webhook-signature` is present,
 *   otherwise the `svix-*` ones (never a mix). The secret may omit the `whsec_` prefix (as the
 *   reference libraries allow); its base64 must decode to a non-empty key, otherwise the request
 *   is rejected as `malformed_secret`. Signatures of other versions (`v1a,…`) are ignored.
 * - Windows are inclusive: a timestamp exactly 5 minutes away is accepted. Stripe and Slack are
 *   also refused more than 5 minutes in the future (symmetric, like Standard Webhooks), so a
 *   clock-skewed sender cannot pre-sign requests. Timestamps are decimal seconds (1–12 digits).
 * - Stripe: exactly one `t=` element; `v1=` elements are the candidates, other schemes (`v0=`)
 *   are ignored. PagerDuty: `v1=` elements are the candidates, others are ignored. A header with
 *   no candidate of the expected version is `malformed_header`; a candidate that is not valid hex
 *   or base64 simply matches nothing.
 * - Hex signatures are accepted in either case.
 * - Linear: the signature is checked first; then, only if the (now authenticated) body is a JSON
 *   object with a numeric `webhookTimestamp` (epoch ms), it must be within ±5 minutes. Linear
 *   always sends that field and it is covered by the signature, so a captured genuine delivery
 *   cannot be replayed outside the window; bodies without it (not Linear's) are accepted on the
 *   signature alone. The rejection names `webhookTimestamp` as its `header`.
 * - GitLab: the token is compared through the SHA-256 digests of both sides, so the comparison is
 *   constant time and does not reveal the secret's length.
 * - An empty secret (or one that yields an empty HMAC key) is `malformed_secret`: WebCrypto refuses
 *   empty HMAC keys and no provider issues them.
 * - `sign` for Standard Webhooks without an `id` generates one (`msg_` + 16 random bytes, base64url);
 *   for the other schemes the delivery-id header is sent only when an `id` is given.
 * - A rejection carries the scheme, a reason and the header concerned, never the secret, the
 *   expected signature or the received one.
 * - What each scheme signs (`Verified.signedContent`): Standard Webhooks `{id}.{timestamp}.{body}`
 *   (its delivery id is covered); Stripe `{t}.{body}`; Slack `v0:{timestamp}:{body}`; GitHub, Linear,
 *   Shopify and PagerDuty the body alone (their delivery id headers are not covered, so a captured
 *   delivery can be replayed under another id); GitLab nothing (the token is the whole credential).
 */
import { Data, Effect, Either, Encoding, Option } from "effect"
import { concatBytes } from "../internal/Bytes.js"
import { hmacSha256, sha256 } from "../internal/Sha256.js"
import type { SignatureScheme } from "./Webhook.js"

/** How far a signed timestamp may be from `now` (either way), in milliseconds. */
export const TIMESTAMP_TOLERANCE_MS = 5 * 60 * 1000

/**
 * A verified request; `deliveryId` is the provider's delivery id when its headers carry one, and
 * `signedContent` the exact bytes the signature covers (none for `gitlab_token`, whose shared token
 * covers nothing): the ingress keys replay detection on them, since the delivery id header is not
 * covered by the signature in most schemes.
 */
export interface Verified {
  readonly scheme: SignatureScheme
  readonly deliveryId: Option.Option<string>
  readonly signedContent: Option.Option<Uint8Array>
}

/** Why a request was refused. */
export type RejectionReason =
  | "missing_header"
  | "malformed_header"
  | "timestamp_outside_window"
  | "no_signature_matches"
  | "malformed_secret"

const reasonText: Record<RejectionReason, string> = {
  missing_header: "missing header",
  malformed_header: "malformed header",
  timestamp_outside_window: "timestamp outside the window",
  no_signature_matches: "no signature matches",
  malformed_secret: "the configured secret is malformed"
}

/** A request whose signature does not verify. Never carries the secret or any signature. */
export class SignatureRejected extends Data.TaggedError("SignatureRejected")<{
  readonly scheme: SignatureScheme
  readonly reason: RejectionReason
  /** The header (lower case) concerned, when there is one; Linear's body field `webhookTimestamp`. */
  readonly header?: string
}> {
  override get message(): string {
    return `${this.scheme}: ${reasonText[this.reason]}${this.header === undefined ? "" : ` (${this.header})`}`
  }
}

/** What `verify` needs: the secret, the headers (lower-case names), the raw body and the time. */
export interface VerifyInput {
  readonly secret: string
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly body: Uint8Array
  /** Epoch milliseconds. */
  readonly now: number
}

/** What `sign` needs; `id` is the delivery id to send (generated for Standard Webhooks). */
export interface SignInput {
  readonly secret: string
  readonly body: Uint8Array
  /** Epoch milliseconds. */
  readonly now: number
  readonly id?: string | undefined
}

// --- encodings -------------------------------------------------------------------------------

const encoder = new TextEncoder()

const fromHex = (hex: string): Option.Option<Uint8Array> => Either.getRight(Encoding.decodeHex(hex))

/**
 * Standard base64, padded or not (as `atob` reads it: `=` only where padding belongs, and then the
 * length a multiple of 4); anything else decodes to nothing.
 */
const fromBase64 = (text: string): Option.Option<Uint8Array> =>
  /^[A-Za-z0-9+/]*={0,2}$/.test(text)
    ? Either.getRight(Encoding.decodeBase64(text.includes("=") ? text : text.padEnd(Math.ceil(text.length / 4) * 4, "=")))
    : Option.none()

// --- crypto ----------------------------------------------------------------------------------

/** Constant-time equality of two byte arrays (different lengths never match). */
export const timingSafeEqual = (a: Uint8Array, b: Uint8Array): boolean => {
  if (a.length !== b.length) return false
  let diff = 0
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!
  return diff === 0
}

/** Whether any candidate equals `expected`; every candidate is compared (no early exit). */
const anyMatches = (expected: Uint8Array, candidates: ReadonlyArray<Uint8Array>): boolean => {
  let matched = false
  for (const candidate of candidates) matched = timingSafeEqual(expected, candidate) || matched
  return matched
}

// --- helpers ---------------------------------------------------------------------------------

const header = (headers: VerifyInput["headers"], name: string): Option.Option<string> => {
  const value = headers[name]?.trim()
  return value === undefined || value === "" ? Option.none() : Option.some(value)
}

const TIMESTAMP = /^[0-9]{1,12}$/

const rejector = (scheme: SignatureScheme) => (reason: RejectionReason, name?: string) =>
  new SignatureRejected(name === undefined ? { scheme, reason } : { scheme, reason, header: name })

/** The text secret as an HMAC key; an empty secret is refused. */
const textKey = (scheme: SignatureScheme, secret: string): Effect.Effect<Uint8Array, SignatureRejected> =>
  secret === "" ? Effect.fail(rejector(scheme)("malformed_secret")) : Effect.succeed(encoder.encode(secret))

/** A Standard Webhooks secret (`whsec_` optional) as its decoded key. */
const standardKey = (secret: string): Effect.Effect<Uint8Array, SignatureRejected> => {
  const key = fromBase64(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret)
  return Option.isSome(key) && key.value.length > 0
    ? Effect.succeed(key.value)
    : Effect.fail(rejector("standard_webhooks")("malformed_secret"))
}

/** Reads a timestamp header (decimal seconds) and checks it is within the window. */
const checkTimestamp = (
  scheme: SignatureScheme,
  raw: string,
  name: string,
  now: number
): Effect.Effect<void, SignatureRejected> => {
  if (!TIMESTAMP.test(raw)) return Effect.fail(rejector(scheme)("malformed_header", name))
  return Math.abs(now - Number(raw) * 1000) <= TIMESTAMP_TOLERANCE_MS
    ? Effect.void
    : Effect.fail(rejector(scheme)("timestamp_outside_window", name))
}

const required = (
  scheme: SignatureScheme,
  headers: VerifyInput["headers"],
  name: string
): Effect.Effect<string, SignatureRejected> =>
  Option.match(header(headers, name), {
    onNone: () => Effect.fail(rejector(scheme)("missing_header", name)),
    onSome: Effect.succeed
  })

/** Splits `k=v,k=v` into pairs (values may contain `=`). */
const keyValues = (value: string): Array<readonly [string, string]> =>
  value.split(",").map((part) => {
    const i = part.indexOf("=")
    return i < 0 ? ([part.trim(), ""] as const) : ([part.slice(0, i).trim(), part.slice(i + 1).trim()] as const)
  })

const decodeAll = (
  values: ReadonlyArray<string>,
  decode: (s: string) => Option.Option<Uint8Array>
): Array<Uint8Array> => values.flatMap((v) => Option.toArray(decode(v)))

/** Fails unless one candidate matches the expected MAC. */
const match = (
  scheme: SignatureScheme,
  name: string,
  expected: Uint8Array,
  candidates: ReadonlyArray<string>,
  decode: (s: string) => Option.Option<Uint8Array>
): Effect.Effect<void, SignatureRejected> => {
  if (candidates.length === 0) return Effect.fail(rejector(scheme)("malformed_header", name))
  return anyMatches(expected, decodeAll(candidates, decode))
    ? Effect.void
    : Effect.fail(rejector(scheme)("no_signature_matches", name))
}

const verified = (
  scheme: SignatureScheme,
  deliveryId: Option.Option<string>,
  signedContent: Uint8Array | undefined
): Verified => ({ scheme, deliveryId, signedContent: Option.fromNullable(signedContent) })

// --- schemes ---------------------------------------------------------------------------------

const verifyStandard = Effect.fnUntraced(function*(input: VerifyInput) {
  const scheme = "standard_webhooks" as const
  const prefix = Option.isSome(header(input.headers, "webhook-signature")) ? "webhook" : "svix"
  if (prefix === "svix" && Option.isNone(header(input.headers, "svix-signature"))) {
    return yield* rejector(scheme)("missing_header", "webhook-signature")
  }
  const signature = yield* required(scheme, input.headers, `${prefix}-signature`)
  const id = yield* required(scheme, input.headers, `${prefix}-id`)
  const timestamp = yield* required(scheme, input.headers, `${prefix}-timestamp`)
  yield* checkTimestamp(scheme, timestamp, `${prefix}-timestamp`, input.now)
  const key = yield* standardKey(input.secret)
  const signed = concatBytes([encoder.encode(`${id}.${timestamp}.`), input.body])
  const expected = yield* hmacSha256(key, signed)
  const candidates = signature
    .split(" ")
    .filter((s) => s.startsWith("v1,"))
    .map((s) => s.slice(3))
  yield* match(scheme, `${prefix}-signature`, expected, candidates, fromBase64)
  return verified(scheme, Option.some(id), signed)
})

const verifyStripe = Effect.fnUntraced(function*(input: VerifyInput) {
  const scheme = "stripe" as const
  const name = "stripe-signature"
  const value = yield* required(scheme, input.headers, name)
  const pairs = keyValues(value)
  const ts = pairs.filter(([k]) => k === "t").map(([, v]) => v)
  if (ts.length !== 1) return yield* rejector(scheme)("malformed_header", name)
  const t = ts[0]!
  yield* checkTimestamp(scheme, t, name, input.now)
  const key = yield* textKey(scheme, input.secret)
  const signed = concatBytes([encoder.encode(`${t}.`), input.body])
  const expected = yield* hmacSha256(key, signed)
  const candidates = pairs.filter(([k]) => k === "v1").map(([, v]) => v)
  yield* match(scheme, name, expected, candidates, fromHex)
  return verified(scheme, Option.none(), signed)
})

const verifyGithub = Effect.fnUntraced(function*(input: VerifyInput) {
  const scheme = "github" as const
  const name = "x-hub-signature-256"
  const value = yield* required(scheme, input.headers, name)
  if (!value.startsWith("sha256=")) return yield* rejector(scheme)("malformed_header", name)
  const key = yield* textKey(scheme, input.secret)
  const expected = yield* hmacSha256(key, input.body)
  yield* match(scheme, name, expected, [value.slice("sha256=".length)], fromHex)
  return verified(scheme, header(input.headers, "x-github-delivery"), input.body)
})

const verifySlack = Effect.fnUntraced(function*(input: VerifyInput) {
  const scheme = "slack" as const
  const name = "x-slack-signature"
  const value = yield* required(scheme, input.headers, name)
  const timestamp = yield* required(scheme, input.headers, "x-slack-request-timestamp")
  if (!value.startsWith("v0=")) return yield* rejector(scheme)("malformed_header", name)
  yield* checkTimestamp(scheme, timestamp, "x-slack-request-timestamp", input.now)
  const key = yield* textKey(scheme, input.secret)
  const signed = concatBytes([encoder.encode(`v0:${timestamp}:`), input.body])
  const expected = yield* hmacSha256(key, signed)
  yield* match(scheme, name, expected, [value.slice("v0=".length)], fromHex)
  return verified(scheme, Option.none(), signed)
})

/** Linear's `webhookTimestamp` (epoch ms) when the body is a JSON object carrying a number there. */
const linearTimestamp = (body: Uint8Array): Option.Option<number> => {
  try {
    const parsed: unknown = JSON.parse(new TextDecoder().decode(body))
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) {
      const ts = (parsed as Record<string, unknown>)["webhookTimestamp"]
      if (typeof ts === "number" && Number.isFinite(ts)) return Option.some(ts)
    }
  } catch {
    // not JSON: no timestamp to check (the ingress refuses non-JSON bodies afterwards)
  }
  return Option.none()
}

const verifyLinear = Effect.fnUntraced(function*(input: VerifyInput) {
  const scheme = "linear" as const
  const name = "linear-signature"
  const value = yield* required(scheme, input.headers, name)
  const key = yield* textKey(scheme, input.secret)
  const expected = yield* hmacSha256(key, input.body)
  yield* match(scheme, name, expected, [value], fromHex)
  const ts = linearTimestamp(input.body)
  if (Option.isSome(ts) && Math.abs(input.now - ts.value) > TIMESTAMP_TOLERANCE_MS) {
    return yield* rejector(scheme)("timestamp_outside_window", "webhookTimestamp")
  }
  return verified(scheme, header(input.headers, "linear-delivery"), input.body)
})

const verifyShopify = Effect.fnUntraced(function*(input: VerifyInput) {
  const scheme = "shopify" as const
  const name = "x-shopify-hmac-sha256"
  const value = yield* required(scheme, input.headers, name)
  const key = yield* textKey(scheme, input.secret)
  const expected = yield* hmacSha256(key, input.body)
  yield* match(scheme, name, expected, [value], fromBase64)
  return verified(scheme, header(input.headers, "x-shopify-webhook-id"), input.body)
})

const verifyGitlab = Effect.fnUntraced(function*(input: VerifyInput) {
  const scheme = "gitlab_token" as const
  const name = "x-gitlab-token"
  const value = yield* required(scheme, input.headers, name)
  const key = yield* textKey(scheme, input.secret)
  const [expected, received] = yield* Effect.all([sha256(key), sha256(encoder.encode(value))])
  if (!timingSafeEqual(expected, received)) return yield* rejector(scheme)("no_signature_matches", name)
  return verified(scheme, header(input.headers, "idempotency-key"), undefined)
})

const verifyPagerduty = Effect.fnUntraced(function*(input: VerifyInput) {
  const scheme = "pagerduty" as const
  const name = "x-pagerduty-signature"
  const value = yield* required(scheme, input.headers, name)
  const key = yield* textKey(scheme, input.secret)
  const expected = yield* hmacSha256(key, input.body)
  const candidates = keyValues(value).filter(([k]) => k === "v1").map(([, v]) => v)
  yield* match(scheme, name, expected, candidates, fromHex)
  return verified(scheme, Option.none(), input.body)
})

const verifiers: Record<SignatureScheme, (input: VerifyInput) => Effect.Effect<Verified, SignatureRejected>> = {
  standard_webhooks: verifyStandard,
  stripe: verifyStripe,
  github: verifyGithub,
  slack: verifySlack,
  linear: verifyLinear,
  shopify: verifyShopify,
  gitlab_token: verifyGitlab,
  pagerduty: verifyPagerduty
}

/** Verifies a delivery's signature under `scheme` over its raw body. */
export const verify = (scheme: SignatureScheme, input: VerifyInput): Effect.Effect<Verified, SignatureRejected> =>
  verifiers[scheme](input).pipe(Effect.withSpan("Signatures.verify", { attributes: { scheme } }))

// --- signing ---------------------------------------------------------------------------------

const seconds = (now: number): string => String(Math.floor(now / 1000))

const withId = (headers: Record<string, string>, name: string, id: string | undefined): Record<string, string> =>
  id === undefined ? headers : { ...headers, [name]: id }

const generatedId: Effect.Effect<string> = Effect.sync(
  () => `msg_${Encoding.encodeBase64Url(globalThis.crypto.getRandomValues(new Uint8Array(16)))}`
)

/** The headers (lower-case names) a sender would send with `body` under `scheme`. */
export const sign = Effect.fn("Signatures.sign")(function*(
  scheme: SignatureScheme,
  input: SignInput
): Effect.fn.Return<Record<string, string>, SignatureRejected> {
  const ts = seconds(input.now)
  switch (scheme) {
    case "standard_webhooks": {
      const key = yield* standardKey(input.secret)
      const id = input.id ?? (yield* generatedId)
      const mac = yield* hmacSha256(key, concatBytes([encoder.encode(`${id}.${ts}.`), input.body]))
      return { "webhook-id": id, "webhook-timestamp": ts, "webhook-signature": `v1,${Encoding.encodeBase64(mac)}` }
    }
    case "stripe": {
      const mac = yield* hmacSha256(yield* textKey(scheme, input.secret), concatBytes([encoder.encode(`${ts}.`), input.body]))
      return { "stripe-signature": `t=${ts},v1=${Encoding.encodeHex(mac)}` }
    }
    case "github": {
      const mac = yield* hmacSha256(yield* textKey(scheme, input.secret), input.body)
      return withId({ "x-hub-signature-256": `sha256=${Encoding.encodeHex(mac)}` }, "x-github-delivery", input.id)
    }
    case "slack": {
      const mac = yield* hmacSha256(
        yield* textKey(scheme, input.secret),
        concatBytes([encoder.encode(`v0:${ts}:`), input.body])
      )
      return { "x-slack-request-timestamp": ts, "x-slack-signature": `v0=${Encoding.encodeHex(mac)}` }
    }
    case "linear": {
      const mac = yield* hmacSha256(yield* textKey(scheme, input.secret), input.body)
      return withId({ "linear-signature": Encoding.encodeHex(mac) }, "linear-delivery", input.id)
    }
    case "shopify": {
      const mac = yield* hmacSha256(yield* textKey(scheme, input.secret), input.body)
      return withId({ "x-shopify-hmac-sha256": Encoding.encodeBase64(mac) }, "x-shopify-webhook-id", input.id)
    }
    case "gitlab_token": {
      yield* textKey(scheme, input.secret)
      return withId({ "x-gitlab-token": input.secret }, "idempotency-key", input.id)
    }
    case "pagerduty": {
      const mac = yield* hmacSha256(yield* textKey(scheme, input.secret), input.body)
      return { "x-pagerduty-signature": `v1=${Encoding.encodeHex(mac)}` }
    }
  }
})
