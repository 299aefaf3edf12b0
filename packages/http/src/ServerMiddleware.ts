/**
 * What the server adds around every response (docs/reference/errors.md):
 * - `x-should-retry: true` on retryable problems and `x-should-retry: false` on the others (so
 *   clients that retry 409 and 5xx by default, like the Stainless-generated SDKs, follow the
 *   server's judgement), and `Retry-After` (seconds) on a 429, and on a 503 (5 s). Except the 409
 *   of a cancel (a PENDING run): its body says `retryable: true` as the specification demands,
 *   but its header says `false`, since a run waits PENDING for capacity far longer than a
 *   client's retries last (docs/http.md, differences).
 * - The body limit: a declared `Content-Length` over the limit is a 413 `payload_too_large`
 *   before anything is read; a chunked body is cut off at the limit while it is read (413 too).
 * - A body whose `Content-Type` is not JSON (`application/json`, `application/*+json`) is a 415
 *   `unsupported_media_type` naming `application/json`; a body without one is read as JSON. A body
 *   that is not JSON is a 400 `invalid_request` naming `body`, and so is one nesting arrays and
 *   objects deeper than `MAX_BODY_DEPTH` (checked on the text, before anything parses it).
 * - A run, schedule or conversation path with its id left empty is a 400 naming the id (a
 *   "missing id"); a path that exists under other methods only is a 405 `method_not_allowed` with
 *   `Allow`; any other unknown path is a 404 `resource_not_found` problem; a defect anywhere is a
 *   500 `internal_error` problem (logged with its cause; the body never carries a stack trace).
 * - The webhook ingress (`ownBodyLimit`) reads any media type and checks its bodies itself.
 * - Until the service has started (`startupGate`), a request is answered 503
 *   `resource_unavailable` "the service is starting" with `Retry-After: 5`, except on the paths
 *   the app serves while starting (the probes, the pages that read nothing stored). There is no
 *   problem type of its own: a client that retries a 503 retries this one (`retryable: true`).
 */
import { HttpIncomingMessage, HttpServerError, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import type { HttpApp } from "@effect/platform"
import { Errors, Harness } from "@agent-runs/core"
import { Cause, Effect, Option, Schema } from "effect"
import * as Problems from "@agent-runs/api/Problems"

/** The default limit of a request body, in bytes (1 MiB). */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024

/** The deepest nesting of arrays and objects a request body may have. */
export const MAX_BODY_DEPTH = 100

/** The media types read as JSON: `application/json` and `application/<anything>+json`, with parameters. */
const JSON_MEDIA_TYPE = /^application\/(?:[\w.-]+\+)?json\s*(?:;|$)/i

const problemEncoders = {
  InvalidRequest: Schema.encodeSync(Problems.InvalidRequest),
  AuthenticationRequired: Schema.encodeSync(Problems.AuthenticationRequired),
  NotAuthorized: Schema.encodeSync(Problems.NotAuthorized),
  Conflict: Schema.encodeSync(Problems.Conflict),
  ResourceNotFound: Schema.encodeSync(Problems.ResourceNotFound),
  RateLimited: Schema.encodeSync(Problems.RateLimited),
  PayloadTooLarge: Schema.encodeSync(Problems.PayloadTooLarge),
  MethodNotAllowed: Schema.encodeSync(Problems.MethodNotAllowed),
  UnsupportedMediaType: Schema.encodeSync(Problems.UnsupportedMediaType),
  InternalError: Schema.encodeSync(Problems.InternalError),
  ResourceUnavailable: Schema.encodeSync(Problems.ResourceUnavailable)
}

/** A problem response for one of the errors the server itself raises. */
export const problemResponse = (
  error:
    | Errors.InvalidRequest
    | Errors.AuthenticationRequired
    | Errors.NotAuthorized
    | Errors.Conflict
    | Errors.ResourceNotFound
    | Errors.RateLimited
    | Errors.PayloadTooLarge
    | Errors.MethodNotAllowed
    | Errors.UnsupportedMediaType
    | Errors.InternalError
    | Errors.ResourceUnavailable
): HttpServerResponse.HttpServerResponse => {
  const body = (problemEncoders[error._tag] as (e: typeof error) => unknown)(error)
  return HttpServerResponse.unsafeJson(body, {
    status: Problems.statusOf[error.errorCode],
    contentType: Problems.PROBLEM_CONTENT_TYPE
  })
}

const decoder = new TextDecoder()

/** A run's cancel (its 409, a PENDING run, is final for clients: see withRetryHeaders). */
const CANCEL_PATH = /\/agent\/runs\/[^/]+\/cancel\/?$/

/** How long a client is told to wait after a 503 (storage unavailable, a full disk), in seconds. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5

/**
 * Adds `x-should-retry` (and `Retry-After` on a 429) from a problem body's `retryable` and
 * `retry_after_seconds`; a 503 without them says `Retry-After: 5`.
 */
const withRetryHeaders = (
  response: HttpServerResponse.HttpServerResponse,
  basePath = "",
  finalConflict = false
): HttpServerResponse.HttpServerResponse => {
  if (response.status < 400 || response.body._tag !== "Uint8Array") return response
  if (response.body.contentType !== Problems.PROBLEM_CONTENT_TYPE) return response
  let problem: unknown
  try {
    problem = JSON.parse(decoder.decode(response.body.body))
  } catch {
    return response
  }
  if (typeof problem !== "object" || problem === null) return response
  const type = (problem as { type?: unknown }).type
  if (basePath !== "" && typeof type === "string" && type.startsWith("/")) {
    // Under a mount prefix, `type` names the errors page there.
    response = HttpServerResponse.unsafeJson({ ...problem, type: `${basePath}${type}` }, {
      status: response.status,
      headers: response.headers,
      contentType: Problems.PROBLEM_CONTENT_TYPE
    })
  }
  const retryable = (problem as { retryable?: unknown }).retryable === true && !(finalConflict && response.status === 409)
  const told = (problem as { retry_after_seconds?: unknown }).retry_after_seconds
  const retryAfter = typeof told === "number" ? told : response.status === 503 ? UNAVAILABLE_RETRY_AFTER_SECONDS : undefined
  const withRetry = HttpServerResponse.setHeader(response, "x-should-retry", retryable ? "true" : "false")
  return typeof retryAfter === "number" ? HttpServerResponse.setHeader(withRetry, "retry-after", String(retryAfter)) : withRetry
}

/** What a request is told while the service starts (and `/readyz` says then). */
export const STARTING_MESSAGE = "the service is starting"

/**
 * Answers 503 until the service has `started`, except on the paths `servedWhileStarting` names;
 * once started, a request costs one read of the flag.
 */
export const startupGate = (options: {
  readonly started: Effect.Effect<boolean>
  /** The paths answered while starting (without the mount prefix and the query). */
  readonly servedWhileStarting: (path: string) => boolean
  /** The mount prefix: the problem's `type` link is given it. */
  readonly basePath?: string
}) => {
  const starting = withRetryHeaders(
    problemResponse(new Errors.ResourceUnavailable({ message: `${STARTING_MESSAGE}; try again in a few seconds` })),
    options.basePath
  )
  return <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R | HttpServerRequest.HttpServerRequest> =>
    Effect.flatMap(options.started, (started) =>
      started
        ? app
        : Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
          options.servedWhileStarting(request.url.split("?")[0] ?? "") ? app : Effect.succeed(starting)))
}

const tooLarge = (limit: number) =>
  problemResponse(
    new Errors.PayloadTooLarge({ message: `body: the request body is over ${limit} bytes`, limitBytes: limit })
  )

/**
 * The request-body failure behind a cause, if any: the router dies with it when a body cannot be
 * read; reading the text here fails with it.
 */
const bodyFailure = (cause: Cause.Cause<unknown>): HttpServerError.RequestError | undefined => {
  for (const reason of [...Cause.failures(cause), ...Cause.defects(cause)]) {
    if (HttpServerError.isServerError(reason) && reason._tag === "RequestError") return reason
  }
  return undefined
}

const isBodyTooLarge = (error: HttpServerError.RequestError): boolean =>
  error.cause instanceof Error && error.cause.message === "maxBytes exceeded"

/** The id parameter a path leaves empty (`/api/v1/agent/runs//cancel`, `/api/v1/agent/conversations/`), if any. */
const MISSING_ID: ReadonlyArray<readonly [RegExp, string]> = [
  [/^\/api\/v1\/agent\/runs\/(\/|$)/, "runId"],
  [/^\/api\/v1\/agent\/schedules\/(\/|$)/, "scheduleId"],
  [/^\/api\/v1\/agent\/conversations\/(\/|$)/, "conversation_id"]
]

const missingIdParameter = (url: string): string | undefined => {
  const path = url.split("?")[0] ?? ""
  return MISSING_ID.find(([pattern]) => pattern.test(path))?.[1]
}

/** What the server middleware is told. */
interface ServerMiddlewareOptions {
  readonly maxBodyBytes: number
  /** Paths that enforce their own body limit, in their own order of checks (the webhook ingress). */
  readonly ownBodyLimit?: (path: string) => boolean
  /** The methods a path answers (RouteMethods.ts), for 405 and `Allow`. */
  readonly allowedMethods?: (path: string) => ReadonlyArray<string>
  /** The mount prefix: problem `type` links are given it. */
  readonly basePath?: string
}

/** The answer to a request the app failed: unknown paths, unreadable bodies, defects. */
const failureResponse = (options: ServerMiddlewareOptions, request: HttpServerRequest.HttpServerRequest) =>
  (cause: Cause.Cause<unknown>) =>
    Effect.gen(function*() {
      const failure = Cause.failureOption(cause)
      if (Option.isSome(failure) && HttpServerError.isServerError(failure.value) && failure.value._tag === "RouteNotFound") {
        return notFoundResponse(options, request)
      }
      const unreadable = bodyFailure(cause)
      if (unreadable !== undefined) {
        return isBodyTooLarge(unreadable)
          ? tooLarge(options.maxBodyBytes)
          : problemResponse(Errors.InvalidRequest.forField("body", "must be valid JSON"))
      }
      if (Cause.isInterruptedOnly(cause)) return yield* Effect.interrupt
      yield* Effect.logError("request failed", cause)
      return problemResponse(new Errors.InternalError({ message: "internal error; try again" }))
    })

/** A path no route matches: a missing id (400), a method the path does not answer (405), else 404. */
const notFoundResponse = (options: ServerMiddlewareOptions, request: HttpServerRequest.HttpServerRequest) => {
  const missing = missingIdParameter(request.url)
  if (missing !== undefined) return problemResponse(Errors.InvalidRequest.forField(missing, "is required"))
  const path = request.url.split("?")[0] ?? ""
  const allow = options.allowedMethods?.(path) ?? []
  if (allow.length > 0) {
    return HttpServerResponse.setHeader(
      problemResponse(new Errors.MethodNotAllowed({ message: `${request.method} is not allowed on ${path}; use ${allow.join(", ")}`, allow })),
      "allow",
      allow.join(", ")
    )
  }
  return problemResponse(new Errors.ResourceNotFound({ message: `no such endpoint: ${request.method} ${path}`, resource: "endpoint" }))
}

/**
 * The server middleware: body limit, problem answers for unreadable bodies, unknown paths and
 * defects, and the retry headers of every problem. A GET or HEAD without a declared body goes
 * straight to the app; any other request is read once under the limit and checked for depth
 * first (the app parses the same, cached, text).
 */
export const serverMiddleware = (options: ServerMiddlewareOptions) =>
<E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<never, R | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const declared = Number(request.headers["content-length"] ?? "0")
    const own = options.ownBodyLimit?.(request.url) === true
    const basePath = options.basePath ?? ""
    if (Number.isFinite(declared) && declared > options.maxBodyBytes && !own) {
      return Effect.succeed(withRetryHeaders(tooLarge(options.maxBodyBytes), basePath))
    }
    // A body may come without either header (HTTP/2 sends none of `transfer-encoding`): only a
    // GET or HEAD is taken to have none, and skips the body's read and limit.
    const hasBody = declared > 0 || request.headers["transfer-encoding"] !== undefined ||
      (request.method !== "GET" && request.method !== "HEAD")
    const contentType = request.headers["content-type"]
    if (hasBody && !own && contentType !== undefined && !JSON_MEDIA_TYPE.test(contentType)) {
      return Effect.succeed(withRetryHeaders(problemResponse(
        new Errors.UnsupportedMediaType({
          message: `body: sent as ${contentType.split(";")[0]!.trim()}; send JSON with Content-Type: application/json`,
          expected: "application/json"
        })
      ), basePath))
    }
    const handled = !hasBody
      ? app
      : own
      ? HttpIncomingMessage.withMaxBodySize(app, Option.some(options.maxBodyBytes))
      : HttpIncomingMessage.withMaxBodySize(
        Effect.flatMap(request.text, (text) =>
          Harness.nestsDeeperThan(text, MAX_BODY_DEPTH)
            ? Effect.succeed(problemResponse(Errors.InvalidRequest.forField("body", `nests arrays and objects deeper than ${MAX_BODY_DEPTH} levels`)))
            : app),
        Option.some(options.maxBodyBytes)
      )
    const finalConflict = request.method === "POST" && CANCEL_PATH.test(request.url.split("?")[0] ?? "")
    return Effect.map(
      Effect.catchAllCause(handled, failureResponse(options, request)),
      (response) => withRetryHeaders(response, basePath, finalConflict)
    )
  })
