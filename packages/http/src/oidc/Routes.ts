/**
 * The sign-in routes (docs/sign-in.md), beside the API:
 *
 * - `GET /auth/oidc`: `{issuer}`, so that the dashboard knows to offer the sign-in.
 * - `GET /auth/oidc/login?client_state=…`: redirects the browser to the provider (authorization
 *   code flow with PKCE, state and nonce, kept in a signed cookie for ten minutes). `client_state`
 *   is the dashboard tab's own random value (16 to 128 of `A-Za-z0-9_-`), handed back with the
 *   session: the tab takes a session only with its own value, so a link carrying someone else's
 *   session (`/app/#session=…`) signs nobody in as someone else.
 * - `GET /auth/oidc/callback`: the provider's redirect back; signs in (core's `SignIn`) and sends
 *   the browser to the dashboard with the session token in the URL's fragment (`#session=…`),
 *   which never reaches a server or its logs, with `client_state`; the dashboard keeps it and
 *   clears the fragment. A refusal sends it there too, with the reason (`#sign_in_error=…`).
 * - `POST /auth/oidc/device`: starts the device flow for the CLI: the code to type, and where.
 * - `POST /auth/oidc/device/token` `{device_code, interval?, expires_in?}`: waits up to 20 s for the
 *   user's approval; 200 with the session token once approved, 202 `{status: "pending"}` before.
 *   The provider is polled every `interval` seconds, never less than 5.
 * - The device routes are rate limited per client address (`DEVICE_STARTS`, `DEVICE_POLLS`) and in
 *   all (ten times as many): 429 with `Retry-After`, so that nobody floods the provider in the
 *   service's name.
 *
 * The other routes' refusals are problem responses: 400 (a state or code that does not check out, a provider's
 * refusal), 403 (a disabled principal, an account no principal matches), 409 (an ambiguous email),
 * 503 (the provider cannot be reached). Without sign-in configured the routes do not exist (404).
 */
import type { HttpRouter} from "@effect/platform";
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Audit, Errors, RateLimit, SignIn } from "@agent-runs/core"
import { Clock, Context, Effect, Layer, Option, type Redacted, Schema } from "effect"
import { clientAddress, TrustedProxies } from "../Ingress.js"
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

/** Device flows a client address may start per minute (ten times as many in all). */
export const DEVICE_STARTS = { max: 10, windowMs: 60_000 } as const
/** Device polls a client address may send per minute (ten times as many in all). */
export const DEVICE_POLLS = { max: 30, windowMs: 60_000 } as const
/** The least interval between polls of the provider, in seconds (RFC 8628's default). */
const MIN_INTERVAL_SECONDS = 5

const CLIENT_STATE = /^[A-Za-z0-9_-]{16,128}$/

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

const NO_PROXIES = { contains: () => false }

/** A limiter per client address and one for all of them (ten times as many). */
const limiterOf = (limit: RateLimit.Limit) => {
  const each = RateLimit.makeLimiter(limit)
  const all = RateLimit.makeLimiter({ ...limit, max: limit.max * 10 })
  return (address: string, now: number): RateLimit.Decision => {
    each.prune(now)
    const mine = each.take(address, now)
    if (!mine.allowed) return mine
    const overall = all.take("*", now)
    if (!overall.allowed) each.refund(address)
    return overall
  }
}

const tooMany = (decision: { readonly retryAfterMs: number }) => {
  const seconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1000))
  return HttpServerResponse.setHeader(
    problemResponse(new Errors.RateLimited({ message: "too many sign-in attempts; try again later", retryAfterSeconds: seconds })),
    "retry-after",
    String(seconds)
  )
}

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
    const trusted = Option.getOrElse(yield* Effect.serviceOption(TrustedProxies), () => NO_PROXIES)
    const states = loginStates(options.secretKey)
    const starts = limiterOf(DEVICE_STARTS)
    const polls = limiterOf(DEVICE_POLLS)

    /** The client's address (behind trusted proxies) and user agent. */
    const originOf = Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
      Audit.requestOrigin(
        Option.getOrUndefined(Option.map(request.remoteAddress, (peer) => clientAddress(peer, request.headers["x-forwarded-for"], trusted))),
        request.headers["user-agent"]
      ))

    /** Runs `route` unless the client address is past `limit`'s budget (429). */
    const limited = <E, R>(limit: ReturnType<typeof limiterOf>, route: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
      Effect.gen(function*() {
        const origin = yield* originOf
        const decision = limit(origin.address ?? "unknown", yield* Clock.currentTimeMillis)
        return decision.allowed ? yield* route : tooMany(decision)
      })
    const publicUrl = options.publicUrl.replace(/\/+$/, "")
    const redirectUri = `${publicUrl}/auth/oidc/callback`
    const secure = publicUrl.startsWith("https:") ? "; Secure" : ""
    const cookie = (value: string, maxAgeSeconds: number) =>
      `${LOGIN_STATE_COOKIE}=${value}; Path=${options.basePath}/auth/oidc; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${secure}`

    const login = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const client = new URL(request.url, "http://localhost").searchParams.get("client_state") ?? ""
      if (client !== "" && !CLIENT_STATE.test(client)) {
        return problemResponse(Errors.InvalidRequest.forField("client_state", "must be 16 to 128 of A-Za-z0-9_-"))
      }
      const checks = randomChecks()
      const url = yield* party.authorizationUrl(redirectUri, checks)
      const sealed = states.seal({ ...checks, client, expires: (yield* Clock.currentTimeMillis) + LOGIN_STATE_TTL_MS })
      return HttpServerResponse.empty({ status: 302, headers: { location: url.href, "set-cookie": cookie(sealed, LOGIN_STATE_TTL_MS / 1000), "cache-control": "no-store" } })
    }).pipe(Effect.catchAll(refusalOf))

    /** Back to the dashboard with `fields` in the fragment; the sign-in's cookie cleared. */
    const toDashboard = (fields: Record<string, string>) =>
      HttpServerResponse.empty({
        status: 302,
        headers: {
          location: `${options.basePath}/app/#${new URLSearchParams(fields).toString()}`,
          "set-cookie": cookie("", 0),
          "cache-control": "no-store"
        }
      })

    const callback = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const state = states.open(cookieOf(request.headers["cookie"]), yield* Clock.currentTimeMillis)
      if (state === undefined) {
        return toDashboard({ sign_in_error: "this sign-in expired or was started elsewhere; sign in again" })
      }
      const query = new URL(request.url, "http://localhost").search
      const signedIn = Effect.flatMap(party.exchange(new URL(`${redirectUri}${query}`), state), (claims) =>
        Effect.flatMap(originOf, (origin) => signIn.signIn(claims, "dashboard", origin)))
      return yield* signedIn.pipe(
        Effect.map((session) => toDashboard({ session: session.token, client_state: state.client })),
        Effect.catchAll((error) => {
          const message = error._tag === "OidcFailure" ? `the sign-in provider refused: ${error.message}` : error.message
          return Effect.succeed(toDashboard({ sign_in_error: message.slice(0, 300), client_state: state.client }))
        })
      )
    })

    const device = limited(starts, party.startDevice.pipe(
      Effect.map((start) => HttpServerResponse.unsafeJson(start, { headers: { "cache-control": "no-store" } })),
      Effect.catchAll(refusalOf)
    ))

    const deviceToken = limited(polls, Effect.gen(function*() {
      const body = yield* HttpServerRequest.schemaBodyJson(DeviceTokenRequest).pipe(
        Effect.mapError(() => Errors.InvalidRequest.forField("device_code", "must be the device_code POST /auth/oidc/device answered"))
      )
      const interval = Math.max(body.interval ?? MIN_INTERVAL_SECONDS, MIN_INTERVAL_SECONDS)
      const claims = yield* party.pollDevice({ device_code: body.device_code, interval, expires_in: body.expires_in ?? 600 })
      if (Option.isNone(claims)) return HttpServerResponse.unsafeJson({ status: "pending" }, { status: 202 })
      const session = yield* signIn.signIn(claims.value, "CLI", yield* originOf)
      return HttpServerResponse.unsafeJson({
        token: session.token,
        expires_at: session.expires_at.toJSON(),
        principal: { uid: session.principal.uid, display_name: session.principal.display_name }
      }, { headers: { "cache-control": "no-store" } })
    }).pipe(Effect.catchAll((error) => (error._tag === "InvalidRequest" ? Effect.succeed(problemResponse(error)) : refusalOf(error)))))

    yield* router.get("/auth/oidc", Effect.succeed(HttpServerResponse.unsafeJson({ issuer: routing.issuer })))
    yield* router.get("/auth/oidc/login", login)
    yield* router.get("/auth/oidc/callback", callback)
    yield* router.post("/auth/oidc/device", device)
    yield* router.post("/auth/oidc/device/token", deviceToken)
  })
