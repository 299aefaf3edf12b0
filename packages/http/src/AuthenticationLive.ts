/**
 * The `Authentication` middleware: the bearer token and the TEAM header (`X-Team-Uid`, or its
 * alias `X-Warp-Team-Uid` when the first is absent) resolved by core's `Identities` into the
 * caller. Unknown or revoked tokens are a 401; a team the caller is not a member of is a 403.
 * An agent's run token is accepted too, while its execution holds the run: the caller is then
 * the run's executor in the run's team, acting for the run (core's `Runs.actingViewer`), so that
 * an agent can start child runs (docs/reference/access.md, the scripted agent's `@spawn`).
 */
import { HttpServerRequest } from "@effect/platform"
import { Audit, Identities, Runs, RunTokens } from "@agent-runs/core"
import { Effect, Layer, Option, Redacted } from "effect"
import { clientAddress, TrustedProxies } from "./Ingress.js"
import { Authentication, TEAM_HEADER, TEAM_HEADER_ALIAS } from "@agent-runs/api/Security"

const NO_PROXIES = { contains: () => false }

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function*() {
    const identities = yield* Identities.Identities
    const runs = yield* Runs.Runs
    const runTokens = yield* RunTokens.RunTokens
    const trusted = Option.getOrElse(yield* Effect.serviceOption(TrustedProxies), () => NO_PROXIES)
    return {
      bearerAuth: (token) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const credential = yield* runTokens.verify(Redacted.value(token))
          const viewer = Option.isSome(credential)
            ? yield* runs.actingViewer(credential.value)
            : yield* identities.authenticate(Redacted.value(token), request.headers[TEAM_HEADER] ?? request.headers[TEAM_HEADER_ALIAS])
          // Where the request came from, for the audit log.
          const address = Option.map(request.remoteAddress, (peer) => clientAddress(peer, request.headers["x-forwarded-for"], trusted))
          return { ...viewer, origin: Audit.requestOrigin(Option.getOrUndefined(address), request.headers["user-agent"]) }
        })
    }
  })
)
