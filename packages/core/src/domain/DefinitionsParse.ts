/** Definitions as code (Definitions.ts): `parse`, the files into valid definitions and the errors of the others. */
import { Either, ParseResult, Schema } from "effect"
import type { JsonObject, JsonValue } from "./Common.js"
import { WebhookUid } from "./Ids.js"
import * as PayloadFilter from "./PayloadFilter.js"
import { AgentConfig, McpHttpServer, McpServerRef, McpStdioServer } from "./Run.js"
import { SecretName } from "./Secret.js"
import { AuthMode, HeaderName, SignatureScheme } from "./Webhook.js"
import {
  AUTOMATION_KEYS,
  DEFINITION_DIRECTORIES,
  DEFINITION_EXTENSION,
  DefinitionError,
  FILTER_KEYS,
  GITHUB_FILE,
  TRIGGER_KEYS,
  WEBHOOK_KEYS
} from "./DefinitionFiles.js"
import type {
  AutomationDefinition,
  DefinitionFile,
  DefinitionKind,
  DefinitionPlace,
  OutboundWebhookDefinition,
  GitHubDefinition,
  Parsed,
  Report,
  WebhookDefinition
} from "./DefinitionFiles.js"
import { parseGitHub } from "./DefinitionsGitHub.js"
import { parseOutboundWebhook } from "./DefinitionsOutbound.js"
import { describeValue, readYaml } from "./DefinitionsYaml.js"
import { booleanAt, camel, decodeValue, isObject, join, listAt, nonBlankAt, oneOf, readMapping } from "./DefinitionsValues.js"

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

/** What a definition file holds, from its path, or why it is not one. */
export const classify = (path: string): Either.Either<DefinitionPlace, string> => {
  if (path === GITHUB_FILE) return Either.right({ kind: "github" })
  const segments = path.split(/[\\/]/)
  const base = segments[segments.length - 1] ?? ""
  const directory = segments[segments.length - 2]
  if (!isDefinitionDirectory(directory)) {
    return Either.left(
      `is not a definition file: definitions are ${
        DEFINITION_DIRECTORIES.map((d) => `${d}/<name>.yaml`).join(", ")
      } and ${GITHUB_FILE} (at the root)`
    )
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

const isDefinitionDirectory = (directory: string | undefined): directory is DefinitionKind =>
  (DEFINITION_DIRECTORIES as ReadonlyArray<string | undefined>).includes(directory)

/** What `parse` collects, file by file. */
interface Collected {
  github: GitHubDefinition | null
  readonly webhooks: Array<WebhookDefinition>
  readonly automations: Array<AutomationDefinition>
  readonly outboundWebhooks: Array<OutboundWebhookDefinition>
  readonly invalidWebhookNames: Array<string>
  readonly errors: Array<DefinitionError>
}

const WHAT: Record<DefinitionPlace["kind"], string> = {
  webhooks: "webhook",
  automations: "automation",
  "outbound-webhooks": "outbound webhook",
  github: "GitHub connection"
}

/** Two files holding the same definition have the same key. */
const placeKey = (place: DefinitionPlace): string => (place.kind === "github" ? place.kind : `${place.kind}/${place.name}`)

/** Reads one file into `out`: its definition when it has no error, else its errors. */
const parseFile = (file: DefinitionFile, seen: Map<string, string>, out: Collected): void => {
  let failed = false
  const report: Report = (key, problem) => {
    failed = true
    out.errors.push(new DefinitionError({ path: file.path, key, problem }))
  }
  const classified = classify(file.path)
  if (Either.isLeft(classified)) return report("", classified.left)
  const place = classified.right
  const twin = seen.get(placeKey(place))
  if (twin !== undefined) return report("", `defines the same ${WHAT[place.kind]} as ${twin}`)
  seen.set(placeKey(place), file.path)
  const json = readYaml(file.text, report)
  // An empty file is a mapping without keys, so its errors name the required keys.
  const root = failed ? undefined : json === null ? {} : json!
  const valid = <D>(definition: D | undefined): definition is D => definition !== undefined && !failed
  if (root !== undefined) {
    switch (place.kind) {
      case "github": {
        const definition = parseGitHub(file.path, root, report)
        if (valid(definition)) out.github = definition
        break
      }
      case "webhooks": {
        const definition = parseWebhook(file.path, place.name, root, report)
        if (valid(definition)) out.webhooks.push(definition)
        break
      }
      case "automations": {
        const definition = parseAutomation(file.path, place.name, root, report)
        if (valid(definition)) out.automations.push(definition)
        break
      }
      case "outbound-webhooks": {
        const definition = parseOutboundWebhook(file.path, place.name, root, report)
        if (valid(definition)) out.outboundWebhooks.push(definition)
      }
    }
  }
  if (failed && place.kind === "webhooks") out.invalidWebhookNames.push(place.name)
}

/**
 * Parses definition files. Never throws: whatever the text, the outcome is definitions and
 * errors, each naming its file and key. Definitions come out in the order of their paths.
 */
export const parse = (files: ReadonlyArray<DefinitionFile>): Parsed => {
  const out: Collected = { github: null, webhooks: [], automations: [], outboundWebhooks: [], invalidWebhookNames: [], errors: [] }
  const seen = new Map<string, string>()
  for (const file of [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) parseFile(file, seen, out)
  return out
}
