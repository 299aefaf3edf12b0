/**
 * The wire form of every error of `@agent-runs/core/domain/Errors` (docs/reference/errors.md): an
 * `application/problem+json` body `{type, title, status, error, error_code, retryable, detail?,
 * trace_id?}` plus a few extension members, with the HTTP status that belongs to each error.
 *
 * Each schema here is a transformation whose decoded side is the core error class itself, so
 * handlers fail with core errors (`new ResourceNotFound(...)`) and the server encodes them into
 * problem bodies, while a typed client decodes problem bodies back into the same core classes.
 *
 * Extension members (snake_case, beside the standard fields): `field` (InvalidRequest),
 * `feature` (FeatureNotAvailable), `resource` and `id` (ResourceNotFound), `retry_after_seconds`
 * (RateLimited), `limit_bytes` (PayloadTooLarge). The `x-should-retry` and `Retry-After` headers
 * are not part of the body: the server adds them from `retryable` and `retry_after_seconds`.
 */
import { HttpApiSchema } from "@effect/platform"
import { Errors } from "@agent-runs/core"
import { Schema } from "effect"
import { isJson, objectEntries, type Json } from "./internal/Json.js"

/** The media type of every error body. */
export const PROBLEM_CONTENT_TYPE = "application/problem+json"

/** The HTTP status of each `error_code`. */
export const statusOf = {
  invalid_request: 400,
  authentication_required: 401,
  not_authorized: 403,
  feature_not_available: 403,
  resource_not_found: 404,
  conflict: 409,
  operation_not_supported: 422,
  rate_limited: 429,
  payload_too_large: 413,
  method_not_allowed: 405,
  unsupported_media_type: 415,
  internal_error: 500,
  resource_unavailable: 503
} as const satisfies Record<Errors.HttpErrorCode, number>

/** The `title` of each `error_code`. */
export const titleOf = {
  invalid_request: "Invalid request",
  authentication_required: "Authentication required",
  not_authorized: "Not authorized",
  feature_not_available: "Feature not available",
  resource_not_found: "Resource not found",
  conflict: "Conflict",
  operation_not_supported: "Operation not supported",
  rate_limited: "Rate limited",
  payload_too_large: "Payload too large",
  method_not_allowed: "Method not allowed",
  unsupported_media_type: "Unsupported media type",
  internal_error: "Internal error",
  resource_unavailable: "Resource unavailable"
} as const satisfies Record<Errors.HttpErrorCode, string>

/** The `type` URI of an `error_code`: `/docs/errors#<code>`. */
export const problemType = (code: Errors.HttpErrorCode): string => `/docs/errors#${code}`

type Extensions = Record<string, Schema.Schema.All | Schema.PropertySignature.All>

/**
 * The problem schema of one core error class: `tag` is the class's `_tag`, `extensions` maps
 * each extension member (wire name) to its schema, and `renames` maps wire names to the class's
 * field names where they differ.
 */
const problem = <E extends Schema.Schema.AnyNoContext, X extends Extensions>(
  errorClass: E,
  options: {
    readonly tag: string
    readonly code: Errors.HttpErrorCode
    readonly description: string
    readonly extensions: X
    readonly renames?: Readonly<Record<string, string>>
  }
) => {
  const { code, tag } = options
  const status = statusOf[code]
  const title = titleOf[code]
  const renames = options.renames ?? {}
  const wireKeys = Object.keys(options.extensions)
  const wire = Schema.Struct({
    type: Schema.String,
    title: Schema.String,
    status: Schema.Literal(status),
    error: Schema.String.annotations({ description: "what went wrong; validation errors start with the field" }),
    error_code: Schema.Literal(code),
    retryable: Schema.Boolean,
    detail: Schema.optional(Schema.String),
    trace_id: Schema.optional(Schema.String),
    ...options.extensions
  }).annotations({ identifier: `${tag}Problem`, description: options.description })
  return Schema.transform(wire, errorClass, {
    strict: false,
    decode: (body: Record<string, unknown>) => {
      const out: Record<string, unknown> = { _tag: tag, message: body["error"], retryable: body["retryable"] }
      for (const key of wireKeys) {
        if (body[key] !== undefined) out[renames[key] ?? key] = body[key]
      }
      return out
    },
    encode: (error: Record<string, unknown>) => {
      const out: Record<string, unknown> = {
        type: problemType(code),
        title,
        status,
        error: error["message"],
        error_code: code,
        retryable: error["retryable"]
      }
      for (const key of wireKeys) {
        const value = error[renames[key] ?? key]
        if (value !== undefined) out[key] = value
      }
      return out
    }
  }).annotations({
    ...HttpApiSchema.annotations({ status, description: options.description }),
    [HttpApiSchema.AnnotationEncoding]: { kind: "Json", contentType: PROBLEM_CONTENT_TYPE }
  })
}

const invalidRequestDescription =
  "invalid_request: malformed or missing input; `error` and `field` name the offending field"

/** 400 `invalid_request`: malformed or missing input; `field` names the offending field. */
export const InvalidRequest = problem(Errors.InvalidRequest, {
  tag: "InvalidRequest",
  code: "invalid_request",
  description: invalidRequestDescription,
  extensions: { field: Schema.optional(Schema.String) }
})

/** 401 `authentication_required`: no bearer token, or one that is not valid. */
export const AuthenticationRequired = problem(Errors.AuthenticationRequired, {
  tag: "AuthenticationRequired",
  code: "authentication_required",
  description: "authentication_required: missing or invalid bearer token",
  extensions: {}
})

/** 403 `not_authorized`: a valid token without the permission (role, team, instance admin). */
export const NotAuthorized = problem(Errors.NotAuthorized, {
  tag: "NotAuthorized",
  code: "not_authorized",
  description: "not_authorized: the caller may see the resource but not do this, or is not a member of the team",
  extensions: {}
})

/** 403 `feature_not_available`: the team does not have the feature. */
export const FeatureNotAvailable = problem(Errors.FeatureNotAvailable, {
  tag: "FeatureNotAvailable",
  code: "feature_not_available",
  description: "feature_not_available: the team feature (metadata_filtering, scheduled_agents) is off",
  extensions: { feature: Schema.String }
})

/** 404 `resource_not_found`: unknown, or hidden from the caller. */
export const ResourceNotFound = problem(Errors.ResourceNotFound, {
  tag: "ResourceNotFound",
  code: "resource_not_found",
  description: "resource_not_found: unknown, or not visible to the caller (existence is never leaked)",
  extensions: { resource: Schema.String, id: Schema.optional(Schema.String) }
})

/** 409 `conflict`: the resource's state forbids the operation now. */
export const Conflict = problem(Errors.Conflict, {
  tag: "Conflict",
  code: "conflict",
  description: "conflict: the resource's state forbids this now (e.g. cancel of a PENDING run, retryable)",
  extensions: {}
})

/** 422 `operation_not_supported`. */
export const OperationNotSupported = problem(Errors.OperationNotSupported, {
  tag: "OperationNotSupported",
  code: "operation_not_supported",
  description: "operation_not_supported: not possible for this kind of run or conversation",
  extensions: {}
})

/** 429 `rate_limited`; the server also sends `Retry-After: retry_after_seconds`. */
export const RateLimited = problem(Errors.RateLimited, {
  tag: "RateLimited",
  code: "rate_limited",
  description: "rate_limited: over a rate limit; retry after the Retry-After header's seconds",
  extensions: { retry_after_seconds: Schema.Int },
  renames: { retry_after_seconds: "retryAfterSeconds" }
})

/** 413 `payload_too_large`. */
export const PayloadTooLarge = problem(Errors.PayloadTooLarge, {
  tag: "PayloadTooLarge",
  code: "payload_too_large",
  description: "payload_too_large: the request body is over its limit",
  extensions: { limit_bytes: Schema.Int },
  renames: { limit_bytes: "limitBytes" }
})

/** 405 `method_not_allowed`: `allow` as the `Allow` header. */
export const MethodNotAllowed = problem(Errors.MethodNotAllowed, {
  tag: "MethodNotAllowed",
  code: "method_not_allowed",
  description: "method_not_allowed: the path answers other methods only; `allow` (and the Allow header) lists them",
  extensions: { allow: Schema.Array(Schema.String) }
})

/** 415 `unsupported_media_type`: `expected` names the media type the endpoint reads. */
export const UnsupportedMediaType = problem(Errors.UnsupportedMediaType, {
  tag: "UnsupportedMediaType",
  code: "unsupported_media_type",
  description: "unsupported_media_type: the body's Content-Type is not the one the endpoint reads (`expected`)",
  extensions: { expected: Schema.String }
})

/** 500 `internal_error`: never carries a stack trace. */
export const InternalError = problem(Errors.InternalError, {
  tag: "InternalError",
  code: "internal_error",
  description: "internal_error: the service failed (retryable)",
  extensions: {}
})

/** 503 `resource_unavailable`: storage or executors unavailable for now. */
export const ResourceUnavailable = problem(Errors.ResourceUnavailable, {
  tag: "ResourceUnavailable",
  code: "resource_unavailable",
  description: "resource_unavailable: a dependency is unavailable for now (retryable)",
  extensions: {}
})

const decodeErrorRef = "#/components/schemas/HttpApiDecodeError"
const decodeErrorSchemas = ["HttpApiDecodeError", "Issue", "PropertyKey"]

/**
 * The schema without @effect/platform's own decode error among its `anyOf` members, and without
 * repeated members (a problem declared by the API and by a middleware); undefined when unchanged.
 */
const withoutDecodeError = (schema: Json): Json | undefined => {
  const members = schema["anyOf"]
  if (!Array.isArray(members)) return undefined
  const seen = new Set<string>()
  const kept = members.filter((member) => {
    if (isJson(member) && member["$ref"] === decodeErrorRef) return false
    const key = JSON.stringify(member)
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
  if (kept.length === members.length) return undefined
  return kept.length === 1 && isJson(kept[0]) ? kept[0] : { ...schema, anyOf: kept }
}

/**
 * Rewrites the error responses of an OpenAPI document to what the server sends: every 4xx and 5xx
 * body is `application/problem+json`, and @effect/platform's own request decoding error (which the
 * server answers as an `invalid_request` problem naming the field) is not listed.
 */
export const documentProblemResponses = (spec: Json): Json => {
  for (const [, pathItem] of objectEntries(spec["paths"])) {
    for (const [, operation] of objectEntries(pathItem)) {
      for (const [status, response] of objectEntries(operation["responses"])) {
        const media = objectEntries(response["content"])[0]?.[1]
        if (Number(status) < 400 || media === undefined || !isJson(media["schema"])) continue
        const cleaned = withoutDecodeError(media["schema"])
        if (cleaned !== undefined && status === "400") response["description"] = invalidRequestDescription
        response["content"] = { [PROBLEM_CONTENT_TYPE]: { schema: cleaned ?? media["schema"] } }
      }
    }
  }
  const components = spec["components"]
  if (isJson(components) && isJson(components["schemas"])) {
    for (const name of decodeErrorSchemas) delete components["schemas"][name]
  }
  return spec
}
