/**
 * Wire building blocks shared by every resource (docs/reference/api.md): timestamps, metadata, page
 * info, ownership scope, principal references, JSON values, and `decodeRequest`, which turns a
 * Schema parse failure into an `InvalidRequest` naming the offending field.
 *
 * Wire conventions decided here (see each model for its fields):
 * - Timestamps are RFC 3339 strings; they decode from any RFC 3339 form (offset or `Z`, any
 *   fraction) and always encode in UTC with milliseconds: `2026-11-22T03:17:28.123Z`.
 * - In response records, a field that is "not known yet" (a run's `started_at`, `session_id`, ...)
 *   is present with the value `null`; a key marked optional (`?`) in the API is omitted when
 *   absent. In request bodies, an optional key may be omitted or sent as `null` (both mean absent).
 * - Unknown body fields are ignored; a known field of the wrong type is an error.
 */
import { DateTime, Either, Option, ParseResult, Schema } from "effect"
import type { SchemaAST } from "effect"
import { InvalidRequest } from "./Errors.js"
import { PrincipalUid, TeamUid } from "./Ids.js"

const rfc3339Pattern =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:[Zz]|[+-](\d{2}):(\d{2}))$/

const isRfc3339 = (s: string): boolean => {
  const m = rfc3339Pattern.exec(s)
  if (m === null) return false
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number, number, number, number, number, number
  ]
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate()
  const offsetOk = m[7] === undefined || (Number(m[7]) <= 23 && Number(m[8]) <= 59)
  return month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth && hour <= 23 && minute <= 59 &&
    second <= 59 && offsetOk
}

/** An RFC 3339 date-time string (the encoded side of `Timestamp`). */
export const Rfc3339String = Schema.String.pipe(
  Schema.filter((s) => isRfc3339(s) || "must be an RFC 3339 date-time such as 2026-11-22T03:17:28.123Z", {
    description: "an RFC 3339 date-time",
    jsonSchema: { format: "date-time" }
  })
)

const minArbitraryDate = new Date("1970-01-01T00:00:00.000Z")
const maxArbitraryDate = new Date("9999-12-31T23:59:59.999Z")

/** `DateTime.Utc`, generated (for property tests) within years 1970–9999 so it prints as RFC 3339. */
const UtcFromSelf = Schema.DateTimeUtcFromSelf.annotations({
  arbitrary: () => (fc) =>
    fc.date({ min: minArbitraryDate, max: maxArbitraryDate, noInvalidDate: true }).map(DateTime.unsafeFromDate)
})

/**
 * A point in time. Wire: an RFC 3339 string, always encoded in UTC with milliseconds
 * (`2026-11-22T03:17:28.123Z`). Type: `DateTime.Utc`.
 */
export const Timestamp = Schema.transformOrFail(Rfc3339String, UtcFromSelf, {
  strict: true,
  decode: (s, _, ast) =>
    ParseResult.try({
      try: () => DateTime.unsafeMake(s),
      catch: () => new ParseResult.Type(ast, s, `${JSON.stringify(s)} is not a valid date-time`)
    }),
  encode: (dt) => ParseResult.succeed(DateTime.formatIso(dt))
}).annotations({ identifier: "Timestamp" })
export type Timestamp = typeof Timestamp.Type

/** A string that is not empty and not only whitespace. */
export const NonBlankString = Schema.String.pipe(
  Schema.filter((s) => s.trim().length > 0 || "must not be empty", { description: "a non-empty string" })
)

/**
 * A key of a caller-named map (MCP servers, env, headers): any string but `__proto__`, which a
 * JavaScript object cannot hold as a plain key (decoding would silently drop it).
 */
export const PlainKey = Schema.String.pipe(
  Schema.filter((key) => key !== "__proto__" || "must not be __proto__", { identifier: "PlainKey" })
)

/** Free-form key/value pairs attached to a resource (`{string: string}`). */
export const Metadata = Schema.Record({ key: Schema.String, value: Schema.String }).annotations({
  identifier: "Metadata"
})
export type Metadata = typeof Metadata.Type

/** Cursor pagination: `next_cursor` is present exactly when there is a next page. */
export const PageInfo = Schema.Struct({
  has_next_page: Schema.Boolean,
  next_cursor: Schema.optional(Schema.String)
}).annotations({ identifier: "PageInfo" })
export type PageInfo = typeof PageInfo.Type

/** Who owns a resource: a team (all members see it) or a user (the creator and team admins). */
export const Scope = Schema.Union(
  Schema.Struct({ type: Schema.Literal("Team"), uid: TeamUid }),
  Schema.Struct({ type: Schema.Literal("User"), uid: PrincipalUid })
).annotations({ identifier: "Scope" })
export type Scope = typeof Scope.Type

/** The kind of a principal. */
export const PrincipalType = Schema.Literal("user", "service_account")
export type PrincipalType = typeof PrincipalType.Type

/** A principal as shown on another resource (a run's `creator` and `executor`, `created_by`, ...). */
export const PrincipalRef = Schema.Struct({
  type: PrincipalType,
  uid: PrincipalUid,
  display_name: Schema.String
}).annotations({ identifier: "PrincipalRef" })
export type PrincipalRef = typeof PrincipalRef.Type

/** Any JSON value. */
export type JsonValue =
  | null
  | boolean
  | number
  | string
  | ReadonlyArray<JsonValue>
  | { readonly [key: string]: JsonValue }

/** Any JSON value (finite numbers only); used for payloads, tool input and output, event data. */
export const JsonValue: Schema.Schema<JsonValue> = Schema.Union(
  Schema.Null,
  Schema.Boolean,
  Schema.Finite,
  Schema.String,
  Schema.Array(Schema.suspend((): Schema.Schema<JsonValue> => JsonValue)),
  Schema.Record({ key: Schema.String, value: Schema.suspend((): Schema.Schema<JsonValue> => JsonValue) })
).annotations({
  identifier: "JsonValue",
  arbitrary: () => (fc) => fc.jsonValue({ maxDepth: 2 }) as never
})

/** A JSON object (string keys to JSON values). */
export const JsonObject = Schema.Record({ key: Schema.String, value: JsonValue }).annotations({
  identifier: "JsonObject"
})
export type JsonObject = typeof JsonObject.Type

/**
 * An optional key of a request body: may be omitted or `null` (both decode to absent); encodes
 * as omitted.
 */
export const optionalInput = <S extends Schema.Schema.All>(schema: S) =>
  Schema.optionalWith(schema, { exact: true, nullable: true })

const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>(
    (acc, key) =>
      typeof key === "number" ? `${acc}[${key}]` : acc === "" ? String(key) : `${acc}.${String(key)}`,
    ""
  )

/** A missing field "is required", or what its schema's `missingMessage` says (what to send). */
export const describeProblem = (issue: Pick<ParseResult.ArrayFormatterIssue, "_tag" | "message">): string =>
  issue._tag === "Missing" ? (issue.message === "is missing" ? "is required" : issue.message) : issue.message

/**
 * A field that is `null` when unknown in the model but omitted from the JSON, for clients (the
 * SDK) whose types declare it optional and not nullable; reading, an absent key or `null` is null.
 */
export const omittedWhenNull = <S extends Schema.Schema.Any>(schema: S) =>
  Schema.optionalToRequired(Schema.NullOr(schema), Schema.NullOr(Schema.typeSchema(schema)), {
    decode: (value) => Option.getOrNull(value) as Schema.Schema.Type<S> | null,
    encode: (value) => (value === null ? Option.none() : Option.some(value))
  })

/** A required field whose absence is answered with `message` (say what to send). */
export const requiredWith = <S extends Schema.Schema.Any>(schema: S, message: string) =>
  Schema.propertySignature(schema).annotations({ missingMessage: () => message })

const isJsonObject = (u: unknown): boolean => typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * Turns a parse failure of `input` into an `InvalidRequest` naming the first offending field
 * (`body` when the input as a whole is wrong).
 */
export const toInvalidRequest = (error: ParseResult.ParseError, input: unknown): InvalidRequest => {
  const first = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
  const field = first === undefined ? "" : formatPath(first.path)
  if (field !== "" && first !== undefined) return InvalidRequest.forField(field, describeProblem(first))
  if (!isJsonObject(input)) return InvalidRequest.forField("body", "must be a JSON object")
  return InvalidRequest.forField("body", first === undefined ? error.message : describeProblem(first))
}

/**
 * Decodes an untrusted request body (or query) with `schema`. Unknown fields are ignored; on
 * failure the `InvalidRequest` names the first offending field as a dotted path
 * (`config.model_id`, `metadata`, `images[0].data`).
 */
export const decodeRequest = <A, I>(schema: Schema.Schema<A, I, never>) => {
  const decode = Schema.decodeUnknownEither(schema, { errors: "first", onExcessProperty: "ignore" })
  return (input: unknown): Either.Either<A, InvalidRequest> =>
    Either.mapLeft(decode(input), (error) => toInvalidRequest(error, input))
}

/** A message annotation that replaces the inner issues of a union with one sentence. */
export const unionMessage = (message: string): SchemaAST.MessageAnnotation => () => ({ message, override: true })
