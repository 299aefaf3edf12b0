/**
 * Definitions as code (Definitions.ts): reading the keys and values of a definition file's mapping,
 * each problem reported under its key (`trigger.filter.webhookIds[0]`). Shared by the parsers.
 */
import { Either, ParseResult, Schema } from "effect"
import type { JsonObject, JsonValue } from "./Common.js"
import * as PayloadFilter from "./PayloadFilter.js"
import type { Report } from "./DefinitionFiles.js"
import { describeValue, kindOf } from "./DefinitionsYaml.js"

// ---------------------------------------------------------------------------------------------
// Keys and values
// ---------------------------------------------------------------------------------------------

export const isObject = (u: JsonValue | undefined): u is JsonObject => typeof u === "object" && u !== null && !Array.isArray(u)

export const camel = (snake: string): string => snake.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase())

export const join = (prefix: string, key: string | number): string => PayloadFilter.renderPath(prefix, [key])

/**
 * The keys of a mapping (a present YAML `null` counts as absent), under their camelCase names; a
 * key may also be spelt in snake_case as the API spells it (`webhook_ids`, `agent_config`,
 * `model_id`), but not both ways at once. Unknown keys are reported.
 */
export const readMapping = (
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
export const decodeValue = <A, I>(schema: Schema.Schema<A, I>, value: JsonValue, key: string, report: Report): A | undefined => {
  const decoded = Schema.decodeUnknownEither(schema)(value)
  if (Either.isRight(decoded)) return decoded.right
  report(key, firstProblem(decoded.left))
  return undefined
}

/** A required value, decoded; the problem is reported under `key`. */
export const required = <A, I>(
  schema: Schema.Schema<A, I>,
  value: JsonValue | undefined,
  key: string,
  report: Report
): A | undefined => {
  if (value !== undefined) return decodeValue(schema, value, key, report)
  report(key, "is required")
  return undefined
}

export const oneOf = <L extends string>(literals: ReadonlyArray<L>, value: JsonValue, key: string, report: Report): L | undefined => {
  if (typeof value === "string" && (literals as ReadonlyArray<string>).includes(value)) return value as L
  report(key, `must be one of ${literals.join(", ")}; got ${describeValue(value)}`)
  return undefined
}

export const booleanAt = (value: JsonValue | undefined, key: string, fallback: boolean, report: Report): boolean | undefined => {
  if (value === undefined) return fallback
  if (typeof value === "boolean") return value
  report(key, `must be true or false; got ${describeValue(value)}`)
  return undefined
}

export const nonBlankAt = (value: JsonValue | undefined, key: string, report: Report): string | undefined => {
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

export const listAt = (value: JsonValue | undefined, key: string, report: Report): ReadonlyArray<JsonValue> | undefined => {
  if (value === undefined) return []
  if (Array.isArray(value)) return value
  report(key, `must be a list; got ${describeValue(value)}`)
  return undefined
}
