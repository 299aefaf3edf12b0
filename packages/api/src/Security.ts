/**
 * How callers authenticate (docs/reference/access.md), as HttpApi middleware tags (the implementations come
 * with the server):
 * - `Authentication`: the `bearerAuth` scheme, `Authorization: Bearer ar_…`, on every `/api/v1`
 *   endpoint except the harness support one. It resolves the token and the TEAM header into the
 *   caller (`CurrentViewer`, core's `Access.Viewer`); a missing or invalid token fails with
 *   401 `authentication_required`, a TEAM header naming a team the caller is not a member of
 *   with 403 `not_authorized`, and unreachable storage with 503.
 * - `RunAuthentication`: the `runToken` scheme, the bearer run token an executor hands its agent
 *   (`api.run_token` of the harness start message), for `POST /harness-support/report-artifact`.
 *
 * The TEAM header (`X-Team-Uid`, alias `X-Warp-Team-Uid`) is documented on each endpoint through
 * `TeamHeaders`. It is a plain string there: the Authentication middleware reads it, and a team
 * uid the caller is not a member of (malformed ones included) is a 403, never a 400.
 */
import { HttpApiMiddleware, HttpApiSecurity, OpenApi } from "@effect/platform"
import type { Access, RunTokens } from "@agent-runs/core"
import { Context, Schema } from "effect"
import * as Problems from "./Problems.js"

/** The authenticated caller of the current request, resolved from its token and TEAM header. */
export class CurrentViewer extends Context.Tag("@agent-runs/api/CurrentViewer")<CurrentViewer, Access.Viewer>() {}

/** The bearer token scheme, `bearerAuth` in the OpenAPI document. */
export const bearerAuth = HttpApiSecurity.bearer.pipe(
  HttpApiSecurity.annotate(
    OpenApi.Description,
    "An API token (`ar_…`) sent as `Authorization: Bearer <token>`. Missing or invalid: 401; " +
      "valid without the permission: 403."
  )
)

/** Authentication of every `/api/v1` endpoint (except harness support): provides `CurrentViewer`. */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("Authentication", {
  failure: Schema.Union(Problems.AuthenticationRequired, Problems.NotAuthorized, Problems.ResourceUnavailable),
  provides: CurrentViewer,
  security: { bearerAuth }
}) {}

/** The run (and execution) of the agent calling a harness support endpoint. */
export class CurrentRun extends Context.Tag("@agent-runs/api/CurrentRun")<CurrentRun, RunTokens.RunCredential>() {}

/** The run token scheme, `runToken` in the OpenAPI document. */
export const runToken = HttpApiSecurity.bearer.pipe(
  HttpApiSecurity.annotate(
    OpenApi.Description,
    "The run token an executor gives its agent (`api.run_token` of the harness start message), " +
      "sent as `Authorization: Bearer <token>`; valid while its execution runs."
  )
)

/** Authentication of harness support endpoints by run token: provides `CurrentRun`. */
export class RunAuthentication extends HttpApiMiddleware.Tag<RunAuthentication>()("RunAuthentication", {
  failure: Problems.AuthenticationRequired,
  provides: CurrentRun,
  security: { runToken }
}) {}

/** The canonical TEAM header name. */
export const TEAM_HEADER = "x-team-uid"
/** The accepted alias of the TEAM header. */
export const TEAM_HEADER_ALIAS = "x-warp-team-uid"

/** The TEAM header parameters (TeamUidHeaderParam), optional on every team-scoped endpoint. */
export const TeamHeaders = Schema.Struct({
  [TEAM_HEADER]: Schema.optional(
    Schema.String.annotations({
      description: "TeamUidHeaderParam: the uid of the team to act in (default: the caller's first team). " +
        "A team the caller is not a member of: 403."
    })
  ),
  [TEAM_HEADER_ALIAS]: Schema.optional(
    Schema.String.annotations({ description: "Alias of X-Team-Uid, accepted for compatibility." })
  )
})
