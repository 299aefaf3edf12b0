/**
 * The errors that cross the wire: one tagged error per `error_code` (docs/reference/errors.md), each carrying
 * `retryable`. The HTTP status of each belongs to packages/http; here they are domain facts only.
 * Validation errors name the offending field in `field` (and in the message).
 */
import { Schema } from "effect"

/** Every `error_code` a response body may carry. */
export const HttpErrorCode = Schema.Literal(
  "invalid_request",
  "authentication_required",
  "not_authorized",
  "feature_not_available",
  "resource_not_found",
  "conflict",
  "operation_not_supported",
  "rate_limited",
  "payload_too_large",
  "method_not_allowed",
  "unsupported_media_type",
  "internal_error",
  "resource_unavailable"
)
export type HttpErrorCode = typeof HttpErrorCode.Type

/** Error codes that appear in a run's `status_message` (the HTTP ones plus the run-only ones). */
export const RunErrorCode = Schema.Literal(
  ...HttpErrorCode.literals,
  "environment_setup_failed",
  "budget_exceeded",
  "agent_failed",
  "integration_not_configured",
  "max_runtime_exceeded"
)
export type RunErrorCode = typeof RunErrorCode.Type

const retryable = (byDefault: boolean) => Schema.optionalWith(Schema.Boolean, { default: () => byDefault })

/** 400: malformed or missing input. `field` names the offending field or parameter. */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", {
  message: Schema.String,
  field: Schema.optional(Schema.String),
  retryable: retryable(false)
}) {
  readonly errorCode = "invalid_request" as const
  /** A validation failure of one named field: the message always names it. */
  static forField(field: string, problem: string): InvalidRequest {
    return new InvalidRequest({ field, message: `${field}: ${problem}` })
  }
}

/** 401: no credential, or one that is not valid. */
export class AuthenticationRequired extends Schema.TaggedError<AuthenticationRequired>()("AuthenticationRequired", {
  message: Schema.String,
  retryable: retryable(false)
}) {
  readonly errorCode = "authentication_required" as const
}

/** 403: a valid credential without the permission. */
export class NotAuthorized extends Schema.TaggedError<NotAuthorized>()("NotAuthorized", {
  message: Schema.String,
  retryable: retryable(false)
}) {
  readonly errorCode = "not_authorized" as const
}

/** 403: the team does not have the feature (metadata filtering, scheduled agents). */
export class FeatureNotAvailable extends Schema.TaggedError<FeatureNotAvailable>()("FeatureNotAvailable", {
  message: Schema.String,
  feature: Schema.String,
  retryable: retryable(false)
}) {
  readonly errorCode = "feature_not_available" as const
}

/** 404: unknown, or hidden from the caller (existence never leaks). */
export class ResourceNotFound extends Schema.TaggedError<ResourceNotFound>()("ResourceNotFound", {
  message: Schema.String,
  resource: Schema.String,
  id: Schema.optional(Schema.String),
  retryable: retryable(false)
}) {
  readonly errorCode = "resource_not_found" as const
  static of(resource: string, id?: string): ResourceNotFound {
    return new ResourceNotFound({
      resource,
      ...(id === undefined ? {} : { id }),
      message: id === undefined ? `${resource} not found` : `${resource} ${id} not found`
    })
  }
}

/** 409: the resource is in a state that forbids the operation now. */
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", {
  message: Schema.String,
  retryable: retryable(false)
}) {
  readonly errorCode = "conflict" as const
}

/** 422: the operation is not supported for this kind of resource. */
export class OperationNotSupported extends Schema.TaggedError<OperationNotSupported>()("OperationNotSupported", {
  message: Schema.String,
  retryable: retryable(false)
}) {
  readonly errorCode = "operation_not_supported" as const
}

/** 429: over a rate limit; `retryAfterSeconds` becomes the `Retry-After` header. */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  message: Schema.String,
  retryAfterSeconds: Schema.Int.pipe(Schema.positive()),
  retryable: retryable(true)
}) {
  readonly errorCode = "rate_limited" as const
}

/** 413: a body over its limit. */
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", {
  message: Schema.String,
  limitBytes: Schema.Int,
  retryable: retryable(false)
}) {
  readonly errorCode = "payload_too_large" as const
}

/** 405: the path exists, not under this method; `allow` lists the methods it answers (the `Allow` header). */
export class MethodNotAllowed extends Schema.TaggedError<MethodNotAllowed>()("MethodNotAllowed", {
  message: Schema.String,
  allow: Schema.Array(Schema.String),
  retryable: retryable(false)
}) {
  readonly errorCode = "method_not_allowed" as const
}

/** 415: a body in a media type the endpoint does not read; `expected` names the one it does. */
export class UnsupportedMediaType extends Schema.TaggedError<UnsupportedMediaType>()("UnsupportedMediaType", {
  message: Schema.String,
  expected: Schema.String,
  retryable: retryable(false)
}) {
  readonly errorCode = "unsupported_media_type" as const
}

/** 500: the service failed; the message never carries a stack trace. */
export class InternalError extends Schema.TaggedError<InternalError>()("InternalError", {
  message: Schema.String,
  retryable: retryable(true)
}) {
  readonly errorCode = "internal_error" as const
}

/** 503: a dependency (storage, executors) is unavailable for now. */
export class ResourceUnavailable extends Schema.TaggedError<ResourceUnavailable>()("ResourceUnavailable", {
  message: Schema.String,
  retryable: retryable(true)
}) {
  readonly errorCode = "resource_unavailable" as const
}

/** Every error that may reach a caller. */
export const ApiError = Schema.Union(
  InvalidRequest,
  AuthenticationRequired,
  NotAuthorized,
  FeatureNotAvailable,
  ResourceNotFound,
  Conflict,
  OperationNotSupported,
  RateLimited,
  PayloadTooLarge,
  MethodNotAllowed,
  UnsupportedMediaType,
  InternalError,
  ResourceUnavailable
)
export type ApiError = typeof ApiError.Type
