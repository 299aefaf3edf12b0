/**
 * Outbound webhooks (docs/outbound-webhooks.md): endpoints a team registers to be told of its runs'
 * events, the deliveries made to them, and the pure rules those follow — which event types a change
 * of a run yields, which endpoints want an event, the body sent, and when a failed delivery is tried
 * again. The endpoint record never shows its secret; `OutboundWebhookWithSecret` (the create and
 * rotate-secret responses) is the only model that does.
 *
 * Decisions:
 * - A run's creation yields `run.created`; each later change of its state yields
 *   `run.state_changed` and, for an ended state, the event naming it (`run.succeeded`, `run.failed`,
 *   `run.blocked`, `run.errored`, `run.cancelled`). An endpoint subscribed to both gets both.
 * - Filters narrow by the run's schedule, environment and automation; each given list must hold
 *   the run's value (a run with none matches no list), and the lists combine with AND.
 * - Retries back off exponentially from `first_delay_ms`, each delay drawn between half and all of
 *   its step ("equal jitter") and capped at `max_delay_ms`; a delivery whose next try would fall
 *   more than `give_up_after_ms` after its first is failed for good.
 */
import { Schema } from "effect"
import { NonBlankString, optionalInput, PageInfo, Timestamp } from "./Common.js"
import { AutomationId, EnvironmentUid, OutboundDeliveryId, OutboundWebhookUid, RunId, ScheduleId } from "./Ids.js"
import type { RunState } from "./RunState.js"
import { SecretName } from "./Secret.js"

/** The most outbound webhooks one team may have (the next create is a conflict). */
export const MAX_OUTBOUND_WEBHOOKS_PER_TEAM = 20
/** The longest endpoint URL accepted. */
export const MAX_URL_LENGTH = 2_048
/** The most values in one filter list. */
export const MAX_FILTER_VALUES = 50
/** The longest description accepted. */
export const MAX_DESCRIPTION_LENGTH = 500
/** The longest endpoint name. */
export const MAX_NAME_LENGTH = 100
/** The fewest bytes of a signing secret taken from a team secret (the Standard Webhooks minimum). */
export const MIN_SIGNING_KEY_BYTES = 24
/** The most bytes of a receiver's response kept in the delivery log. */
export const MAX_EXCERPT_BYTES = 1_024
/** The longest overlap during which a rotated-out secret still signs (seven days). */
export const MAX_OVERLAP_SECONDS = 7 * 24 * 60 * 60
/** The overlap when none is asked for (one day). */
export const DEFAULT_OVERLAP_SECONDS = 24 * 60 * 60

export const OutboundEventType = Schema.Literal(
  "run.created",
  "run.state_changed",
  "run.succeeded",
  "run.failed",
  "run.blocked",
  "run.errored",
  "run.cancelled"
)
export type OutboundEventType = typeof OutboundEventType.Type

/** A change of a run: created in `state` (`previous_state` null), or moved from one state to another. */
export interface RunChange {
  readonly previous_state: RunState | null
  readonly state: RunState
}

const ENDED_EVENT: Partial<Record<RunState, OutboundEventType>> = {
  SUCCEEDED: "run.succeeded",
  FAILED: "run.failed",
  BLOCKED: "run.blocked",
  ERROR: "run.errored",
  CANCELLED: "run.cancelled"
}

/** The event types a change yields, in the order they are delivered. */
export const eventTypesOf = (change: RunChange): ReadonlyArray<OutboundEventType> => {
  if (change.previous_state === null) return ["run.created"]
  const ended = ENDED_EVENT[change.state]
  return ended === undefined ? ["run.state_changed"] : ["run.state_changed", ended]
}

const urlProblem = (s: string): string | undefined => {
  if (s.length > MAX_URL_LENGTH) return `must be at most ${MAX_URL_LENGTH} characters`
  let url: URL
  try {
    url = new URL(s)
  } catch {
    return "must be an absolute http or https URL"
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return "must be an http or https URL"
  if (url.username !== "" || url.password !== "") return "must not carry credentials (put them in the path or query)"
  if (url.hash !== "") return "must not have a fragment"
  return undefined
}

/** An endpoint's URL: absolute http(s), no credentials or fragment, at most `MAX_URL_LENGTH` characters. */
export const OutboundWebhookUrl = Schema.String.pipe(
  Schema.filter((s) => urlProblem(s) ?? true, { description: "an absolute http or https URL" })
)

/** What runs an endpoint hears of: each given list must hold the run's value. */
export const OutboundFilters = Schema.Struct({
  schedule_ids: optionalInput(Schema.Array(ScheduleId).pipe(Schema.maxItems(MAX_FILTER_VALUES))),
  environment_ids: optionalInput(Schema.Array(EnvironmentUid).pipe(Schema.maxItems(MAX_FILTER_VALUES))),
  automation_ids: optionalInput(Schema.Array(AutomationId).pipe(Schema.maxItems(MAX_FILTER_VALUES)))
}).annotations({ identifier: "OutboundFilters" })
export type OutboundFilters = typeof OutboundFilters.Type

/** The event types an endpoint subscribes to: at least one, each once. */
export const OutboundEventTypes = Schema.Array(OutboundEventType).pipe(
  Schema.minItems(1),
  Schema.filter((types) => new Set(types).size === types.length || "must not repeat an event type")
)

/** What filters test of a run. */
export interface RunFacts {
  readonly schedule_id: string | null
  readonly environment_id: string | null
  readonly automation_id: string | null
}

const field = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined

const stringAt = (value: unknown, key: string): string | null => {
  const found = field(value, key)
  return typeof found === "string" ? found : null
}

/** The facts of a run as `GET /agent/runs/{id}` shows it (its parsed JSON). */
export const factsOf = (run: unknown): RunFacts => ({
  schedule_id: stringAt(field(run, "schedule"), "schedule_id"),
  environment_id: stringAt(run, "environment_id"),
  automation_id: stringAt(field(run, "metadata"), "automation_id")
})

const allows = (list: ReadonlyArray<string> | undefined, value: string | null): boolean =>
  list === undefined || (value !== null && list.includes(value))

/** Whether an endpoint with these subscriptions and filters wants an event of `type` about a run with `facts`. */
export const wants = (
  endpoint: { readonly events: ReadonlyArray<OutboundEventType>; readonly filters: OutboundFilters },
  type: OutboundEventType,
  facts: RunFacts
): boolean =>
  endpoint.events.includes(type) &&
  allows(endpoint.filters.schedule_ids, facts.schedule_id) &&
  allows(endpoint.filters.environment_ids, facts.environment_id) &&
  allows(endpoint.filters.automation_ids, facts.automation_id)

/**
 * The body of a delivery: `{type, timestamp, data: {previous_state, state, run}}`, where `state`
 * is the run's state the event reports and `run` the run's JSON as the API showed it when the event
 * was handed to endpoints (inserted as is, not parsed again).
 */
export const eventBody = (type: OutboundEventType, occurredAt: number, change: RunChange, runJson: string): string =>
  `{"type":${JSON.stringify(type)},"timestamp":${JSON.stringify(new Date(occurredAt).toISOString())},` +
  `"data":{"previous_state":${JSON.stringify(change.previous_state)},"state":${JSON.stringify(change.state)},"run":${runJson}}}`

/** How failed deliveries are tried again (the service's setting; docs/outbound-webhooks.md). */
export interface RetryPolicy {
  readonly first_delay_ms: number
  readonly max_delay_ms: number
  readonly give_up_after_ms: number
}

/** Five seconds doubling to two hours between tries, for a day. */
export const DEFAULT_RETRY: RetryPolicy = {
  first_delay_ms: 5_000,
  max_delay_ms: 2 * 60 * 60 * 1000,
  give_up_after_ms: 24 * 60 * 60 * 1000
}

/**
 * When to try a delivery again after its `attempts`-th failed try at `now`, first tried (or
 * redelivered) at `since`; `random` is uniform in [0, 1). Undefined: give up.
 */
export const retryAt = (policy: RetryPolicy, attempts: number, since: number, now: number, random: number): number | undefined => {
  const step = Math.min(policy.max_delay_ms, policy.first_delay_ms * 2 ** Math.max(0, attempts - 1))
  const at = now + Math.ceil(step / 2 + (random * step) / 2)
  return at - since > policy.give_up_after_ms ? undefined : at
}

const endpointFields = {
  uid: OutboundWebhookUid,
  /** Unique in the team when set (definitions as code match endpoints by it); null for an unnamed endpoint. */
  name: Schema.NullOr(Schema.String),
  url: Schema.String,
  description: Schema.String,
  events: Schema.Array(OutboundEventType),
  filters: OutboundFilters,
  enabled: Schema.Boolean,
  /** Why the service turned the endpoint off (its deliveries failed for the whole retry period); null otherwise. */
  disabled_reason: Schema.NullOr(Schema.String),
  disabled_at: Schema.NullOr(Timestamp),
  /** Until when the secret rotated out last still signs next to the current one; null when none does. */
  previous_secret_expires_at: Schema.NullOr(Timestamp),
  /** The team secret the current signing secret was copied from; null when the service generated it. */
  secret_name: Schema.NullOr(SecretName),
  created_at: Timestamp,
  updated_at: Timestamp
}

/** An outbound webhook as read and listed. */
export class OutboundWebhook extends Schema.Class<OutboundWebhook>("OutboundWebhook")(endpointFields) {}

/**
 * The create and rotate-secret responses: the endpoint plus its signing secret, shown this once;
 * empty when it was copied from a team secret (`secret_name`), whose value is never shown.
 */
export class OutboundWebhookWithSecret extends Schema.Class<OutboundWebhookWithSecret>("OutboundWebhookWithSecret")({
  ...endpointFields,
  secret: Schema.String
}) {}

/** An endpoint's description: at most `MAX_DESCRIPTION_LENGTH` characters. */
export const OutboundDescription = Schema.String.pipe(Schema.maxLength(MAX_DESCRIPTION_LENGTH))
/** An endpoint's name: not blank, at most `MAX_NAME_LENGTH` characters once trimmed (as stored), no control characters. */
export const OutboundName = NonBlankString.pipe(
  Schema.filter((s) => s.trim().length <= MAX_NAME_LENGTH || `must be at most ${MAX_NAME_LENGTH} characters`),
  Schema.filter((s) => ![...s].some((c) => c < " " || c === "\u007f") || "must not contain control characters")
)


/** `POST /agent/outbound-webhooks`. */
export class CreateOutboundWebhookRequest extends Schema.Class<CreateOutboundWebhookRequest>("CreateOutboundWebhookRequest")({
  name: optionalInput(OutboundName),
  url: OutboundWebhookUrl,
  events: OutboundEventTypes,
  filters: Schema.optionalWith(OutboundFilters, { default: () => ({}), nullable: true }),
  description: Schema.optionalWith(OutboundDescription, { default: () => "", nullable: true }),
  enabled: Schema.optionalWith(Schema.Boolean, { default: () => true, nullable: true }),
  /** Sign with the value of this team secret (a Standard Webhooks secret) instead of a generated one. */
  secret_name: optionalInput(SecretName)
}) {}

/** `PATCH /agent/outbound-webhooks/{uid}`: only the given keys change; enabling clears `disabled_reason`. */
export class PatchOutboundWebhookRequest extends Schema.Class<PatchOutboundWebhookRequest>("PatchOutboundWebhookRequest")({
  name: optionalInput(OutboundName),
  url: optionalInput(OutboundWebhookUrl),
  events: optionalInput(OutboundEventTypes),
  filters: optionalInput(OutboundFilters),
  description: optionalInput(OutboundDescription),
  enabled: optionalInput(Schema.Boolean)
}) {}

/** `POST /agent/outbound-webhooks/{uid}/rotate-secret`: how long the old secret keeps signing too. */
export class RotateOutboundSecretRequest extends Schema.Class<RotateOutboundSecretRequest>("RotateOutboundSecretRequest")({
  overlap_seconds: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, MAX_OVERLAP_SECONDS)), {
    default: () => DEFAULT_OVERLAP_SECONDS,
    nullable: true
  }),
  /** Sign with the value of this team secret (a Standard Webhooks secret) instead of a generated one. */
  secret_name: optionalInput(SecretName)
}) {}

/**
 * `POST /agent/outbound-webhooks/check`: whether a URL would be accepted (the sender would deliver
 * to it now) and whether a team secret would do as a signing secret, without creating anything.
 */
export class CheckOutboundWebhookRequest extends Schema.Class<CheckOutboundWebhookRequest>("CheckOutboundWebhookRequest")({
  url: optionalInput(OutboundWebhookUrl),
  secret_name: optionalInput(SecretName)
}) {}

/** The verdicts, each null when what was asked is fine (or was not asked). */
export class CheckOutboundWebhookResponse extends Schema.Class<CheckOutboundWebhookResponse>("CheckOutboundWebhookResponse")({
  url_problem: Schema.NullOr(Schema.String),
  secret_name_problem: Schema.NullOr(Schema.String)
}) {}

/** `GET /agent/outbound-webhooks`. */
export class ListOutboundWebhooksResponse extends Schema.Class<ListOutboundWebhooksResponse>("ListOutboundWebhooksResponse")({
  outbound_webhooks: Schema.Array(OutboundWebhook)
}) {}

/** Where a delivery stands: waiting for a (next) try, received by the endpoint, or given up. */
export const OutboundDeliveryState = Schema.Literal("pending", "delivered", "failed")
export type OutboundDeliveryState = typeof OutboundDeliveryState.Type

/**
 * One delivery of an event to an endpoint; its `delivery_id` is the `webhook-id` header, the same
 * on every try. The `last_*` fields describe the latest try (null before the first).
 */
export class OutboundDelivery extends Schema.Class<OutboundDelivery>("OutboundDelivery")({
  delivery_id: OutboundDeliveryId,
  event_type: OutboundEventType,
  run_id: RunId,
  state: OutboundDeliveryState,
  attempts: Schema.NonNegativeInt,
  created_at: Timestamp,
  next_attempt_at: Schema.NullOr(Timestamp),
  last_attempt_at: Schema.NullOr(Timestamp),
  last_status: Schema.NullOr(Schema.Int),
  last_error: Schema.NullOr(Schema.String),
  last_latency_ms: Schema.NullOr(Schema.NonNegativeInt),
  last_response_excerpt: Schema.NullOr(Schema.String),
  delivered_at: Schema.NullOr(Timestamp)
}) {}

/** `GET /agent/outbound-webhooks/{uid}/deliveries`: newest first. */
export class ListOutboundDeliveriesResponse extends Schema.Class<ListOutboundDeliveriesResponse>(
  "ListOutboundDeliveriesResponse"
)({
  deliveries: Schema.Array(OutboundDelivery),
  page_info: PageInfo
}) {}

/** One endpoint's deliveries created in a window, by their state now. */
export class EndpointHealth extends Schema.Class<EndpointHealth>("EndpointHealth")({
  uid: OutboundWebhookUid,
  url: Schema.String,
  enabled: Schema.Boolean,
  disabled_reason: Schema.NullOr(Schema.String),
  delivered: Schema.NonNegativeInt,
  failed: Schema.NonNegativeInt,
  pending: Schema.NonNegativeInt
}) {}

/** `GET /agent/team/outbound-webhook-health`: each endpoint's deliveries created since `since`, oldest endpoint first. */
export class OutboundHealthResponse extends Schema.Class<OutboundHealthResponse>("OutboundHealthResponse")({
  since: Timestamp,
  hours: Schema.Int,
  endpoints: Schema.Array(EndpointHealth)
}) {}

/** `POST /agent/outbound-webhooks/{uid}/redeliver`: every failed delivery created at or after `since`. */
export class RedeliverRequest extends Schema.Class<RedeliverRequest>("RedeliverRequest")({
  since: Timestamp
}) {}

/** How many deliveries were queued again. */
export class RedeliverResponse extends Schema.Class<RedeliverResponse>("RedeliverResponse")({
  redelivered: Schema.NonNegativeInt
}) {}
