/**
 * The identity of a webhook delivery (spec, "Webhook ingress"), in order of preference:
 * 1. the header named by the webhook's delivery ID header setting;
 * 2. the provider's own delivery id, for signed webhooks (what `Signatures.verify` found);
 * 3. `X-Service-Delivery-Id`, set by the sender;
 * 4. the SHA-256 of the raw body, so that identical bodies without an id are duplicates.
 *
 * Decisions (docs/webhooks.md):
 * - Header names match case-insensitively; a value that is empty after trimming counts as absent.
 * - The identity names its source (`header:`, `provider:`, `sender:`, `body:`), so an id sent in
 *   one way never collides with another kind (a sender's id that happens to equal a body hash).
 * - An id longer than 256 characters is replaced by its SHA-256 (`…:sha256:<hex>`): the stored key
 *   stays bounded and equal ids still collide.
 *
 * Replays (issue 15, finding 7): the id headers above are not covered by the signature of most
 * schemes, so a captured signed delivery could be posted again under a new id. A signed delivery
 * therefore also has a content key, `signed:<SHA-256 of the bytes its signature covers>`
 * (`contentKey`), claimed together with its identity: the same signed bytes are a duplicate
 * whatever id headers come with them. Two different events never share signed bytes (their bodies,
 * or for Standard Webhooks their signed ids, differ).
 */
import { Effect, Option } from "effect"
import { sha256Hex } from "../internal/Sha256.js"

/** The neutral header a sender may set with its own event id. */
export const SENDER_DELIVERY_HEADER = "x-service-delivery-id"

/** The longest id kept as it is. */
export const MAX_ID_LENGTH = 256

/** Where an identity came from, by preference. */
export type IdentitySource = "header" | "provider" | "sender" | "body"

export interface DeliveryIdentity {
  readonly source: IdentitySource
  /** `<source>:<id>`: the key duplicates are detected by. */
  readonly key: string
}

export interface IdentityInput {
  /** The webhook's delivery ID header setting, if any. */
  readonly deliveryIdHeader: string | null
  /** The provider's delivery id of a signed delivery, if its scheme gives one. */
  readonly providerDeliveryId: Option.Option<string>
  /** The request's headers (any case). */
  readonly headers: Readonly<Record<string, string | undefined>>
  /** The raw body. */
  readonly body: Uint8Array
}

const headerValue = (headers: IdentityInput["headers"], name: string): string | undefined => {
  const wanted = name.toLowerCase()
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === wanted && value !== undefined && value.trim() !== "") return value.trim()
  }
  return undefined
}

const keyOf = (source: IdentitySource, id: string): Effect.Effect<DeliveryIdentity> =>
  id.length <= MAX_ID_LENGTH
    ? Effect.succeed({ source, key: `${source}:${id}` })
    : Effect.map(sha256Hex(new TextEncoder().encode(id)), (hex) => ({ source, key: `${source}:sha256:${hex}` }))

/** The replay key of a signed delivery: the SHA-256 of the bytes its signature covers. */
export const contentKey = (signedContent: Uint8Array): Effect.Effect<string> =>
  Effect.map(sha256Hex(signedContent), (hex) => `signed:${hex}`)

/** The delivery's identity, by the order of preference of docs/webhooks.md. */
export const deliveryIdentity = (input: IdentityInput): Effect.Effect<DeliveryIdentity> => {
  const configured = input.deliveryIdHeader === null ? undefined : headerValue(input.headers, input.deliveryIdHeader)
  if (configured !== undefined) return keyOf("header", configured)
  const provider = Option.getOrUndefined(Option.filter(input.providerDeliveryId, (id) => id.trim() !== ""))
  if (provider !== undefined) return keyOf("provider", provider.trim())
  const sender = headerValue(input.headers, SENDER_DELIVERY_HEADER)
  if (sender !== undefined) return keyOf("sender", sender)
  return Effect.map(sha256Hex(input.body), (hex) => ({ source: "body" as const, key: `body:${hex}` }))
}
