/**
 * The errors of the Promise client, by HTTP status. An error answer's body is the API's
 * `application/problem+json` (`{type, title, status, error, error_code, retryable, …}`): `message`
 * is its `error` (or `detail`), `errorCode` its `error_code`, `body` the whole parsed body.
 *
 * | class | when |
 * |---|---|
 * | `BadRequestError` | 400 (also input the client refuses before sending: `status` undefined) |
 * | `AuthenticationError` | 401 |
 * | `PermissionDeniedError` | 403 |
 * | `NotFoundError` | 404 |
 * | `ConflictError` | 409 |
 * | `UnprocessableEntityError` | 422 |
 * | `RateLimitError` | 429 (after the retries) |
 * | `InternalServerError` | 500 and above (503 after the retries) |
 * | `AgentRunsError` | any other status (413, …), or an answer the client could not read |
 * | `ConnectionError` | no answer (refused, reset, DNS), after the retries |
 * | `TimeoutError` (a `ConnectionError`) | no (whole) answer within the timeout |
 */

export interface AgentRunsErrorOptions {
  readonly message: string
  readonly status?: number | undefined
  readonly errorCode?: string | undefined
  readonly body?: unknown
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly cause?: unknown
}

/** Every error of the client. */
export class AgentRunsError extends Error {
  override readonly name: string = "AgentRunsError"
  /** The HTTP status; undefined when there was no answer. */
  readonly status: number | undefined
  /** The problem's `error_code` (`resource_not_found`, …), when the answer had one. */
  readonly errorCode: string | undefined
  /** The parsed body of the answer (the problem), or its text when it was not JSON. */
  readonly body: unknown
  /** The answer's headers. */
  readonly headers: Readonly<Record<string, string>> | undefined

  constructor(options: AgentRunsErrorOptions) {
    super(options.message, options.cause === undefined ? undefined : { cause: options.cause })
    this.status = options.status
    this.errorCode = options.errorCode
    this.body = options.body
    this.headers = options.headers
  }

  /** Whether the server said trying again may work (the problem's `retryable`). */
  get retryable(): boolean {
    const body = this.body as { readonly retryable?: unknown } | undefined
    return typeof body === "object" && body !== null && body.retryable === true
  }
}

/** 400 `invalid_request`. */
export class BadRequestError extends AgentRunsError {
  override readonly name: string = "BadRequestError"
}

/** 401 `authentication_required`: no token, or one that is not valid (revoked, expired). */
export class AuthenticationError extends AgentRunsError {
  override readonly name: string = "AuthenticationError"
}

/** 403 `not_authorized` or `feature_not_available`. */
export class PermissionDeniedError extends AgentRunsError {
  override readonly name: string = "PermissionDeniedError"
}

/** 404 `resource_not_found`. */
export class NotFoundError extends AgentRunsError {
  override readonly name: string = "NotFoundError"
}

/** 409 `conflict`. */
export class ConflictError extends AgentRunsError {
  override readonly name: string = "ConflictError"
}

/** 422 `operation_not_supported`. */
export class UnprocessableEntityError extends AgentRunsError {
  override readonly name: string = "UnprocessableEntityError"
}

/** 429 `rate_limited`. */
export class RateLimitError extends AgentRunsError {
  override readonly name: string = "RateLimitError"

  /** The wait the server asked for (`Retry-After`, or the problem's `retry_after_seconds`), in seconds. */
  get retryAfterSeconds(): number | undefined {
    const header = Number(this.headers?.["retry-after"])
    if (Number.isFinite(header) && this.headers?.["retry-after"]?.trim() !== "") return header
    const told = (this.body as { readonly retry_after_seconds?: unknown } | undefined)?.retry_after_seconds
    return typeof told === "number" ? told : undefined
  }
}

/** 500 and above. */
export class InternalServerError extends AgentRunsError {
  override readonly name: string = "InternalServerError"
}

/** No answer: the connection was refused or dropped, or the name did not resolve. */
export class ConnectionError extends AgentRunsError {
  override readonly name: string = "ConnectionError"
}

/** No (whole) answer within the timeout. */
export class TimeoutError extends ConnectionError {
  override readonly name: string = "TimeoutError"
}

/** The error class of a status. */
export const errorClassOf = (status: number): typeof AgentRunsError => {
  switch (status) {
    case 400:
      return BadRequestError
    case 401:
      return AuthenticationError
    case 403:
      return PermissionDeniedError
    case 404:
      return NotFoundError
    case 409:
      return ConflictError
    case 422:
      return UnprocessableEntityError
    case 429:
      return RateLimitError
    default:
      return status >= 500 ? InternalServerError : AgentRunsError
  }
}

/** The message of a problem body: its `error`, else `detail`, else `title`. */
const problemMessage = (body: unknown): string | undefined => {
  if (typeof body !== "object" || body === null) return undefined
  const problem = body as Record<string, unknown>
  for (const key of ["error", "detail", "title"]) {
    const value = problem[key]
    if (typeof value === "string" && value !== "") return value
  }
  return undefined
}

/** The error of an error answer: its class by status, its message and code from the problem body. */
export const fromAnswer = (answer: {
  readonly status: number
  readonly body: unknown
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly message?: string | undefined
  readonly cause?: unknown
}): AgentRunsError => {
  const ErrorClass = errorClassOf(answer.status)
  const code = typeof answer.body === "object" && answer.body !== null
    ? (answer.body as { readonly error_code?: unknown }).error_code
    : undefined
  return new ErrorClass({
    message: problemMessage(answer.body) ?? answer.message ?? `the server answered ${answer.status}`,
    status: answer.status,
    errorCode: typeof code === "string" ? code : undefined,
    body: answer.body,
    headers: answer.headers,
    cause: answer.cause
  })
}
