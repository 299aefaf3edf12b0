/**
 * Definitions as code (CONTRACT §8; spec "Custom webhook"): webhooks as files
 * `webhooks/<name>.yaml` and automations as files `automations/<name>.yaml`, parsed (`parse`) and
 * compared with what the team has (`plan`) into the steps that make the team match the files.
 * Pure: the files come already read, the team's state already listed; DefinitionsApplier.ts runs
 * the plan, for the server (through the core services) and for the CLI (through the HTTP API).
 *
 * File formats (keys in camelCase; the name is the file's base name without `.yaml`):
 * - Webhook: `authMode` (`token` | `url_token` | `signature`; default `token`), `signatureScheme`
 *   (required with, and only allowed with, `signature`), `secretName` (required: the team secret
 *   holding the credential), `deliveryIdHeader` (optional header name), `enabled` (default true).
 * - Automation: `prompt` (required), `enabled` (default true), `trigger` (required:
 *   `provider: webhook` and `event: received`, both optional since they are the only values, and
 *   `filter` with `webhookIds`, a list of webhook uids, and/or `webhookNames`, a list of webhook
 *   names, at least one webhook in all, plus an optional `payload` filter written as in the API),
 *   `agentConfig` (optional: the agent configuration of the API with its keys in camelCase,
 *   `modelId`, `environmentId`, `mcpServers` (each server's `serverId`), ...; the names of MCP
 *   servers, their `env` and `headers` and the payload filter's fields are data, kept as written).
 *
 * Decisions:
 * - Definitions never carry secret values: `secretName` is required, and must name a team secret
 *   whose value suits the mode (checked with `Webhooks.credentialProblem`'s rules, by whoever
 *   supplies `plan`'s `secretProblem`). Nothing is generated, so applying twice rotates nothing.
 * - A file is the whole definition: an omitted key takes its default, and applying sets it (an
 *   omitted `enabled` enables a webhook disabled by hand; an omitted `agentConfig` is `{}`). A YAML
 *   `null` (`key:` with nothing after it) counts as omitted.
 * - Webhooks and automations are matched by name within the team. What the team has but the
 *   directory does not is left alone: nothing is ever deleted (delete through the API).
 * - `authMode`, `signatureScheme` and `secretName` of an existing webhook cannot change (its URL
 *   and senders depend on them): a file that changes one is an error; delete the webhook first.
 *   `enabled` and `deliveryIdHeader` are patched. A changed team secret value is not re-read by
 *   applying the same files; toggling `enabled` off and on (two applies) re-reads it.
 * - `webhookIds` are uids, as the spec says; `webhookNames` (an addition) names webhooks of the
 *   team or of the same directory, resolved to uids when applied, so that a directory can define
 *   a webhook and the automations it starts before the webhook's uid exists. The stored trigger
 *   holds uids only: `webhookIds` first, then the named ones, each kept once.
 * - Every error names the file and the key (`webhooks/github.yaml: signatureScheme: is required
 *   when authMode is signature`); nested keys as paths (`trigger.filter.webhookIds[0]`); YAML
 *   syntax errors by line and column. All errors of all files are reported together, and a plan
 *   exists only when there is none, so nothing is applied while any file is wrong.
 * - Only files named `webhooks/<name>.yaml` and `automations/<name>.yaml` are definitions; a
 *   name must not be blank nor start or end with whitespace (names are trimmed by the services).
 */
import { Data, Either, ParseResult, Schema } from "effect"
import { LineCounter, parseDocument } from "yaml"
import type { Automation } from "./Automation.js"
import { AutomationTrigger, CreateAutomationRequest, UpdateAutomationRequest } from "./Automation.js"
import type { JsonObject, JsonValue } from "./Common.js"
import { WebhookUid } from "./Ids.js"
import * as PayloadFilter from "./PayloadFilter.js"
import { AgentConfig, McpHttpServer, McpServerRef, McpStdioServer } from "./Run.js"
import { SecretName } from "./Secret.js"
import type { Webhook } from "./Webhook.js"
import {
  AuthMode,
  CreateWebhookRequest,
  HeaderName,
  MAX_WEBHOOKS_PER_TEAM,
  PatchWebhookRequest,
  SignatureScheme
} from "./Webhook.js"

// ---------------------------------------------------------------------------------------------
// Files and errors
// ---------------------------------------------------------------------------------------------

/** A definition file, already read: `path` relative to the definitions directory. */
export interface DefinitionFile {
  readonly path: string
  readonly text: string
}

/** The two kinds of definitions, and the directory each lives in. */
export const DEFINITION_DIRECTORIES = ["webhooks", "automations"] as const
export type DefinitionKind = (typeof DEFINITION_DIRECTORIES)[number]

/** The extension of definition files. */
export const DEFINITION_EXTENSION = ".yaml"

/**
 * What is wrong with a definition: the file, the key (a path such as `trigger.filter.payload`;
 * empty for the file as a whole), and the problem.
 */
export class DefinitionError extends Data.Class<{
  readonly path: string
  readonly key: string
  readonly problem: string
}> {
  /** `webhooks/github.yaml: signatureScheme: is required when authMode is signature` */
  get message(): string {
    return this.key === "" ? `${this.path}: ${this.problem}` : `${this.path}: ${this.key}: ${this.problem}`
  }
}

// ---------------------------------------------------------------------------------------------
// Definitions
// ---------------------------------------------------------------------------------------------

/** A webhook as a file defines it. */
export interface WebhookDefinition {
  readonly path: string
  readonly name: string
  readonly authMode: AuthMode
  readonly signatureScheme: SignatureScheme | null
  readonly secretName: SecretName
  readonly deliveryIdHeader: string | null
  readonly enabled: boolean
}

/** An automation as a file defines it (the trigger is always `webhook` / `received`). */
export interface AutomationDefinition {
  readonly path: string
  readonly name: string
  readonly prompt: string
  readonly enabled: boolean
  /** Webhook uids, as written. */
  readonly webhookIds: ReadonlyArray<WebhookUid>
  /** Webhook names, resolved to uids when applied. */
  readonly webhookNames: ReadonlyArray<string>
  /** The payload filter as written (JSON), or null for none. */
  readonly payload: JsonObject | null
  /** The agent configuration in its API form (snake_case keys). */
  readonly agentConfig: AgentConfig
}

/** What `parse` found: the valid definitions, and the errors of the others. */
export interface Parsed {
  readonly webhooks: ReadonlyArray<WebhookDefinition>
  readonly automations: ReadonlyArray<AutomationDefinition>
  /** Names of webhook files that have errors (automations may name them without a second error). */
  readonly invalidWebhookNames: ReadonlyArray<string>
  readonly errors: ReadonlyArray<DefinitionError>
}

/** The keys of a webhook file. */
export const WEBHOOK_KEYS = ["authMode", "signatureScheme", "secretName", "deliveryIdHeader", "enabled"] as const
/** The keys of an automation file. */
export const AUTOMATION_KEYS = ["prompt", "enabled", "trigger", "agentConfig"] as const
const TRIGGER_KEYS = ["provider", "event", "filter"] as const
const FILTER_KEYS = ["webhookIds", "webhookNames", "payload"] as const

// ---------------------------------------------------------------------------------------------
// YAML to plain JSON
// ---------------------------------------------------------------------------------------------

/** How deep a definition may nest (the payload filter's limit, and some room above it). */
const MAX_DEPTH = PayloadFilter.MAX_FILTER_DEPTH + 8

type Report = (key: string, problem: string) => void

const kindOf = (u: unknown): string => {
  if (u === null || u === undefined) return "nothing"
  if (Array.isArray(u)) return "a list"
  if (u instanceof Map) return "a mapping"
  if (typeof u === "object") return "a mapping"
  return `a ${typeof u}`
}

const describeValue = (u: unknown): string =>
  typeof u === "string" || typeof u === "number" || typeof u === "boolean" ? JSON.stringify(u) : kindOf(u)

/** Converts what the YAML parser made (Maps for mappings) into JSON, reporting what is not JSON. */
const toJson = (value: unknown, path: ReadonlyArray<PayloadFilter.PathSegment>, report: Report): JsonValue | undefined => {
  const ancestors = new Set<unknown>()
  const go = (v: unknown, at: ReadonlyArray<PayloadFilter.PathSegment>): JsonValue | undefined => {
    const key = PayloadFilter.renderPath("", at)
    if (v === null || typeof v === "string" || typeof v === "boolean") return v
    if (typeof v === "number") {
      if (Number.isFinite(v)) return v
      report(key, `${v} is not a number JSON can hold`)
      return undefined
    }
    if (typeof v !== "object") {
      report(key, `${kindOf(v)} is not allowed here`)
      return undefined
    }
    if (ancestors.has(v)) {
      report(key, "refers to itself (through a YAML alias)")
      return undefined
    }
    if (at.length > MAX_DEPTH) {
      report(key, `nests more than ${MAX_DEPTH} levels`)
      return undefined
    }
    ancestors.add(v)
    try {
      if (Array.isArray(v)) {
        const items: Array<JsonValue> = []
        let ok = true
        v.forEach((item, i) => {
          const converted = go(item, [...at, i])
          if (converted === undefined) ok = false
          else items.push(converted)
        })
        return ok ? items : undefined
      }
      if (v instanceof Map) {
        const entries: Array<[string, JsonValue]> = []
        let ok = true
        for (const [k, item] of v) {
          if (typeof k !== "string") {
            report(key, `keys must be strings; quote the key ${describeValue(k)}`)
            ok = false
            continue
          }
          const converted = go(item, [...at, k])
          if (converted === undefined) ok = false
          else entries.push([k, converted])
        }
        // fromEntries defines own properties: a "__proto__" key stays a plain key.
        return ok ? Object.fromEntries(entries) : undefined
      }
      report(key, "is not a JSON value (binary data and other YAML types are not allowed)")
      return undefined
    } finally {
      ancestors.delete(v)
    }
  }
  return go(value, path)
}

/** The file's YAML as JSON, or its syntax errors (by line and column). */
const readYaml = (text: string, report: Report): JsonValue | undefined => {
  try {
    const lineCounter = new LineCounter()
    const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true })
    const problems = [...doc.errors, ...doc.warnings]
    if (problems.length > 0) {
      for (const problem of problems) {
        const { col, line } = lineCounter.linePos(problem.pos[0])
        report("", `line ${line}, column ${col}: ${problem.message}`)
      }
      return undefined
    }
    return toJson(doc.toJS({ mapAsMap: true, maxAliasCount: 100 }), [], report)
  } catch (error) {
    report("", `not valid YAML: ${error instanceof Error ? error.message : String(error)}`)
    return undefined
  }
}

// ---------------------------------------------------------------------------------------------
// Keys and values
// ---------------------------------------------------------------------------------------------

const isObject = (u: JsonValue | undefined): u is JsonObject => typeof u === "object" && u !== null && !Array.isArray(u)

const camel = (snake: string): string => snake.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase())

const join = (prefix: string, key: string | number): string => PayloadFilter.renderPath(prefix, [key])

/**
 * The keys of a mapping (a present YAML `null` counts as absent); unknown keys are reported. A
 * snake_case spelling of a known key gets a hint.
 */
const readMapping = (
  value: JsonValue | undefined,
  at: string,
  known: ReadonlyArray<string>,
  report: Report
): Record<string, JsonValue> | undefined => {
  if (!isObject(value)) {
    report(at, `must be a mapping of ${known.join(", ")}; got ${kindOf(value)}`)
    return undefined
  }
  const out: Record<string, JsonValue> = {}
  for (const [key, item] of Object.entries(value)) {
    if (!known.includes(key)) {
      const hint = known.includes(camel(key)) ? `; did you mean ${camel(key)}?` : ""
      report(join(at, key), `is not a known key (expected ${known.join(", ")})${hint}`)
    } else if (item !== null) {
      out[key] = item
    }
  }
  return out
}

/** The first problem of a failed decode, in the schema's words. */
const firstProblem = (error: ParseResult.ParseError): string => {
  const issue = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
  return issue === undefined ? error.message : issue._tag === "Missing" ? "is required" : issue.message
}

/** Decodes one value; the problem is reported under `key`. */
const decodeValue = <A, I>(schema: Schema.Schema<A, I>, value: JsonValue, key: string, report: Report): A | undefined => {
  const decoded = Schema.decodeUnknownEither(schema)(value)
  if (Either.isRight(decoded)) return decoded.right
  report(key, firstProblem(decoded.left))
  return undefined
}

const oneOf = <L extends string>(literals: ReadonlyArray<L>, value: JsonValue, key: string, report: Report): L | undefined => {
  if (typeof value === "string" && (literals as ReadonlyArray<string>).includes(value)) return value as L
  report(key, `must be one of ${literals.join(", ")}; got ${describeValue(value)}`)
  return undefined
}

const booleanAt = (value: JsonValue | undefined, key: string, fallback: boolean, report: Report): boolean | undefined => {
  if (value === undefined) return fallback
  if (typeof value === "boolean") return value
  report(key, `must be true or false; got ${describeValue(value)}`)
  return undefined
}

const nonBlankAt = (value: JsonValue | undefined, key: string, report: Report): string | undefined => {
  if (value === undefined) {
    report(key, "is required")
    return undefined
  }
  if (typeof value !== "string" || value.trim() === "") {
    report(key, `must be a non-empty string; got ${describeValue(value)}`)
    return undefined
  }
  return value
}

const listAt = (value: JsonValue | undefined, key: string, report: Report): ReadonlyArray<JsonValue> | undefined => {
  if (value === undefined) return []
  if (Array.isArray(value)) return value
  report(key, `must be a list; got ${describeValue(value)}`)
  return undefined
}

// ---------------------------------------------------------------------------------------------
// Webhook files
// ---------------------------------------------------------------------------------------------

const parseWebhook = (path: string, name: string, root: JsonValue, report: Report): WebhookDefinition | undefined => {
  const keys = readMapping(root, "", WEBHOOK_KEYS, report)
  if (keys === undefined) return undefined
  let ok = true
  const need = <A>(a: A | undefined): A => {
    if (a === undefined) ok = false
    return a as A
  }
  const authMode = keys["authMode"] === undefined ? "token" : need(oneOf(AuthMode.literals, keys["authMode"], "authMode", report))
  let signatureScheme: SignatureScheme | null = null
  if (keys["signatureScheme"] !== undefined) {
    signatureScheme = need(oneOf(SignatureScheme.literals, keys["signatureScheme"], "signatureScheme", report))
    if (authMode !== undefined && authMode !== "signature") {
      report("signatureScheme", "is only allowed when authMode is signature")
      ok = false
    }
  } else if (authMode === "signature") {
    report("signatureScheme", `is required when authMode is signature (one of ${SignatureScheme.literals.join(", ")})`)
    ok = false
  }
  let secretName: SecretName | undefined
  if (keys["secretName"] === undefined) {
    report(
      "secretName",
      "is required: definitions never hold secret values; put the credential in a team secret (PUT /agent/secrets/<name>) and name it here"
    )
    ok = false
  } else {
    secretName = need(decodeValue(SecretName, keys["secretName"], "secretName", report))
  }
  const header = keys["deliveryIdHeader"] === undefined
    ? null
    : need(decodeValue(HeaderName, keys["deliveryIdHeader"], "deliveryIdHeader", report))
  const enabled = need(booleanAt(keys["enabled"], "enabled", true, report))
  if (!ok) return undefined
  return {
    path,
    name,
    authMode: authMode!,
    signatureScheme,
    secretName: secretName!,
    deliveryIdHeader: header,
    enabled
  }
}

// ---------------------------------------------------------------------------------------------
// Automation files
// ---------------------------------------------------------------------------------------------

/** The agent configuration's keys: camelCase in files, snake_case in the API. */
const AGENT_CONFIG_KEYS: ReadonlyMap<string, string> = new Map(
  Object.keys(AgentConfig.fields).map((snake) => [camel(snake), snake])
)
/** The keys of an MCP server entry (every transport's). */
const MCP_SERVER_KEYS: ReadonlyMap<string, string> = new Map(
  [...new Set([McpStdioServer, McpHttpServer, McpServerRef].flatMap((s) => Object.keys(s.fields)))].map((snake) => [
    camel(snake),
    snake
  ])
)
const MCP_SERVERS = "mcp_servers"

const renameKeys = (value: JsonValue, names: ReadonlyMap<string, string>): JsonValue =>
  isObject(value) ? Object.fromEntries(Object.entries(value).map(([k, v]) => [names.get(k) ?? k, v])) : value

/** A path of the API's agent configuration, spelt as in the file. */
const fileKeyOf = (path: ReadonlyArray<PropertyKey>): string => {
  const segments = path.map((segment, i): PayloadFilter.PathSegment => {
    if (typeof segment === "number") return segment
    const key = String(segment)
    return i === 0 || (i === 2 && path[0] === MCP_SERVERS) ? camel(key) : key
  })
  return PayloadFilter.renderPath("agentConfig", segments)
}

const decodeAgentConfig = Schema.decodeUnknownEither(AgentConfig, { errors: "all", onExcessProperty: "error" })

const parseAgentConfig = (value: JsonValue | undefined, report: Report): AgentConfig | undefined => {
  if (value === undefined) return {}
  const keys = readMapping(value, "agentConfig", [...AGENT_CONFIG_KEYS.keys()], report)
  if (keys === undefined) return undefined
  const api: Record<string, JsonValue> = {}
  for (const [key, item] of Object.entries(keys)) {
    const snake = AGENT_CONFIG_KEYS.get(key)!
    api[snake] = snake === MCP_SERVERS && isObject(item)
      ? Object.fromEntries(Object.entries(item).map(([name, server]) => [name, renameKeys(server, MCP_SERVER_KEYS)]))
      : item
  }
  const decoded = decodeAgentConfig(api)
  if (Either.isRight(decoded)) return decoded.right
  for (const issue of ParseResult.ArrayFormatter.formatErrorSync(decoded.left)) {
    // Optional keys accept null in the API, so a wrong value also fails "Expected null": noise
    // here, where a null key is already dropped as absent.
    if (issue.message.startsWith("Expected null,")) continue
    const problem = issue._tag === "Missing" ? "is required" : issue.message
    // Messages that list an MCP server's keys use the API's spelling; the file uses camelCase.
    report(fileKeyOf(issue.path), [...MCP_SERVER_KEYS].reduce((m, [c, s]) => m.replaceAll(s, c), problem))
  }
  return undefined
}

const TRIGGER_FILTER = "trigger.filter"

const parseTrigger = (
  value: JsonValue | undefined,
  report: Report
): Pick<AutomationDefinition, "webhookIds" | "webhookNames" | "payload"> | undefined => {
  if (value === undefined) {
    report("trigger", "is required (with filter.webhookIds or filter.webhookNames)")
    return undefined
  }
  const trigger = readMapping(value, "trigger", TRIGGER_KEYS, report)
  if (trigger === undefined) return undefined
  let ok = true
  if (trigger["provider"] !== undefined && oneOf(["webhook"], trigger["provider"], "trigger.provider", report) === undefined) ok = false
  if (trigger["event"] !== undefined && oneOf(["received"], trigger["event"], "trigger.event", report) === undefined) ok = false
  if (trigger["filter"] === undefined) {
    report(TRIGGER_FILTER, "is required (with webhookIds or webhookNames)")
    return undefined
  }
  const filter = readMapping(trigger["filter"], TRIGGER_FILTER, FILTER_KEYS, report)
  if (filter === undefined) return undefined
  const idsKey = `${TRIGGER_FILTER}.webhookIds`
  const namesKey = `${TRIGGER_FILTER}.webhookNames`
  const ids: Array<WebhookUid> = []
  const names: Array<string> = []
  const idValues = listAt(filter["webhookIds"], idsKey, report)
  const nameValues = listAt(filter["webhookNames"], namesKey, report)
  if (idValues === undefined || nameValues === undefined) ok = false
  idValues?.forEach((item, i) => {
    if (typeof item !== "string") {
      report(join(idsKey, i), `must be a webhook uid (a string; quote it); got ${describeValue(item)}`)
      ok = false
      return
    }
    const uid = decodeValue(WebhookUid, item, join(idsKey, i), report)
    if (uid === undefined) ok = false
    else ids.push(uid)
  })
  nameValues?.forEach((item, i) => {
    const name = nonBlankAt(item, join(namesKey, i), report)
    if (name === undefined) ok = false
    else names.push(name.trim())
  })
  if (idValues !== undefined && nameValues !== undefined && idValues.length + nameValues.length === 0) {
    report(TRIGGER_FILTER, "must name at least one webhook in webhookIds or webhookNames")
    ok = false
  }
  let payload: JsonObject | null = null
  if (filter["payload"] !== undefined) {
    const parsed = PayloadFilter.parse(filter["payload"], { root: `${TRIGGER_FILTER}.payload` })
    if (Either.isLeft(parsed)) {
      report(parsed.left.field, parsed.left.problem)
      ok = false
    } else {
      payload = filter["payload"] as JsonObject
    }
  }
  return ok ? { webhookIds: ids, webhookNames: names, payload } : undefined
}

const parseAutomation = (path: string, name: string, root: JsonValue, report: Report): AutomationDefinition | undefined => {
  const keys = readMapping(root, "", AUTOMATION_KEYS, report)
  if (keys === undefined) return undefined
  const prompt = nonBlankAt(keys["prompt"], "prompt", report)
  const enabled = booleanAt(keys["enabled"], "enabled", true, report)
  const trigger = parseTrigger(keys["trigger"], report)
  const agentConfig = parseAgentConfig(keys["agentConfig"], report)
  if (prompt === undefined || enabled === undefined || trigger === undefined || agentConfig === undefined) return undefined
  return { path, name, prompt, enabled, ...trigger, agentConfig }
}

// ---------------------------------------------------------------------------------------------
// parse
// ---------------------------------------------------------------------------------------------

/** The kind and name of a definition file, from its path, or why it is not one. */
export const classify = (path: string): Either.Either<{ readonly kind: DefinitionKind; readonly name: string }, string> => {
  const segments = path.split(/[\\/]/)
  const base = segments[segments.length - 1] ?? ""
  const directory = segments[segments.length - 2]
  if (directory !== "webhooks" && directory !== "automations") {
    return Either.left("is not a definition file: definitions are webhooks/<name>.yaml and automations/<name>.yaml")
  }
  if (!base.endsWith(DEFINITION_EXTENSION)) {
    return Either.left(`is not a definition file: the name must end in ${DEFINITION_EXTENSION}`)
  }
  const name = base.slice(0, -DEFINITION_EXTENSION.length)
  if (name.trim() === "" || name.trim() !== name) {
    return Either.left("the file name (the definition's name) must not be blank nor start or end with whitespace")
  }
  return Either.right({ kind: directory, name })
}

/**
 * Parses definition files. Never throws: whatever the text, the outcome is definitions and
 * errors, each naming its file and key. Definitions come out in the order of their paths.
 */
export const parse = (files: ReadonlyArray<DefinitionFile>): Parsed => {
  const errors: Array<DefinitionError> = []
  const webhooks: Array<WebhookDefinition> = []
  const automations: Array<AutomationDefinition> = []
  const invalidWebhookNames: Array<string> = []
  const seen = new Map<string, string>()
  for (const file of [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    let failed = false
    const report: Report = (key, problem) => {
      failed = true
      errors.push(new DefinitionError({ path: file.path, key, problem }))
    }
    const classified = classify(file.path)
    if (Either.isLeft(classified)) {
      report("", classified.left)
      continue
    }
    const { kind, name } = classified.right
    const twin = seen.get(`${kind}/${name}`)
    if (twin !== undefined) {
      report("", `defines the same ${kind === "webhooks" ? "webhook" : "automation"} as ${twin}`)
      continue
    }
    seen.set(`${kind}/${name}`, file.path)
    const json = readYaml(file.text, report)
    if (!failed) {
      // An empty file is a mapping without keys, so its errors name the required keys.
      const root = json === null ? {} : json!
      if (kind === "webhooks") {
        const definition = parseWebhook(file.path, name, root, report)
        if (definition !== undefined && !failed) webhooks.push(definition)
      } else {
        const definition = parseAutomation(file.path, name, root, report)
        if (definition !== undefined && !failed) automations.push(definition)
      }
    }
    if (failed && kind === "webhooks") invalidWebhookNames.push(name)
  }
  return { webhooks, automations, invalidWebhookNames, errors }
}

// ---------------------------------------------------------------------------------------------
// plan
// ---------------------------------------------------------------------------------------------

/** What the team has now (live webhooks and automations, as listed). */
export interface Current {
  readonly webhooks: ReadonlyArray<Webhook>
  readonly automations: ReadonlyArray<Automation>
}

/** The team secret a webhook definition needs, and the mode it must suit. */
export interface SecretCheck {
  readonly secretName: SecretName
  readonly authMode: AuthMode
  readonly signatureScheme: SignatureScheme | null
}

/** A stable key of a secret check (the same secret for the same mode is checked once). */
export const secretCheckKey = (check: SecretCheck): string =>
  `${check.secretName}\u0000${check.authMode}\u0000${check.signatureScheme ?? ""}`

/** The distinct secret checks the webhook definitions need (every apply checks every one). */
export const secretChecks = (parsed: Pick<Parsed, "webhooks">): ReadonlyArray<SecretCheck> => {
  const checks = new Map<string, SecretCheck>()
  for (const w of parsed.webhooks) {
    const check = { secretName: w.secretName, authMode: w.authMode, signatureScheme: w.signatureScheme }
    checks.set(secretCheckKey(check), check)
  }
  return [...checks.values()]
}

/** A webhook an automation selects: one the team has, or one this plan creates. */
export type WebhookRef =
  | { readonly _tag: "Existing"; readonly uid: WebhookUid }
  | { readonly _tag: "Planned"; readonly name: string }

/** One step of a plan for a webhook file. */
export type WebhookStep =
  | { readonly _tag: "CreateWebhook"; readonly definition: WebhookDefinition; readonly request: CreateWebhookRequest }
  | {
    readonly _tag: "UpdateWebhook"
    readonly definition: WebhookDefinition
    readonly current: Webhook
    readonly request: PatchWebhookRequest
    /** The file keys that change. */
    readonly changed: ReadonlyArray<string>
  }
  | { readonly _tag: "KeepWebhook"; readonly definition: WebhookDefinition; readonly current: Webhook }

/** One step of a plan for an automation file. */
export type AutomationStep =
  | { readonly _tag: "CreateAutomation"; readonly definition: AutomationDefinition; readonly webhooks: ReadonlyArray<WebhookRef> }
  | {
    readonly _tag: "UpdateAutomation"
    readonly definition: AutomationDefinition
    readonly current: Automation
    readonly webhooks: ReadonlyArray<WebhookRef>
    /** The file keys that change. */
    readonly changed: ReadonlyArray<string>
  }
  | { readonly _tag: "KeepAutomation"; readonly definition: AutomationDefinition; readonly current: Automation }

/** What applying the files does: webhook steps first (automations may select new webhooks). */
export interface Plan {
  readonly webhooks: ReadonlyArray<WebhookStep>
  readonly automations: ReadonlyArray<AutomationStep>
}

/** The steps of a plan that change something (none: applying changes nothing). */
export const changes = (plan: Plan): ReadonlyArray<WebhookStep | AutomationStep> =>
  [...plan.webhooks, ...plan.automations].filter((s) => !s._tag.startsWith("Keep"))

const webhookCreateRequest = (d: WebhookDefinition): CreateWebhookRequest =>
  new CreateWebhookRequest({
    name: d.name,
    auth_mode: d.authMode,
    ...(d.signatureScheme === null ? {} : { signature_scheme: d.signatureScheme }),
    secret_name: d.secretName,
    ...(d.deliveryIdHeader === null ? {} : { delivery_id_header: d.deliveryIdHeader }),
    enabled: d.enabled
  })

/** The trigger an automation definition stores, once its webhooks are uids. */
export const triggerOf = (d: AutomationDefinition, uids: ReadonlyArray<WebhookUid>): AutomationTrigger => ({
  provider: "webhook",
  event: "received",
  filter: { webhook_ids: [...new Set(uids)], ...(d.payload === null ? {} : { payload: d.payload }) }
})

/** The create request of an automation definition, once its webhooks are uids. */
export const automationCreateRequest = (d: AutomationDefinition, uids: ReadonlyArray<WebhookUid>): CreateAutomationRequest =>
  new CreateAutomationRequest({
    name: d.name,
    prompt: d.prompt,
    trigger: triggerOf(d, uids),
    agent_config: d.agentConfig,
    enabled: d.enabled
  })

/** The replace (PUT) request of an automation definition: every key, `agent_config` included. */
export const automationUpdateRequest = (d: AutomationDefinition, uids: ReadonlyArray<WebhookUid>): UpdateAutomationRequest =>
  new UpdateAutomationRequest({
    name: d.name,
    prompt: d.prompt,
    trigger: triggerOf(d, uids),
    agent_config: d.agentConfig,
    enabled: d.enabled
  })

const sameTrigger = Schema.equivalence(AutomationTrigger)
const sameAgentConfig = Schema.equivalence(AgentConfig)

const planWebhook = (
  d: WebhookDefinition,
  current: Webhook | undefined,
  report: Report
): WebhookStep | undefined => {
  if (current === undefined) return { _tag: "CreateWebhook", definition: d, request: webhookCreateRequest(d) }
  const fixed = "cannot change on an existing webhook (its URL and senders depend on it); delete the webhook " +
    `${current.uid} to recreate it, or give the file another name`
  let ok = true
  if (current.auth_mode !== d.authMode) {
    report("authMode", `is ${d.authMode} here but ${current.auth_mode} on the server: ${fixed}`)
    ok = false
  }
  if (current.signature_scheme !== d.signatureScheme && d.authMode === current.auth_mode) {
    report("signatureScheme", `is ${d.signatureScheme} here but ${current.signature_scheme} on the server: ${fixed}`)
    ok = false
  }
  if (current.secret_name !== d.secretName) {
    report(
      "secretName",
      current.secret_name === undefined
        ? `the webhook ${JSON.stringify(d.name)} (${current.uid}) has its own secret, not a team secret: ${fixed}`
        : `is ${d.secretName} here but ${current.secret_name} on the server: ${fixed}`
    )
    ok = false
  }
  if (!ok) return undefined
  const changed: Array<string> = []
  if (current.enabled !== d.enabled) changed.push("enabled")
  if ((current.delivery_id_header ?? null) !== d.deliveryIdHeader) changed.push("deliveryIdHeader")
  if (changed.length === 0) return { _tag: "KeepWebhook", definition: d, current }
  return {
    _tag: "UpdateWebhook",
    definition: d,
    current,
    changed,
    request: new PatchWebhookRequest({
      ...(changed.includes("enabled") ? { enabled: d.enabled } : {}),
      ...(changed.includes("deliveryIdHeader") ? { delivery_id_header: d.deliveryIdHeader } : {})
    })
  }
}

const planAutomation = (
  d: AutomationDefinition,
  current: Automation | undefined,
  team: ReadonlyMap<string, Webhook>,
  byName: ReadonlyMap<string, WebhookRef>,
  unknownNames: ReadonlySet<string>,
  report: Report
): AutomationStep | undefined => {
  const refs: Array<WebhookRef> = []
  let ok = true
  const kept = current?.trigger.filter.webhook_ids ?? []
  d.webhookIds.forEach((uid, i) => {
    // Like Automations.update: uids the automation already selects stay accepted (their webhook
    // may have been deleted since; such automations stay visible but stop firing).
    if (!team.has(uid) && !kept.includes(uid)) {
      report(join(`${TRIGGER_FILTER}.webhookIds`, i), `no webhook ${uid} in this team`)
      ok = false
    } else {
      refs.push({ _tag: "Existing", uid })
    }
  })
  d.webhookNames.forEach((name, i) => {
    const ref = byName.get(name)
    if (ref !== undefined) refs.push(ref)
    else if (!unknownNames.has(name)) {
      report(join(`${TRIGGER_FILTER}.webhookNames`, i), `no webhook named ${JSON.stringify(name)} in this team or in webhooks/`)
      ok = false
    } else ok = false
  })
  if (!ok) return undefined
  if (current === undefined) return { _tag: "CreateAutomation", definition: d, webhooks: refs }
  const changed: Array<string> = []
  if (current.prompt !== d.prompt) changed.push("prompt")
  if (current.enabled !== d.enabled) changed.push("enabled")
  const resolved = refs.every((r) => r._tag === "Existing")
  if (!resolved || !sameTrigger(current.trigger, triggerOf(d, refs.map((r) => (r as { uid: WebhookUid }).uid)))) {
    changed.push("trigger")
  }
  if (!sameAgentConfig(current.agent_config, d.agentConfig)) changed.push("agentConfig")
  if (changed.length === 0) return { _tag: "KeepAutomation", definition: d, current }
  return { _tag: "UpdateAutomation", definition: d, current, webhooks: refs, changed }
}

/**
 * Compares the definitions with what the team has. `secretProblem` says why a webhook's team
 * secret does not suit it (undefined: it does), for each of `secretChecks(parsed)`. The result is
 * the plan, or every error, by file: the parse errors, and those found against the team's
 * state (unchangeable keys, unknown webhooks, secrets, the webhook limit).
 */
export const plan = (
  parsed: Parsed,
  current: Current,
  secretProblem: (check: SecretCheck) => string | undefined
): Either.Either<Plan, ReadonlyArray<DefinitionError>> => {
  const errors: Array<DefinitionError> = [...parsed.errors]
  const reporter = (path: string): Report => (key, problem) => errors.push(new DefinitionError({ path, key, problem }))

  const teamByName = new Map(current.webhooks.map((w) => [w.name, w]))
  const webhookSteps: Array<WebhookStep> = []
  let live = current.webhooks.length
  for (const d of parsed.webhooks) {
    const report = reporter(d.path)
    const problem = secretProblem(d)
    if (problem !== undefined) report("secretName", problem)
    const step = planWebhook(d, teamByName.get(d.name), report)
    if (step?._tag === "CreateWebhook" && ++live > MAX_WEBHOOKS_PER_TEAM) {
      report("", `would be the team's webhook number ${live}; a team has at most ${MAX_WEBHOOKS_PER_TEAM}`)
    } else if (step !== undefined && problem === undefined) {
      webhookSteps.push(step)
    }
  }

  const team = new Map(current.webhooks.map((w) => [w.uid as string, w]))
  const byName = new Map<string, WebhookRef>(current.webhooks.map((w) => [w.name, { _tag: "Existing", uid: w.uid }]))
  for (const d of parsed.webhooks) {
    if (!teamByName.has(d.name)) byName.set(d.name, { _tag: "Planned", name: d.name })
  }
  const unknownNames = new Set(parsed.invalidWebhookNames)
  const automationsByName = new Map(current.automations.map((a) => [a.name, a]))
  const automationSteps: Array<AutomationStep> = []
  for (const d of parsed.automations) {
    const step = planAutomation(d, automationsByName.get(d.name), team, byName, unknownNames, reporter(d.path))
    if (step !== undefined) automationSteps.push(step)
  }
  if (errors.length === 0) return Either.right({ webhooks: webhookSteps, automations: automationSteps })
  // Grouped by file (a stable sort keeps each file's errors in the order found).
  return Either.left(errors.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)))
}
