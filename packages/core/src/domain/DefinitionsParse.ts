/** Definitions as code (Definitions.ts): `parse`, the files into valid definitions and the errors of the others. */
import { Either, ParseResult, Schema } from "effect"
import type { JsonObject, JsonValue } from "./Common.js"
import { WebhookUid } from "./Ids.js"
import * as PayloadFilter from "./PayloadFilter.js"
import { AgentConfig, McpHttpServer, McpServerRef, McpStdioServer } from "./Run.js"
import { SecretName } from "./Secret.js"
import { AuthMode, HeaderName, SignatureScheme } from "./Webhook.js"
import { AUTOMATION_KEYS, DEFINITION_EXTENSION, DefinitionError, FILTER_KEYS, TRIGGER_KEYS, WEBHOOK_KEYS } from "./DefinitionFiles.js"
import type { AutomationDefinition, DefinitionFile, DefinitionKind, Parsed, Report, WebhookDefinition } from "./DefinitionFiles.js"
import { describeValue, kindOf, readYaml } from "./DefinitionsYaml.js"



// ---------------------------------------------------------------------------------------------
// Keys and values
// ---------------------------------------------------------------------------------------------

const isObject = (u: JsonValue | undefined): u is JsonObject => typeof u === "object" && u !== null && !Array.isArray(u)

const camel = (snake: string): string => snake.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase())

export const join = (prefix: string, key: string | number): string => PayloadFilter.renderPath(prefix, [key])

/**
 * The keys of a mapping (a present YAML `null` counts as absent), under their camelCase names; a
 * key may also be spelt in snake_case as the API spells it (`webhook_ids`, `agent_config`,
 * `model_id`), but not both ways at once. Unknown keys are reported.
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
  for (const [spelt, item] of Object.entries(value)) {
    const key = known.includes(spelt) ? spelt : camel(spelt)
    if (!known.includes(key)) {
      report(join(at, spelt), `is not a known key (expected ${known.join(", ")})`)
    } else if (key !== spelt && key in value) {
      report(join(at, spelt), `is ${key} spelt as in the API; give one of ${key} and ${spelt}, not both`)
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

export const TRIGGER_FILTER = "trigger.filter"

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
