/**
 * The sign-in routes (docs/sign-in.md), beside the API:
 *
 * - `GET /auth/oidc`: `{issuer}`, so that the dashboard knows to offer the sign-in.
 * - `GET /auth/oidc/login`: redirects the browser to the provider (authorization code flow with
 *   PKCE, state and nonce, kept in a signed cookie for ten minutes).
 * - `GET /auth/oidc/callback`: the provider's redirect back; signs in (core's `SignIn`) and sends
 *   the browser to the dashboard with the session token in the URL's fragment (`#session=…`),
 *   which never reaches a server or its logs; the dashboard keeps it and clears the fragment. A
 *   refusal sends it there too, with the reason (`#sign_in_error=…`), for the sign-in page.
 * - `POST /auth/oidc/device`: starts the device flow for the CLI: the code to type, and where.
 * - `POST /auth/oidc/device/token` `{device_code, interval?, expires_in?}`: waits up to 20 s for the
 *   user's approval; 200 with the session token once approved, 202 `{status: "pending"}` before.
 *
 * The other routes' refusals are problem responses: 400 (a state or code that does not check out, a provider's
 * refusal), 403 (a disabled principal, an account no principal matches), 409 (an ambiguous email),
 * 503 (the provider cannot be reached). Without sign-in configured the routes do not exist (404).
 */
import type { HttpRouter} from "@effect/platform";
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Audit, Errors, SignIn } from "@agent-runs/core"
import { Clock, Context, Effect, Layer, Option, type Redacted, Schema } from "effect"
import { clientAddress } from "../Ingress.js"
import { problemResponse } from "../ServerMiddleware.js"
import { LOGIN_STATE_COOKIE, LOGIN_STATE_TTL_MS, loginStates } from "./LoginState.js"
import type { OidcFailure} from "./RelyingParty.js";
import { randomChecks, RelyingParty } from "./RelyingParty.js"

/** Where the routes are, and what they need to know of the service. */
export interface SignInRoutesOptions {
  /** The service's public URL (its mount prefix included): the callback is under it. */
  readonly publicUrl: string
  /** The mount prefix (`""` at the root): the dashboard is under it. */
  readonly basePath: string
  readonly secretKey: Redacted.Redacted<Uint8Array>
}

const DeviceTokenRequest = Schema.Struct({
  device_code: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(2048)),
  interval: Schema.optional(Schema.Int.pipe(Schema.between(1, 60))),
  expires_in: Schema.optional(Schema.Int.pipe(Schema.between(1, 86_400)))
})

const refusalOf = (error: OidcFailure | Errors.NotAuthorized | Errors.Conflict | Errors.ResourceUnavailable) =>
  error._tag === "OidcFailure"
    ? error.unavailable
      ? problemResponse(new Errors.ResourceUnavailable({ message: `the sign-in provider cannot be reached: ${error.message}` }))
      : problemResponse(Errors.InvalidRequest.forField("sign-in", `the sign-in provider refused: ${error.message}`))
    : problemResponse(error)

const originOf = Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
  Audit.requestOrigin(
    Option.getOrUndefined(Option.map(request.remoteAddress, (peer) => clientAddress(peer, undefined, { contains: () => false }))),
    request.headers["user-agent"]
  ))

const cookieOf = (header: string | undefined): string | undefined =>
  header?.split(";").map((c) => c.trim()).find((c) => c.startsWith(`${LOGIN_STATE_COOKIE}=`))?.slice(LOGIN_STATE_COOKIE.length + 1)

/** What the routes need, when sign-in is configured (the app adds the routes only then). */
export class SignInRouting extends Context.Tag("@agent-runs/http/SignInRouting")<SignInRouting, {
  readonly party: RelyingParty["Type"]
  readonly signIn: SignIn.SignIn
  readonly options: SignInRoutesOptions
  /** The provider's issuer, shown to the dashboard. */
  readonly issuer: string
}>() {}

/** `SignInRouting` over the relying party and core's sign-in of the context. */
export const signInRoutingLayer = (options: SignInRoutesOptions, issuer: string) =>
  Layer.effect(SignInRouting, Effect.map(Effect.all([RelyingParty, SignIn.SignIn]), ([party, signIn]) => ({ party, signIn, options, issuer })))

/** Adds the sign-in routes to the router. */
export const addSignInRoutes = (
  router: HttpRouter.HttpRouter.Service<unknown, HttpRouter.HttpRouter.DefaultServices>,
  routing: SignInRouting["Type"]
) =>
  Effect.gen(function*() {
    const { options, party, signIn } = routing
    const states = loginStates(options.secretKey)
    const publicUrl = options.publicUrl.replace(/\/+$/, "")
    const redirectUri = `${publicUrl}/auth/oidc/callback`
    const secure = publicUrl.startsWith("https:") ? "; Secure" : ""
    const cookie = (value: string, maxAgeSeconds: number) =>
      `${LOGIN_STATE_COOKIE}=${value}; Path=${options.basePath}/auth/oidc; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${secure}`

    const login = Effect.gen(function*() {
      const checks = randomChecks()
      const url = yield* party.authorizationUrl(redirectUri, checks)
      const sealed = states.seal({ ...checks, expires: (yield* Clock.currentTimeMillis) + LOGIN_STATE_TTL_MS })
      return HttpServerResponse.empty({ status: 302, headers: { location: url.href, "set-cookie": cookie(sealed, LOGIN_STATE_TTL_MS / 1000), "cache-control": "no-store" } })
    }).pipe(Effect.catchAll(refusalOf))

    /** Back to the dashboard with `fragment`; the sign-in's cookie cleared. */
    const toDashboard = (fragment: string) =>
      HttpServerResponse.empty({
        status: 302,
        headers: { location: `${options.basePath}/app/#${fragment}`, "set-cookie": cookie("", 0), "cache-control": "no-store" }
      })

    const callback = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const state = states.open(cookieOf(request.headers["cookie"]), yield* Clock.currentTimeMillis)
      if (state === undefined) {
        return yield* Effect.fail(Errors.InvalidRequest.forField("state", "this sign-in expired or was started elsewhere; sign in again"))
      }
      const query = new URL(request.url, "http://localhost").search
      const claims = yield* party.exchange(new URL(`${redirectUri}${query}`), state)
      const session = yield* signIn.signIn(claims, "dashboard", yield* originOf)
      return toDashboard(`session=${encodeURIComponent(session.token)}`)
    }).pipe(
      Effect.catchAll((error) => {
        const message = error._tag === "OidcFailure" ? `the sign-in provider refused: ${error.message}` : error.message
        return Effect.succeed(toDashboard(`sign_in_error=${encodeURIComponent(message.slice(0, 300))}`))
      })
    )

    const device = party.startDevice.pipe(
      Effect.map((start) => HttpServerResponse.unsafeJson(start, { headers: { "cache-control": "no-store" } })),
      Effect.catchAll(refusalOf)
    )

    const deviceToken = Effect.gen(function*() {
      const body = yield* HttpServerRequest.schemaBodyJson(DeviceTokenRequest).pipe(
        Effect.mapError(() => Errors.InvalidRequest.forField("device_code", "must be the device_code POST /auth/oidc/device answered"))
      )
      const claims = yield* party.pollDevice({ device_code: body.device_code, interval: body.interval ?? 5, expires_in: body.expires_in ?? 600 })
      if (Option.isNone(claims)) return HttpServerResponse.unsafeJson({ status: "pending" }, { status: 202 })
      const session = yield* signIn.signIn(claims.value, "CLI", yield* originOf)
      return HttpServerResponse.unsafeJson({
        token: session.token,
        expires_at: session.expires_at.toJSON(),
        principal: { uid: session.principal.uid, display_name: session.principal.display_name }
      }, { headers: { "cache-control": "no-store" } })
    }).pipe(Effect.catchAll((error) => (error._tag === "InvalidRequest" ? Effect.succeed(problemResponse(error)) : refusalOf(error))))

    yield* router.get("/auth/oidc", Effect.succeed(HttpServerResponse.unsafeJson({ issuer: routing.issuer })))
    yield* router.get("/auth/oidc/login", login)
    yield* router.get("/auth/oidc/callback", callback)
    yield* router.post("/auth/oidc/device", device)
    yield* router.post("/auth/oidc/device/token", deviceToken)
  })
