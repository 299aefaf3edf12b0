/**
 * The whole HTTP surface of Agent Runs as layers: the API (every group's handlers with the
 * authentication middleware), and beside it `/openapi.json`, `/docs`, `/healthz`, `/readyz`,
 * `/metrics`, the signed transcript downloads and the web dashboard at `/app` (Dashboard.ts). `serve` needs an `HttpServer` (the bundled
 * server gives Node's), the core services the handlers call, `DownloadUrls` and `Readiness`.
 *
 * Decisions:
 * - `/healthz` answers 200 `{status: "ok"}` while the process serves; `/readyz` answers 200
 *   `{status: "ready"}` when the service has started (`Startup`) and `Readiness` succeeds (storage
 *   reachable, the background loops working), and 503 `resource_unavailable` with `Retry-After: 5`
 *   otherwise, its `error` saying what is wrong ("the service is starting", a failing loop by name,
 *   a recent storage failure).
 * - Until the service has started, every other request is answered 503 `resource_unavailable`
 *   "the service is starting" with `Retry-After: 5` (ServerMiddleware.ts, `startupGate`), except
 *   the probes, `/metrics` and the pages that read nothing stored (`/`, `/docs`, `/docs/errors`,
 *   `/openapi.json`, the dashboard's files): no request is judged against a store whose start-up
 *   work (the bootstrap token, the definitions) is not done, so a valid token is never told 401.
 * - A transcript download (`GET /api/v1/downloads/transcripts/{runId}?expires&signature`) needs no
 *   bearer token; an altered or unsigned URL is a 403 `not_authorized`, an expired one a 403 that
 *   says so; a run without a transcript a 404. The body is the raw bytes the agent printed
 *   (`application/x-ndjson`), streamed.
 */
import type {
  HttpApp} from "@effect/platform";
import {
  HttpApi,
  HttpApiBuilder,
  HttpApiScalar,
  Headers,
  HttpMiddleware,
  HttpRouter,
  HttpServer,
  HttpServerRequest,
  HttpServerResponse,
  OpenApi
} from "@effect/platform"
import { BlobKeys, BlobStore, Errors } from "@agent-runs/core"
import { appDir } from "@agent-runs/dashboard"
import { Cause, Chunk, Clock, Context, Effect, Layer, Option, Ref, Schema, Stream } from "effect"
import { Api } from "@agent-runs/api/Api"
import { AuthenticationLive } from "./AuthenticationLive.js"
import { dashboard, DASHBOARD_PATH } from "./Dashboard.js"
import { DecodeErrorsAsProblems } from "./DecodeErrors.js"
import { DownloadUrls, TRANSCRIPT_DOWNLOAD_ROUTE, transcriptPath } from "./Downloads.js"
import { INGRESS_PREFIX, IngressRoutesLive } from "./Ingress.js"
import { allowedMethods } from "./RouteMethods.js"
import { errorsPage } from "./pages/ErrorsPage.js"
import { homePage } from "./pages/HomePage.js"
import { AdminLive } from "./handlers/Admin.js"
import { addSignInRoutes, SignInRouting } from "./oidc/Routes.js"
import { AgentsLive } from "./handlers/Agents.js"
import { AuditLive } from "./handlers/Audit.js"
import { AutomationsLive } from "./handlers/Automations.js"
import { ConversationsLive } from "./handlers/Conversations.js"
import { EnvironmentsLive } from "./handlers/Environments.js"
import { GitHubLive } from "./handlers/GitHub.js"
import { HarnessSupportLive, RunAuthenticationLive } from "./handlers/HarnessSupport.js"
import { IdentityLive } from "./handlers/Identity.js"
import { TeamLive } from "./handlers/Team.js"
import { RunsLive } from "./handlers/Runs.js"
import { SchedulesLive } from "./handlers/Schedules.js"
import { SecretsLive } from "./handlers/Secrets.js"
import { WebhooksLive } from "./handlers/Webhooks.js"
import { OutboundWebhooksLive } from "./handlers/OutboundWebhooks.js"
import { WorkersLive } from "./handlers/Workers.js"
import { metricsMiddleware, metricsResponse } from "./Metrics.js"
import { REDACTED_HEADERS, redactedSpans, untraced } from "./RequestSpans.js"
import { openApiDocument, serversOf } from "./OpenApiDocument.js"
import * as Problems from "@agent-runs/api/Problems"
import { DEFAULT_MAX_BODY_BYTES, problemResponse, serverMiddleware, STARTING_MESSAGE, startupGate } from "./ServerMiddleware.js"

/** Whether the service can do its work now (storage reachable); `/readyz` runs it. */
export class Readiness extends Context.Tag("@agent-runs/http/Readiness")<Readiness, Effect.Effect<void, unknown>>() {}

/**
 * Whether the service has started: its host's start-up work is done (the bootstrap token exists,
 * the definitions are applied). A flag every request reads once; set once, for good.
 */
export class Startup extends Context.Tag("@agent-runs/http/Startup")<Startup, {
  /** Whether the service has started. */
  readonly isDone: Effect.Effect<boolean>
  /** Records that the service has started. */
  readonly done: Effect.Effect<void>
}>() {
  /** A service that has not started yet. */
  static readonly layer = Layer.effect(
    Startup,
    Effect.map(Ref.make(false), (flag) => ({ isDone: Ref.get(flag), done: Ref.set(flag, true) }))
  )
}

/** Records that the service has started: the API answers from now on. Its host runs it once its start-up work is done. */
export const started: Effect.Effect<void, never, Startup> = Effect.flatMap(Startup, (startup) => startup.done)

/** Every group of the API with its handlers and middleware. */
export const ApiLive = HttpApiBuilder.api(Api).pipe(
  Layer.provide([
    RunsLive,
    ConversationsLive,
    SchedulesLive,
    EnvironmentsLive,
    WebhooksLive,
    OutboundWebhooksLive,
    AutomationsLive,
    SecretsLive,
    GitHubLive,
    AdminLive,
    AuditLive,
    IdentityLive,
    TeamLive,
    AgentsLive,
    HarnessSupportLive,
    WorkersLive
  ]),
  Layer.provide([AuthenticationLive, RunAuthenticationLive])
)

const encodeResourceUnavailable = Schema.encodeSync(Problems.ResourceUnavailable)
const encodeNotAuthorized = Schema.encodeSync(Problems.NotAuthorized)

const json = (body: unknown, status = 200) => HttpServerResponse.unsafeJson(body, { status })

const refused = (message: string) =>
  HttpServerResponse.unsafeJson(encodeNotAuthorized(new Errors.NotAuthorized({ message })), {
    status: 403,
    contentType: Problems.PROBLEM_CONTENT_TYPE
  })

const notReady = (message: string) =>
  HttpServerResponse.unsafeJson(encodeResourceUnavailable(new Errors.ResourceUnavailable({ message })), {
    status: 503,
    contentType: Problems.PROBLEM_CONTENT_TYPE,
    headers: { "retry-after": "5" }
  })

/** 200 when started and ready; else 503 with what is wrong (a readiness failure that is a string says it). */
const readiness = (startup: Startup["Type"], ready: Effect.Effect<void, unknown>) =>
  Effect.flatMap(startup.isDone, (done) => done ? ready : Effect.fail(STARTING_MESSAGE)).pipe(
    Effect.as(json({ status: "ready" })),
    Effect.catchAllCause((cause) => {
      const failure = Cause.failureOption(cause)
      const message = Option.isSome(failure) && typeof failure.value === "string" ? failure.value : "storage is unreachable"
      return Effect.logWarning(`not ready: ${message}`).pipe(Effect.as(notReady(message)))
    })
  )

const download = (downloads: DownloadUrls["Type"], blobs: BlobStore.BlobStore["Type"]) =>
  Effect.gen(function*() {
    const { runId = "" } = yield* HttpRouter.params
    const request = yield* HttpServerRequest.HttpServerRequest
    const url = new URL(request.url, "http://localhost")
    const now = yield* Clock.currentTimeMillis
    const refusal = downloads.verify(
      transcriptPath(runId),
      { expires: url.searchParams.get("expires") ?? undefined, signature: url.searchParams.get("signature") ?? undefined },
      now
    )
    if (refusal === "expired") return refused("this download link has expired; ask the API for a new one")
    if (refusal === "invalid") return refused("this download link is not valid")
    const blob = yield* blobs.read(BlobKeys.transcriptKey(runId))
    if (Option.isNone(blob)) return problemResponse(Errors.ResourceNotFound.of("transcript", runId))
    return HttpServerResponse.stream(blob.value.pipe(Stream.orDie), {
      contentType: "application/x-ndjson",
      headers: { "content-disposition": `attachment; filename="${runId}.jsonl"`, "cache-control": "private, no-store" }
    })
  }).pipe(Effect.orDie)

/** The routes served beside the API; `/docs` and `/openapi.json` name `basePath` as their server. */
export const ExtraRoutesLive = (basePath: string) =>
  Layer.merge(
    HttpApiBuilder.Router.use((router) =>
      Effect.gen(function*() {
        const document = json(openApiDocument(basePath))
        const ready = yield* Readiness
        const startup = yield* Startup
        const downloads = yield* DownloadUrls
        const blobs = yield* BlobStore.BlobStore
        yield* router.get("/", Effect.succeed(homePage(basePath)))
        yield* router.get("/docs/errors", Effect.succeed(errorsPage(basePath)))
        yield* router.get("/openapi.json", Effect.succeed(document))
        yield* router.get("/healthz", Effect.succeed(json({ status: "ok" })))
        yield* router.get("/readyz", readiness(startup, ready))
        yield* router.get("/metrics", metricsResponse)
        yield* router.get(TRANSCRIPT_DOWNLOAD_ROUTE, download(downloads, blobs))
        const app = dashboard(basePath, appDir)
        yield* router.get(DASHBOARD_PATH, app)
        yield* router.get(`${DASHBOARD_PATH}/*`, app)
        const signIn = yield* Effect.serviceOption(SignInRouting)
        if (Option.isSome(signIn)) yield* addSignInRoutes(router, signIn.value)
      })
    ),
    // Nothing fetched from elsewhere: system fonts instead of Scalar's web fonts.
    HttpApiScalar.layer({ path: "/docs", scalar: { withDefaultFonts: false } }).pipe(
      Layer.provide(Layer.effect(
        HttpApi.Api,
        Effect.map(HttpApi.Api, ({ api, context }) => ({ api: api.annotate(OpenApi.Servers, serversOf(basePath)), context }))
      ))
    )
  )

/**
 * How paths match (docs/reference/api.md): a query string is read as sent (the router's default
 * would collapse `//` in `?url=https://…`), paths are case-insensitive and one trailing slash is
 * ignored (`/agent/runs/` is `/agent/runs`).
 */
const ROUTER_CONFIG = { ignoreDuplicateSlashes: false, ignoreTrailingSlash: true, caseSensitive: false } as const

/**
 * The paths answered while the service starts (as the router matches them: in any case, with one
 * trailing slash): the probes, `/metrics`, and the pages and files that read nothing stored.
 */
const SERVED_WHILE_STARTING = new RegExp(
  `^/(?:healthz|readyz|metrics|openapi\\.json|docs(?:/errors)?|${DASHBOARD_PATH.slice(1)}(?:/.*)?)?/?$`,
  "i"
)

/** The whole HTTP surface as one app: what `serve` serves, and what a host mounts under a prefix. */
export class App extends Context.Tag("@agent-runs/http/App")<App, HttpApp.Default<never, HttpRouter.HttpRouter.DefaultServices>>() {}

export interface AppOptions {
  /** The largest request body, in bytes (1 MiB). */
  readonly maxBodyBytes?: number | undefined
  /** The prefix the service is mounted under (`/agents`), `""` at the root. */
  readonly basePath?: string | undefined
}

/**
 * Answers a request whose path starts with `basePath` as if the prefix were absent, so that the
 * app works mounted under a prefix whether or not the host strips it.
 */
export const withBasePath = (basePath: string) => <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
  basePath === "" ? app : Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const url = request.url
    const rest = url.startsWith(basePath) ? url.slice(basePath.length) : undefined
    if (rest === undefined || !(rest === "" || rest.startsWith("/") || rest.startsWith("?"))) return app
    return Effect.provideService(app, HttpServerRequest.HttpServerRequest, request.modify({ url: rest.startsWith("/") ? rest : `/${rest}` }))
  })

/**
 * The app. The server middleware wraps the app itself (not `HttpServer.serve`'s middleware, which
 * sees responses only after they are written), so it can answer router failures and rewrite
 * problem responses. The start-up gate is outside it: until the service has started (`Startup`),
 * a request is answered before its body is read.
 */
export const appLayer = (options: AppOptions = {}) => {
  const basePath = options.basePath ?? ""
  return Layer.effect(
    App,
    Effect.gen(function*() {
      const app = yield* HttpRouter.withRouterConfig(HttpApiBuilder.httpApp, ROUTER_CONFIG)
      const routes = Chunk.toReadonlyArray((yield* HttpApiBuilder.Router.router).routes)
      const startup = yield* Startup
      const gate = startupGate({
        started: startup.isDone,
        servedWhileStarting: (path) => SERVED_WHILE_STARTING.test(path),
        basePath
      })
      return redactedSpans(withBasePath(basePath)(metricsMiddleware(gate(
        serverMiddleware({
          maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
          ownBodyLimit: (path) => path.startsWith(INGRESS_PREFIX),
          allowedMethods: allowedMethods(routes),
          basePath
        })(app)
      ))))
    })
  ).pipe(
    Layer.provide(ExtraRoutesLive(basePath)),
    Layer.provide(IngressRoutesLive),
    Layer.provide(ApiLive),
    Layer.provide(DecodeErrorsAsProblems),
    Layer.provide([HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer])
  )
}

/** Serves the app of the context on the `HttpServer` of the context. */
export const serveApp = Layer.unwrapEffect(Effect.map(App, (app) => HttpServer.serve(app))).pipe(
  HttpMiddleware.withTracerDisabledWhen(untraced),
  Layer.locally(Headers.currentRedactedNames, REDACTED_HEADERS)
)

/** Serves everything on the `HttpServer` of the context. */
export const serve = (options: AppOptions = {}) => serveApp.pipe(Layer.provide(appLayer(options)))
