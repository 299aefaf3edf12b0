/**
 * Definitions as code (Definitions.ts): `outbound-webhooks/<name>.yaml`, a team's outbound webhooks
 * (OutboundWebhook.ts): the file read into a definition, and the step that makes the team's
 * endpoint of that name match it.
 */
import type { JsonValue } from "./Common.js"
import type { OutboundWebhook } from "./OutboundWebhook.js"
import { AutomationId, EnvironmentUid, ScheduleId } from "./Ids.js"
import {
  CheckOutboundWebhookRequest,
  CreateOutboundWebhookRequest,
  MAX_FILTER_VALUES,
  MAX_NAME_LENGTH,
  OutboundDescription,
  OutboundEventType,
  type OutboundFilters,
  OutboundWebhookUrl,
  PatchOutboundWebhookRequest,
  RotateOutboundSecretRequest
} from "./OutboundWebhook.js"
import { SecretName } from "./Secret.js"
import { OUTBOUND_FILTER_KEYS, OUTBOUND_KEYS } from "./DefinitionFiles.js"
import type { OutboundWebhookDefinition, Report } from "./DefinitionFiles.js"
import { booleanAt, decodeValue, join, listAt, oneOf, readMapping, required } from "./DefinitionsValues.js"

// ---------------------------------------------------------------------------------------------
// Reading outbound-webhooks/<name>.yaml
// ---------------------------------------------------------------------------------------------

/** The filter lists: their keys in the API, and how one value is read. */
const FILTER_LISTS: Record<(typeof OUTBOUND_FILTER_KEYS)[number], {
  readonly snake: keyof OutboundFilters
  readonly item: (value: JsonValue, key: string, report: Report) => string | undefined
}> = {
  scheduleIds: { snake: "schedule_ids", item: (value, key, report) => decodeValue(ScheduleId, value, key, report) },
  environmentIds: { snake: "environment_ids", item: (value, key, report) => decodeValue(EnvironmentUid, value, key, report) },
  automationIds: { snake: "automation_ids", item: (value, key, report) => decodeValue(AutomationId, value, key, report) }
}

/** Reads the items of a list, each under its index; undefined when one is wrong. */
const itemsAt = <A>(
  values: ReadonlyArray<JsonValue>,
  key: string,
  item: (value: JsonValue, key: string) => A | undefined
): ReadonlyArray<A> | undefined => {
  const items = values.map((value, i) => item(value, join(key, i)))
  return items.every((a) => a !== undefined) ? items as ReadonlyArray<A> : undefined
}

const parseFilters = (value: JsonValue | undefined, report: Report): OutboundFilters | undefined => {
  if (value === undefined) return {}
  const keys = readMapping(value, "filters", OUTBOUND_FILTER_KEYS, report)
  if (keys === undefined) return undefined
  const filters: Record<string, ReadonlyArray<string>> = {}
  let ok = true
  for (const [name, list] of Object.entries(FILTER_LISTS)) {
    const key = join("filters", name)
    const values = listAt(keys[name], key, report)
    if (values !== undefined && values.length > MAX_FILTER_VALUES) report(key, `must have at most ${MAX_FILTER_VALUES} items`)
    const items = values === undefined || values.length > MAX_FILTER_VALUES
      ? undefined
      : itemsAt(values, key, (item, at) => list.item(item, at, report))
    if (items === undefined) ok = false
    else if (keys[name] !== undefined) filters[list.snake] = items
  }
  return ok ? filters as OutboundFilters : undefined
}

const EVENTS_HINT = `a list of event types (${OutboundEventType.literals.join(", ")})`

const parseEvents = (value: JsonValue | undefined, report: Report): ReadonlyArray<OutboundEventType> | undefined => {
  const values = value === undefined ? [] : listAt(value, "events", report)
  if (values === undefined) return undefined
  if (values.length === 0) {
    report("events", `is required: ${EVENTS_HINT}`)
    return undefined
  }
  const events = itemsAt(values, "events", (item, key) => oneOf(OutboundEventType.literals, item, key, report))
  if (events !== undefined && new Set(events).size !== events.length) {
    report("events", "must not repeat an event type")
    return undefined
  }
  return events
}

const SECRET_REQUIRED = "is required: definitions never hold secret values; put a Standard Webhooks secret " +
  "(base64 of 24 to 64 random bytes, optionally prefixed whsec_) in a team secret (PUT /agent/secrets/<name>) and name it here"

/** Reads an outbound webhook file: `url`, `events` and `secretName` required. */
export const parseOutboundWebhook = (
  path: string,
  name: string,
  root: JsonValue,
  report: Report
): OutboundWebhookDefinition | undefined => {
  const tooLong = name.length > MAX_NAME_LENGTH
  if (tooLong) report("", `the file name (the endpoint's name) must be at most ${MAX_NAME_LENGTH} characters`)
  const keys = readMapping(root, "", OUTBOUND_KEYS, report)
  if (keys === undefined) return undefined
  const url = required(OutboundWebhookUrl, keys["url"], "url", report)
  const events = parseEvents(keys["events"], report)
  const filters = parseFilters(keys["filters"], report)
  const description = keys["description"] === undefined
    ? ""
    : decodeValue(OutboundDescription, keys["description"], "description", report)
  const enabled = booleanAt(keys["enabled"], "enabled", true, report)
  const secretName = keys["secretName"] === undefined
    ? report("secretName", SECRET_REQUIRED)
    : decodeValue(SecretName, keys["secretName"], "secretName", report)
  if (
    tooLong || url === undefined || events === undefined || filters === undefined || description === undefined ||
    enabled === undefined || secretName === undefined
  ) return undefined
  return { path, name, url, events, filters, description, enabled, secretName }
}

// ---------------------------------------------------------------------------------------------
// Planning an endpoint
// ---------------------------------------------------------------------------------------------

/** One step of a plan for an outbound webhook file. */
export type OutboundWebhookStep =
  | { readonly _tag: "CreateOutboundWebhook"; readonly definition: OutboundWebhookDefinition; readonly request: CreateOutboundWebhookRequest }
  | {
    readonly _tag: "UpdateOutboundWebhook"
    readonly definition: OutboundWebhookDefinition
    readonly current: OutboundWebhook
    /** The change of its fields; null when only its secret changes. */
    readonly patch: PatchOutboundWebhookRequest | null
    /** The rotation to the file's team secret; null when it signs with it already. */
    readonly rotate: RotateOutboundSecretRequest | null
    /** The file keys that change. */
    readonly changed: ReadonlyArray<string>
  }
  | { readonly _tag: "KeepOutboundWebhook"; readonly definition: OutboundWebhookDefinition; readonly current: OutboundWebhook }

/** The same items, in any order. */
const sameSet = (a: ReadonlyArray<string> | undefined, b: ReadonlyArray<string> | undefined) =>
  a === undefined || b === undefined ? a === b : a.length === b.length && a.every((item) => b.includes(item))

const sameFilters = (a: OutboundFilters, b: OutboundFilters) =>
  sameSet(a.schedule_ids, b.schedule_ids) && sameSet(a.environment_ids, b.environment_ids) &&
  sameSet(a.automation_ids, b.automation_ids)

/**
 * Whether the file turns the endpoint on or off: not when it says `enabled: true` of an endpoint the
 * service turned off for failing (`disabled_reason`), which an admin turns on again once the
 * receiver is mended, so that applying at every start does not revive it.
 */
const switches = (d: OutboundWebhookDefinition, current: OutboundWebhook) =>
  current.enabled !== d.enabled && !(d.enabled && current.disabled_reason !== null)

/** What differs between an endpoint and its definition, as file keys. */
const differences = (d: OutboundWebhookDefinition, current: OutboundWebhook): ReadonlyArray<string> => [
  ...(current.url === d.url ? [] : ["url"]),
  ...(sameSet(current.events, d.events) ? [] : ["events"]),
  ...(sameFilters(current.filters, d.filters) ? [] : ["filters"]),
  ...(current.description === d.description ? [] : ["description"]),
  ...(switches(d, current) ? ["enabled"] : [])
]

/** The patch of the keys that differ. */
const patchOf = (d: OutboundWebhookDefinition, keys: ReadonlyArray<string>) =>
  new PatchOutboundWebhookRequest({
    ...(keys.includes("url") ? { url: d.url } : {}),
    ...(keys.includes("events") ? { events: d.events } : {}),
    ...(keys.includes("filters") ? { filters: d.filters } : {}),
    ...(keys.includes("description") ? { description: d.description } : {}),
    ...(keys.includes("enabled") ? { enabled: d.enabled } : {})
  })

/** The team's named endpoints, by name. */
export const outboundByName = (current: { readonly outboundWebhooks: ReadonlyArray<OutboundWebhook> }) =>
  new Map(current.outboundWebhooks.flatMap((w) => (w.name === null ? [] : [[w.name, w] as const])))

/** What the server found wrong with an outbound webhook definition's new URL or team secret. */
export interface OutboundProblems {
  readonly url?: string | undefined
  readonly secretName?: string | undefined
}

/**
 * What the server must check before an outbound webhook file is applied: its URL when it is new
 * (reachable: an allowed address that resolves) and its team secret when it is new (a Standard
 * Webhooks secret of 24 bytes or more), for an endpoint to create, or whose URL or secret changes.
 * What stays as it is is not checked again (a restart does not depend on the receiver's DNS).
 */
export const outboundChecks = (
  definitions: ReadonlyArray<OutboundWebhookDefinition>,
  current: { readonly outboundWebhooks: ReadonlyArray<OutboundWebhook> }
): ReadonlyArray<{ readonly definition: OutboundWebhookDefinition; readonly request: CheckOutboundWebhookRequest }> => {
  const existing = outboundByName(current)
  return definitions.flatMap((d) => {
    const now = existing.get(d.name)
    const url = now?.url === d.url ? {} : { url: d.url }
    const secret = now?.secret_name === d.secretName ? {} : { secret_name: d.secretName }
    return Object.keys(url).length + Object.keys(secret).length === 0
      ? []
      : [{ definition: d, request: new CheckOutboundWebhookRequest({ ...url, ...secret }) }]
  })
}

/**
 * The step that makes the team's endpoint named like the file (`current`, undefined for none) match
 * it: create it, patch the keys that differ (events and filter ids compared as sets), and rotate to
 * the file's team secret when the endpoint signs with another one (the old secret keeps signing for
 * the default overlap).
 */
export const planOutboundWebhook = (d: OutboundWebhookDefinition, current: OutboundWebhook | undefined): OutboundWebhookStep => {
  if (current === undefined) {
    return {
      _tag: "CreateOutboundWebhook",
      definition: d,
      request: new CreateOutboundWebhookRequest({
        name: d.name,
        url: d.url,
        events: d.events,
        filters: d.filters,
        description: d.description,
        enabled: d.enabled,
        secret_name: d.secretName
      })
    }
  }
  const fields = differences(d, current)
  const rotating = current.secret_name !== d.secretName
  if (fields.length === 0 && !rotating) return { _tag: "KeepOutboundWebhook", definition: d, current }
  return {
    _tag: "UpdateOutboundWebhook",
    definition: d,
    current,
    changed: rotating ? [...fields, "secretName"] : fields,
    patch: fields.length === 0 ? null : patchOf(d, fields),
    rotate: rotating ? new RotateOutboundSecretRequest({ secret_name: d.secretName }) : null
  }
}
