/**
 * Request decoding failures as contract errors. @effect/platform answers a path, query, header or
 * body that does not match its schema with its own `HttpApiDecodeError` body; this API-level
 * middleware answers them instead as a 400 `invalid_request` problem whose `error` (and `field`)
 * name the offending field as a dotted path (`runId`, `config.model_id`, `images[0].data`), as
 * core's `decodeRequest` does. Provide `DecodeErrorsAsProblems` beside `HttpApiBuilder.api(Api)`.
 */
import { HttpApiBuilder, HttpApiError, HttpServerResponse } from "@effect/platform"
import { Errors } from "@agent-runs/core"
import { describeProblem } from "@agent-runs/core/domain/Common"
import { Cause, Effect, Option, Schema } from "effect"
import * as Problems from "@agent-runs/api/Problems"

const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>(
    (acc, key) => (typeof key === "number" ? `${acc}[${key}]` : acc === "" ? String(key) : `${acc}.${String(key)}`),
    ""
  )

/** The `InvalidRequest` for a decoding failure: its first issue, named by its path (`body` at the top). */
export const fromDecodeError = (error: HttpApiError.HttpApiDecodeError): Errors.InvalidRequest => {
  const issue = error.issues[0]
  if (issue === undefined) return Errors.InvalidRequest.forField("body", error.message)
  const field = formatPath(issue.path)
  const problem = describeProblem(issue)
  return Errors.InvalidRequest.forField(field === "" ? "body" : field, problem)
}

const encodeInvalidRequest = Schema.encodeSync(Problems.InvalidRequest)

/** Answers every `HttpApiDecodeError` as a 400 `invalid_request` problem. */
export const DecodeErrorsAsProblems = HttpApiBuilder.middleware((app) =>
  Effect.catchAllCause(app, (cause) => {
    const failure = Cause.failureOption(cause as Cause.Cause<unknown>)
    if (Option.isSome(failure) && failure.value instanceof HttpApiError.HttpApiDecodeError) {
      return Effect.succeed(
        HttpServerResponse.unsafeJson(encodeInvalidRequest(fromDecodeError(failure.value)), {
          status: Problems.statusOf.invalid_request,
          contentType: Problems.PROBLEM_CONTENT_TYPE
        })
      )
    }
    return Effect.failCause(cause)
  })
)
