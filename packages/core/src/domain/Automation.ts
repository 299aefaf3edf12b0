/**
 * Automations (docs/webhooks.md): a prompt and agent configuration started by a trigger. The
 * only trigger is `{provider: "webhook", event: "received", filter: {webhook_ids, payload?}}`:
 * each accepted delivery of one of the webhooks (at least one) whose body matches the payload
 * filter starts a run. The payload filter is kept here as an unparsed JSON object (PayloadFilter.ts
 * gives it meaning); it is omitted when absent (every delivery matches; `null` on input means
 * absent).
 */
import { Schema } from "effect"
import { JsonObject, JsonValue, NonBlankString, optionalInput, Timestamp } from "./Common.js"
import { AutomationId, DeliveryId, WebhookUid } from "./Ids.js"
import { AgentConfig } from "./Run.js"

/** Which deliveries fire: those of the listed webhooks whose payload matches `payload`. */
export const TriggerFilter = Schema.Struct({
  webhook_ids: Schema.Array(WebhookUid).pipe(
    Schema.minItems(1, { message: () => "must name at least one webhook" })
  ),
  payload: optionalInput(JsonObject)
}).annotations({ identifier: "TriggerFilter" })
export type TriggerFilter = typeof TriggerFilter.Type

/** A webhook trigger. */
export const AutomationTrigger = Schema.Struct({
  provider: Schema.Literal("webhook"),
  event: Schema.Literal("received"),
  filter: TriggerFilter
}).annotations({ identifier: "AutomationTrigger" })
export type AutomationTrigger = typeof AutomationTrigger.Type

/** An automation. */
export class Automation extends Schema.Class<Automation>("Automation")({
  id: AutomationId,
  name: Schema.String,
  enabled: Schema.Boolean,
  prompt: Schema.String,
  agent_config: AgentConfig,
  trigger: AutomationTrigger,
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

/** `POST /agent/automations`: `enabled` defaults to true, `agent_config` to `{}`. */
export class CreateAutomationRequest extends Schema.Class<CreateAutomationRequest>("CreateAutomationRequest")({
  name: NonBlankString,
  prompt: NonBlankString,
  trigger: AutomationTrigger,
  agent_config: optionalInput(AgentConfig),
  enabled: Schema.optionalWith(Schema.Boolean, { default: () => true, nullable: true })
}) {}

/** `PUT /agent/automations/{id}`: every field except `agent_config` (kept when omitted) is required. */
export class UpdateAutomationRequest extends Schema.Class<UpdateAutomationRequest>("UpdateAutomationRequest")({
  name: NonBlankString,
  prompt: NonBlankString,
  trigger: AutomationTrigger,
  enabled: Schema.Boolean,
  agent_config: optionalInput(AgentConfig)
}) {}

/** `GET /agent/automations`. */
export class ListAutomationsResponse extends Schema.Class<ListAutomationsResponse>("ListAutomationsResponse")({
  automations: Schema.Array(Automation)
}) {}

/**
 * `POST /agent/automations/{id}/test-filter`: exactly one of `delivery_id` (a logged delivery) or
 * `payload` (a delivery body pasted by the caller: any JSON value, `null` included). Which one is
 * given is checked by the service (400 naming the field). Filters read only the body, so there is
 * nothing else to send; unknown properties (a `headers` of older clients) are ignored.
 */
export class TestFilterRequest extends Schema.Class<TestFilterRequest>("TestFilterRequest")({
  delivery_id: optionalInput(DeliveryId),
  payload: Schema.optionalWith(JsonValue, { exact: true })
}) {}

/** The verdict of a test: would the stored delivery start a run, and why (or why not). */
export class TestFilterResult extends Schema.Class<TestFilterResult>("TestFilterResult")({
  result: Schema.Literal("WOULD_TRIGGER", "WOULD_NOT_TRIGGER"),
  reasons: Schema.Array(Schema.String)
}) {}
