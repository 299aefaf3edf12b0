/**
 * @agent-runs/http: the HTTP server of Agent Runs on @effect/platform: the handlers of the API
 * that `@agent-runs/api` defines, the OpenAPI document, the webhook ingress and the app that
 * serves them.
 */
export * as AuthenticationLive from "./AuthenticationLive.js"
export * as DecodeErrors from "./DecodeErrors.js"
export * as Downloads from "./Downloads.js"
export * as EventStreams from "./EventStreams.js"
export * as AddressSet from "./AddressSet.js"
export * as Ingress from "./Ingress.js"
export * as Metrics from "./Metrics.js"
export * as OpenApiDocument from "./OpenApiDocument.js"
export * as OutboundHttpSender from "./OutboundHttpSender.js"
export * as RequestSpans from "./RequestSpans.js"
export * as RouteLabel from "./RouteLabel.js"
export * as RelyingParty from "./oidc/RelyingParty.js"
export * as SignInRoutes from "./oidc/Routes.js"
export * as RunTokens from "./RunTokens.js"
export * as Server from "./Server.js"
export * as ServerMiddleware from "./ServerMiddleware.js"
