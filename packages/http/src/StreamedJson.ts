/**
 * Success bodies written as they are produced: a JSON text in pieces, sent as a chunked
 * `application/json` response at the endpoint's success status (from its definition, as
 * `respond` does, Respond.ts). For bodies too large to build whole (a run's conversation,
 * docs/performance.md). The pieces must make the JSON of the endpoint's success type; the
 * endpoint's tests check that they do.
 *
 * Decisions:
 * - What can be known before the first byte (the caller's access, the resource's existence, a
 *   storage failure on the first read) is the effect's failure before the response, answered as a
 *   problem with its status like any other.
 * - A failure once the status and a part of the body are sent cannot change either: the body
 *   ends where it is (the response itself ends normally), so it is never valid JSON (a JSON text
 *   cut anywhere before its end is not JSON), and the failure is logged as an error with `what`
 *   names. A client sees a body that does not parse; retrying the request is safe (it only reads).
 * - A client that goes away interrupts the body: nothing is logged.
 */
import { type HttpApiEndpoint, type HttpApiGroup, HttpServerResponse } from "@effect/platform"
import { Cause, Effect, Stream } from "effect"
import { definitionOf } from "./Respond.js"

/** The streamed answer of `group`'s endpoint `name`: `text`, whose pieces make its success value's JSON. */
export const streamedJson = <
  Group extends HttpApiGroup.HttpApiGroup.Any,
  Name extends HttpApiEndpoint.HttpApiEndpoint.Name<HttpApiGroup.HttpApiGroup.Endpoints<Group>>
>(group: Group, name: Name) => {
  const { endpoint, status } = definitionOf(group, name)
  const label = `${endpoint.method} ${endpoint.path}`
  return <E>(text: Stream.Stream<string, E>, what: Readonly<Record<string, string>>) =>
    HttpServerResponse.stream(
      text.pipe(
        Stream.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause)
            ? Stream.failCause(cause)
            : Stream.execute(
              Effect.logError(`${label}: the response failed after its status was sent; its body ends cut short (not JSON)`, cause).pipe(
                Effect.annotateLogs(what)
              )
            )
        ),
        Stream.encodeText
      ),
      { status, contentType: "application/json" }
    )
}
