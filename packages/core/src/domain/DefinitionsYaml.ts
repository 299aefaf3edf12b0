/** Definitions as code (Definitions.ts): a definition file's YAML as plain JSON, with its errors by line and column. */
import { LineCounter, parseDocument } from "yaml"
import type { JsonValue } from "./Common.js"
import * as PayloadFilter from "./PayloadFilter.js"
import type { Report } from "./DefinitionFiles.js"

// ---------------------------------------------------------------------------------------------
// YAML to plain JSON
// ---------------------------------------------------------------------------------------------

/** How deep a definition may nest (the payload filter's limit, and some room above it). */
const MAX_DEPTH = PayloadFilter.MAX_FILTER_DEPTH + 8


export const kindOf = (u: unknown): string => {
  if (u === null || u === undefined) return "nothing"
  if (Array.isArray(u)) return "a list"
  if (u instanceof Map) return "a mapping"
  if (typeof u === "object") return "a mapping"
  return `a ${typeof u}`
}

export const describeValue = (u: unknown): string =>
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
export const readYaml = (text: string, report: Report): JsonValue | undefined => {
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
