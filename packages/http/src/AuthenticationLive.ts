/**
 * The `Authentication` middleware: the bearer token and the TEAM header (`X-Team-Uid`, or its
 * alias `X-Warp-Team-Uid` when the first is absent) resolved by core's `Identities` into the
 * caller. Unknown or revoked tokens are a 401; a team the caller is not a member of is a 403.
 */
import { HttpServerRequest } from "@effect/platform"
import { Identities } from "@agent-runs/core"
import { Effect, Layer, Redacted } from "effect"
import { Authentication, TEAM_HEADER, TEAM_HEADER_ALIAS } from "./Security.js"

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.map(Identities.Identities, (identities) => ({
    bearerAuth: (token) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
        identities.authenticate(
          Redacted.value(token),
          request.headers[TEAM_HEADER] ?? request.headers[TEAM_HEADER_ALIAS]
        ))
  }))
)
