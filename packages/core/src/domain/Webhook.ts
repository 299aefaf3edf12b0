/**
 * Custom webhooks and their delivery log (docs/webhooks.md). The webhook record never shows
 * its secret; `WebhookWithSecret` (the create and rotate-secret responses) is the only model
 * that does. `signature_scheme` is `null` unless `auth_mode` is `signature`; `secret_name` and
 * `delivery_id_header` are omitted when unset. A delivery's `payload` is present (possibly the
 * JSON `null`) exactly when its outcome is ACCEPTED.
 */
import { Schema } from "effect"
import { JsonValue, NonBlankString, optionalInput, PageInfo, Timestamp } from "./Common.js"
import { DeliveryId, RunId, WebhookUid } from "./Ids.js"
import { SecretName } from "./Secret.js"

/** The most webhooks one team may have (the next create is a conflict). */
export const MAX_WEBHOOKS_PER_TEAM = 20

/** How a sender authenticates: bearer token (default), token in the URL, or a provider signature. */
export const AuthMode = Schema.Literal("token", "url_token", "signature")
export type AuthMode = typeof AuthMode.Type

/** The provider signing schemes of `signature` webhooks. */
export const SignatureScheme = Schema.Literal(
  "standard_webhooks",
  "stripe",
  "github",
  "slack",
  "linear",
  "shopify",
  "gitlab_token",
  "pagerduty"
)
export type SignatureScheme = typeof SignatureScheme.Type

const headerNamePattern = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/** An HTTP header name (RFC 9110 token). */
export const HeaderName = Schema.String.pipe(
  Schema.filter((s) => headerNamePattern.test(s) || "must be an HTTP header name", {
    description: "an HTTP header name",
    jsonSchema: { pattern: headerNamePattern.source }
  })
).annotations({
  identifier: "HeaderName",
  arbitrary: () => (fc) => fc.stringMatching(/^[A-Z][A-Za-z-]{0,20}$/)
})

const webhookFields = {
  uid: WebhookUid,
  name: Schema.String,
  auth_mode: AuthMode,
  signature_scheme: Schema.NullOr(SignatureScheme),
  secret_name: Schema.optional(SecretName),
  delivery_id_header: Schema.optional(HeaderName),
  enabled: Schema.Boolean,
  ingress_url: Schema.String,
  created_at: Timestamp,
  updated_at: Timestamp
}

/** A webhook as read and listed; `ingress_url` renders a `url_token` token as `{token}`. */
export class Webhook extends Schema.Class<Webhook>("Webhook")(webhookFields) {}

/** The create and rotate-secret responses: the webhook plus its secret, shown this once. */
export class WebhookWithSecret extends Schema.Class<WebhookWithSecret>("WebhookWithSecret")({
  ...webhookFields,
  secret: Schema.String
}) {}

/**
 * `POST /agent/webhooks`. `signature_scheme` is required for (and only allowed with) `signature`
 * mode; `secret` may be supplied only for `signature` mode (blank: generated); `secret_name`
 * takes the credential from a stored team secret instead, and excludes `secret`.
 */
export class CreateWebhookRequest extends Schema.Class<CreateWebhookRequest>("CreateWebhookRequest")(
  Schema.Struct({
    name: NonBlankString,
    auth_mode: Schema.optionalWith(AuthMode, { default: () => "token" as const, nullable: true }),
    signature_scheme: optionalInput(SignatureScheme),
    secret: optionalInput(Schema.String),
    secret_name: optionalInput(SecretName),
    delivery_id_header: optionalInput(HeaderName),
    enabled: Schema.optionalWith(Schema.Boolean, { default: () => true, nullable: true })
  }).pipe(
    Schema.filter((r) => {
      if (r.auth_mode === "signature" && r.signature_scheme === undefined) {
        return { path: ["signature_scheme"], message: "is required when auth_mode is signature" }
      }
      if (r.auth_mode !== "signature" && r.signature_scheme !== undefined) {
        return { path: ["signature_scheme"], message: "is only allowed when auth_mode is signature" }
      }
      if (r.secret !== undefined && r.auth_mode !== "signature") {
        return {
          path: ["secret"],
          message: "can only be supplied for signature webhooks (token secrets are generated)"
        }
      }
      if (r.secret !== undefined && r.secret_name !== undefined) {
        return { path: ["secret"], message: "cannot be combined with secret_name" }
      }
      return true
    })
  )
) {}

/** `PATCH /agent/webhooks/{uid}`: only the given keys change; `delivery_id_header: null` clears it. */
export class PatchWebhookRequest extends Schema.Class<PatchWebhookRequest>("PatchWebhookRequest")({
  name: Schema.optional(NonBlankString),
  enabled: Schema.optional(Schema.Boolean),
  delivery_id_header: Schema.optional(Schema.NullOr(HeaderName))
}) {}

/**
 * `POST /agent/webhooks/check-secret`: would the named team secret do as the credential of a
 * webhook with this `auth_mode` (and `signature_scheme`)? Creates nothing; the definitions
 * applier asks it before applying anything, since secret values are never returned.
 */
export class CheckWebhookSecretRequest extends Schema.Class<CheckWebhookSecretRequest>("CheckWebhookSecretRequest")({
  secret_name: SecretName,
  auth_mode: Schema.optionalWith(AuthMode, { default: () => "token" as const, nullable: true }),
  signature_scheme: optionalInput(SignatureScheme)
}) {}

/** The verdict: `problem` says why the secret does not suit (absent, or a value of the wrong form). */
export class CheckWebhookSecretResponse extends Schema.Class<CheckWebhookSecretResponse>("CheckWebhookSecretResponse")({
  secret_name: SecretName,
  suitable: Schema.Boolean,
  problem: Schema.optional(Schema.String)
}) {}

/** `GET /agent/webhooks`. */
export class ListWebhooksResponse extends Schema.Class<ListWebhooksResponse>("ListWebhooksResponse")({
  webhooks: Schema.Array(Webhook)
}) {}

/** The outcome of one delivery. */
export const DeliveryOutcome = Schema.Literal(
  "ACCEPTED",
  "DUPLICATE",
  "REJECTED_AUTH",
  "REJECTED_INVALID_JSON",
  "REJECTED_TOO_LARGE"
)
export type DeliveryOutcome = typeof DeliveryOutcome.Type

/**
 * One entry of a webhook's delivery log. `identity` is what duplicate detection keys on (the
 * sender's delivery id, or a hash of the body); `run_ids` are the runs it started.
 */
export class Delivery extends Schema.Class<Delivery>("Delivery")(
  Schema.Struct({
    delivery_id: DeliveryId,
    received_at: Timestamp,
    size_bytes: Schema.NonNegativeInt,
    identity: Schema.String,
    outcome: DeliveryOutcome,
    run_ids: Schema.Array(RunId),
    payload: Schema.optional(JsonValue)
  }).pipe(
    Schema.filter((d) =>
      (d.outcome === "ACCEPTED") === (d.payload !== undefined) ||
      { path: ["payload"], message: "is present exactly when the outcome is ACCEPTED" }
    )
  )
) {}

/**
 * How many deliveries a webhook has logged, by outcome, since the counts began (its creation, or the
 * upgrade that introduced them): the log itself keeps only the newest rejected ones and prunes the
 * rest by age and count, the counts keep everything.
 */
export const DeliveryCounts = Schema.Struct({
  ACCEPTED: Schema.NonNegativeInt,
  DUPLICATE: Schema.NonNegativeInt,
  REJECTED_AUTH: Schema.NonNegativeInt,
  REJECTED_INVALID_JSON: Schema.NonNegativeInt,
  REJECTED_TOO_LARGE: Schema.NonNegativeInt
}).annotations({ identifier: "DeliveryCounts" })
export type DeliveryCounts = typeof DeliveryCounts.Type

/** `GET /agent/webhooks/{uid}/deliveries`: newest first, with the webhook's counts by outcome. */
export class ListDeliveriesResponse extends Schema.Class<ListDeliveriesResponse>("ListDeliveriesResponse")({
  deliveries: Schema.Array(Delivery),
  page_info: PageInfo,
  counts: Schema.optional(DeliveryCounts)
}) {}

/** The ingress's 202 body. */
export class IngressAccepted extends Schema.Class<IngressAccepted>("IngressAccepted")({
  delivery_id: DeliveryId
}) {}
