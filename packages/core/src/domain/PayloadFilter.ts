/**
 * The payload filter of a webhook automation trigger (docs/webhooks.md): a JSON object that
 * mirrors the delivery body. `parse` turns the JSON into a typed filter or a `PayloadFilterError`
 * naming the offending path; `evaluate` decides whether a delivery starts a run; `explain` says why
 * not (the test-filter endpoint). An absent filter matches every delivery.
 *
 * Syntax:
 * - The filter is a JSON object. Its top-level keys are always field names, even `in`, `not_in` and
 *   `exists`. `{}` has no condition and matches every payload.
 * - A field's value is one of:
 *   - an array of allowed values (exactly the same as `{ "in": [...] }`);
 *   - an operator object: a non-empty object whose keys are all among `in` (array), `not_in`
 *     (array) and `exists` (boolean). Any combination is allowed and every operator given must
 *     hold (`{ "in": [1, 2], "not_in": [2] }` allows 1 only);
 *   - an object of nested fields: a non-empty object with no operator key, reaching into the
 *     field's value.
 * - An object mixing operator keys and other keys is an error (this is how a misspelt operator next
 *   to a real one, e.g. `{ "in": [1], "nin": [2] }`, is caught). A misspelt operator on its own
 *   (`{ "nin": [2] }`) is a nested field named `nin`: it cannot be told apart.
 * - Below the top level, a field literally named `in`, `not_in` or `exists` cannot be expressed.
 * - An empty object below the top level is an error (it would express no condition). An empty
 *   array is allowed: `[]` and `{ "in": [] }` match nothing, `{ "not_in": [] }` everything.
 * - A filter nests at most `MAX_FILTER_DEPTH` levels of objects and arrays, allowed values included.
 *
 * Matching:
 * - Equality is deep JSON equality: strings, numbers, booleans and null by value (a number never
 *   equals a string: `1` is not `"1"`), arrays element by element in order, objects by their keys
 *   and values in any key order.
 * - A field whose payload value is an array matches an allowed value when the array as a whole,
 *   or any one of its elements, equals it (`{ "labels": ["bug"] }` matches `"labels": ["bug", "ui"]`).
 * - `in` requires the field to be present; `not_in` matches exactly when `in` would not, so an
 *   absent field matches `not_in`, and an array field fails it when any element is listed.
 * - `exists: true` matches a field that is present and not `null`; `exists: false` matches an absent
 *   field or a `null` one (webhook senders write "no value" as `null`). To match `null` itself,
 *   list it: `[null]`.
 * - Nested fields reach only into JSON objects: when an intermediate value is absent, `null`, a
 *   scalar or an array, every field below it is absent.
 */
import { Data, Either } from "effect"
import { InvalidRequest } from "./Errors.js"

/** A JSON value, as allowed values and payloads are. */
export type JsonValue = null | boolean | number | string | ReadonlyArray<JsonValue> | { readonly [key: string]: JsonValue }

/** A JSON object. */
export type JsonObject = { readonly [key: string]: JsonValue }

/** The keys of an operator object. */
export const OPERATOR_KEYS = ["in", "not_in", "exists"] as const
export type OperatorKey = (typeof OPERATOR_KEYS)[number]

/** The deepest nesting of objects and arrays a filter may have, allowed values included. */
export const MAX_FILTER_DEPTH = 64

/** The conditions on one field; every one present must hold. */
export interface Operators {
  readonly _tag: "Operators"
  readonly in?: ReadonlyArray<JsonValue>
  readonly notIn?: ReadonlyArray<JsonValue>
  readonly exists?: boolean
}

/** Conditions on named fields of an object; every one must hold. */
export interface Fields {
  readonly _tag: "Fields"
  readonly fields: ReadonlyArray<Field>
}

/** One named field and its condition. */
export interface Field {
  readonly name: string
  readonly condition: Condition
}

export type Condition = Operators | Fields

/** A parsed payload filter: conditions on the top-level fields of the delivery body. */
export type PayloadFilter = Fields

/** A step of a path: an object key or an array index. */
export type PathSegment = string | number

/** The name the rendered paths start with unless the caller gives another. */
export const DEFAULT_ROOT = "payload"

const identifier = /^[A-Za-z_][A-Za-z0-9_-]*$/

/** Renders a path as `payload.action.in`, `payload["a.b"]` or `payload.in[0]`. */
export const renderPath = (root: string, path: ReadonlyArray<PathSegment>): string =>
  path.reduce<string>((acc, segment) => {
    if (typeof segment === "number") return `${acc}[${segment}]`
    if (identifier.test(segment)) return acc === "" ? segment : `${acc}.${segment}`
    return `${acc}[${JSON.stringify(segment)}]`
  }, root)

/** A filter that is not well formed; `field` is the rendered path of the offending value. */
export class PayloadFilterError extends Data.TaggedError("PayloadFilterError")<{
  readonly message: string
  readonly field: string
  readonly path: ReadonlyArray<PathSegment>
  readonly problem: string
}> {
  /** The error for the value at `path` (below `root`). */
  static at(root: string, path: ReadonlyArray<PathSegment>, problem: string): PayloadFilterError {
    const field = renderPath(root, path)
    return new PayloadFilterError({ message: `${field}: ${problem}`, field, path, problem })
  }

  /** The 400 `invalid_request` naming the same field. */
  toInvalidRequest(): InvalidRequest {
    return InvalidRequest.forField(this.field, this.problem)
  }
}

/** Options of `parse` and `explain`: the name paths start with (default `payload`). */
export interface PathOptions {
  readonly root?: string
}

const isOperatorKey = (key: string): key is OperatorKey => (OPERATOR_KEYS as ReadonlyArray<string>).includes(key)

const isPlainObject = (u: unknown): u is Record<string, unknown> => {
  if (typeof u !== "object" || u === null || Array.isArray(u)) return false
  const proto: unknown = Object.getPrototypeOf(u)
  return proto === Object.prototype || proto === null
}

const kindOf = (u: unknown): string => {
  if (u === null) return "null"
  if (Array.isArray(u)) return "an array"
  switch (typeof u) {
    case "string":
      return "a string"
    case "number":
      return "a number"
    case "boolean":
      return "a boolean"
    case "object":
      return "an object"
    default:
      return typeof u
  }
}

const tooDeep = `nests deeper than ${MAX_FILTER_DEPTH} levels`

type Parsed<A> = Either.Either<A, PayloadFilterError>

class Parser {
  constructor(readonly root: string) {}

  fail(path: ReadonlyArray<PathSegment>, problem: string): Parsed<never> {
    return Either.left(PayloadFilterError.at(this.root, path, problem))
  }

  /** An allowed value: any JSON value, within the depth limit. */
  json(u: unknown, path: ReadonlyArray<PathSegment>): Parsed<JsonValue> {
    if (u === null || typeof u === "string" || typeof u === "boolean") return Either.right(u)
    if (typeof u === "number") {
      return Number.isFinite(u) ? Either.right(u) : this.fail(path, "is not a finite number")
    }
    if (path.length >= MAX_FILTER_DEPTH && (Array.isArray(u) || isPlainObject(u))) return this.fail(path, tooDeep)
    if (Array.isArray(u)) {
      const out: Array<JsonValue> = []
      for (let i = 0; i < u.length; i++) {
        const item = this.json(u[i], [...path, i])
        if (Either.isLeft(item)) return Either.left(item.left)
        out.push(item.right)
      }
      return Either.right(out)
    }
    if (isPlainObject(u)) {
      const entries: Array<[string, JsonValue]> = []
      for (const key of Object.keys(u)) {
        const item = this.json(u[key], [...path, key])
        if (Either.isLeft(item)) return Either.left(item.left)
        entries.push([key, item.right])
      }
      return Either.right(Object.fromEntries(entries))
    }
    return this.fail(path, `is not a JSON value (${kindOf(u)})`)
  }

  values(u: unknown, path: ReadonlyArray<PathSegment>, what: string): Parsed<ReadonlyArray<JsonValue>> {
    if (!Array.isArray(u)) return this.fail(path, `${what} must be an array of allowed values, got ${kindOf(u)}`)
    return this.json(u, path) as Parsed<ReadonlyArray<JsonValue>>
  }

  fields(u: Record<string, unknown>, path: ReadonlyArray<PathSegment>): Parsed<Fields> {
    const fields: Array<Field> = []
    for (const name of Object.keys(u)) {
      const condition = this.condition(u[name], [...path, name])
      if (Either.isLeft(condition)) return Either.left(condition.left)
      fields.push({ name, condition: condition.right })
    }
    return Either.right({ _tag: "Fields", fields })
  }

  condition(u: unknown, path: ReadonlyArray<PathSegment>): Parsed<Condition> {
    if (Array.isArray(u)) {
      return Either.map(this.values(u, path, "a field"), (values): Condition => ({ _tag: "Operators", in: values }))
    }
    if (!isPlainObject(u)) {
      return this.fail(
        path,
        `must be an array of allowed values, an operator object (in, not_in, exists) or an object of nested fields, got ${kindOf(u)}`
      )
    }
    if (path.length >= MAX_FILTER_DEPTH) return this.fail(path, tooDeep)
    const keys = Object.keys(u)
    if (keys.length === 0) {
      return this.fail(path, "an empty object sets no condition; give allowed values, operators or nested fields")
    }
    const operators = keys.filter(isOperatorKey)
    if (operators.length === 0) return this.fields(u, path)
    const other = keys.find((key) => !isOperatorKey(key))
    if (other !== undefined) {
      return this.fail(
        [...path, other],
        `is not an operator (in, not_in, exists), and an object cannot mix operators (${operators.join(", ")}) with nested field names`
      )
    }
    return this.operators(u, path)
  }

  operators(u: Record<string, unknown>, path: ReadonlyArray<PathSegment>): Parsed<Operators> {
    let result: Operators = { _tag: "Operators" }
    if (Object.hasOwn(u, "in")) {
      const values = this.values(u["in"], [...path, "in"], "in")
      if (Either.isLeft(values)) return Either.left(values.left)
      result = { ...result, in: values.right }
    }
    if (Object.hasOwn(u, "not_in")) {
      const values = this.values(u["not_in"], [...path, "not_in"], "not_in")
      if (Either.isLeft(values)) return Either.left(values.left)
      result = { ...result, notIn: values.right }
    }
    if (Object.hasOwn(u, "exists")) {
      const exists = u["exists"]
      if (typeof exists !== "boolean") return this.fail([...path, "exists"], `exists must be a boolean, got ${kindOf(exists)}`)
      result = { ...result, exists }
    }
    return Either.right(result)
  }
}

/** Parses a filter from its JSON; a malformed one is a `PayloadFilterError` naming its path. */
export const parse = (json: unknown, options?: PathOptions): Either.Either<PayloadFilter, PayloadFilterError> => {
  const parser = new Parser(options?.root ?? DEFAULT_ROOT)
  if (!isPlainObject(json)) return parser.fail([], `must be a JSON object, got ${kindOf(json)}`)
  return parser.fields(json, [])
}

/** Parses a filter, failing with the `invalid_request` error of the offending field. */
export const parseOrInvalidRequest = (json: unknown, options?: PathOptions): Either.Either<PayloadFilter, InvalidRequest> =>
  Either.mapLeft(parse(json, options), (error) => error.toInvalidRequest())

const serializeCondition = (condition: Condition): JsonValue => {
  if (condition._tag === "Fields") return serialize(condition)
  const { exists, in: allowed, notIn } = condition
  if (allowed !== undefined && notIn === undefined && exists === undefined) return allowed
  return {
    ...(allowed === undefined ? {} : { in: allowed }),
    ...(notIn === undefined ? {} : { not_in: notIn }),
    ...(exists === undefined ? {} : { exists })
  }
}

/** The canonical JSON of a filter (`in` alone becomes a bare array); `parse` reads it back. */
export const serialize = (filter: PayloadFilter): JsonObject =>
  Object.fromEntries(filter.fields.map((field) => [field.name, serializeCondition(field.condition)]))

/** Deep JSON equality of a payload value and an allowed value. */
const jsonEquals = (value: unknown, allowed: JsonValue): boolean => {
  if (allowed === null || typeof allowed !== "object") return value === allowed
  if (Array.isArray(allowed)) {
    return (
      Array.isArray(value) &&
      value.length === allowed.length &&
      allowed.every((item: JsonValue, i) => jsonEquals(value[i], item))
    )
  }
  if (!isPlainObject(value)) return false
  const keys = Object.keys(allowed)
  return (
    Object.keys(value).length === keys.length &&
    keys.every((key) => Object.hasOwn(value, key) && jsonEquals(value[key], (allowed as JsonObject)[key]!))
  )
}

/** Whether a present value, or one of its elements when it is an array, is among the allowed. */
const isListed = (value: unknown, allowed: ReadonlyArray<JsonValue>): boolean =>
  allowed.some((a) => jsonEquals(value, a)) ||
  (Array.isArray(value) && value.some((item) => allowed.some((a) => jsonEquals(item, a))))

const child = (value: unknown, name: string): unknown =>
  isPlainObject(value) && Object.hasOwn(value, name) ? value[name] : undefined

const MAX_SHOWN = 80

const show = (u: unknown): string => {
  let text: string
  try {
    text = JSON.stringify(u) ?? kindOf(u)
  } catch {
    text = kindOf(u)
  }
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN - 1)}…` : text
}

/** Walks the filter over a payload, collecting at most `limit` failure reasons. */
class Matcher {
  readonly reasons: Array<string> = []
  constructor(
    readonly root: string,
    readonly limit: number
  ) {}

  get done(): boolean {
    return this.reasons.length >= this.limit
  }

  fail(path: ReadonlyArray<PathSegment>, problem: string): void {
    this.reasons.push(`${renderPath(this.root, path)}: ${problem}`)
  }

  fields(filter: Fields, value: unknown, path: ReadonlyArray<PathSegment>): void {
    for (const field of filter.fields) {
      if (this.done) return
      this.condition(field.condition, child(value, field.name), [...path, field.name])
    }
  }

  condition(condition: Condition, value: unknown, path: ReadonlyArray<PathSegment>): void {
    if (condition._tag === "Fields") return this.fields(condition, value, path)
    const present = value !== undefined
    if (condition.exists !== undefined && condition.exists !== (present && value !== null)) {
      const found = present ? (value === null ? "is null" : `is ${show(value)}`) : "is absent"
      this.fail(path, condition.exists ? `${found}, expected a value (exists: true)` : `${found}, expected absent or null (exists: false)`)
    }
    if (condition.in !== undefined && !this.done) {
      if (!present) this.fail(path, `is absent, expected one of ${show(condition.in)}`)
      else if (!isListed(value, condition.in)) this.fail(path, `is ${show(value)}, expected one of ${show(condition.in)}`)
    }
    if (condition.notIn !== undefined && !this.done && present && isListed(value, condition.notIn)) {
      this.fail(path, `is ${show(value)}, which not_in excludes (${show(condition.notIn)})`)
    }
  }
}

/** Whether a delivery body matches the filter; an absent filter matches every body. */
export const evaluate = (filter: PayloadFilter | undefined, payload: unknown): boolean => {
  if (filter === undefined) return true
  const matcher = new Matcher(DEFAULT_ROOT, 1)
  matcher.fields(filter, payload, [])
  return matcher.reasons.length === 0
}

/** The outcome of matching, with one reason per failing condition, each naming its path. */
export interface Explanation {
  readonly matched: boolean
  readonly reasons: ReadonlyArray<string>
}

/** Matches like `evaluate` and says why not: every failing path with the value found there. */
export const explain = (filter: PayloadFilter | undefined, payload: unknown, options?: PathOptions): Explanation => {
  if (filter === undefined) return { matched: true, reasons: [] }
  const matcher = new Matcher(options?.root ?? DEFAULT_ROOT, Number.POSITIVE_INFINITY)
  matcher.fields(filter, payload, [])
  return { matched: matcher.reasons.length === 0, reasons: matcher.reasons }
}
