/**
 * Success bodies that this service's own code built, encoded without checking them again: the
 * trusted codec (core's TrustedCodec, docs/performance.md) applies the schema's transformations
 * only. Used by the endpoints that answer the most requests (run list, run, create); the body is
 * the one HttpApi's own encoding would send (core's TrustedCodec tests).
 *
 * The schema and the status come from the endpoint's own definition, and the value must be the
 * endpoint's success type: one source of truth, so the body cannot drift from what the API
 * declares (and documents in /openapi.json).
 */
import { TrustedCodec } from "@agent-runs/core"
import { type HttpApiEndpoint, type HttpApiGroup, HttpApiSchema, HttpServerResponse } from "@effect/platform"
import { Effect, type Schema } from "effect"

export type EndpointOf<Group extends HttpApiGroup.HttpApiGroup.Any, Name extends string> = HttpApiEndpoint.HttpApiEndpoint.WithName<
  HttpApiGroup.HttpApiGroup.Endpoints<Group>,
  Name
>

/** `group`'s endpoint `name` as defined, and its success status. */
export const definitionOf = (group: HttpApiGroup.HttpApiGroup.Any, name: string) => {
  const endpoint = (group as unknown as HttpApiGroup.HttpApiGroup.AnyWithProps).endpoints[name]!
  return { endpoint, status: HttpApiSchema.getStatusSuccess(endpoint.successSchema) }
}

/** The trusted encoder of `group`'s endpoint `name`'s success value, and its success status. */
export const successEncoder = (group: HttpApiGroup.HttpApiGroup.Any, name: string) => {
  const { endpoint, status } = definitionOf(group, name)
  const encode = TrustedCodec.encoder(endpoint.successSchema as Schema.Schema<unknown, unknown>)
  return { encode: (value: unknown) => Effect.orDie(encode(value)), status }
}

/** The answer of `group`'s endpoint `name`: its success value, encoded with its success schema, at its status. */
export const respond = <
  Group extends HttpApiGroup.HttpApiGroup.Any,
  Name extends HttpApiEndpoint.HttpApiEndpoint.Name<HttpApiGroup.HttpApiGroup.Endpoints<Group>>
>(group: Group, name: Name) => {
  const { encode, status } = successEncoder(group, name)
  return (value: HttpApiEndpoint.HttpApiEndpoint.Success<EndpointOf<Group, Name>>) =>
    Effect.map(encode(value), (body) => HttpServerResponse.unsafeJson(body, { status }))
}

/**
 * The answer of `group`'s endpoint `name` from the JSON text of its success value, which core built
 * (e.g. `Runs.listJsonText`, whose tests check it against the schema's encoding), at its status.
 */
export const respondJsonText = (group: HttpApiGroup.HttpApiGroup.Any, name: string) => {
  const { status } = definitionOf(group, name)
  return (text: string) => HttpServerResponse.text(text, { status, contentType: "application/json" })
}
