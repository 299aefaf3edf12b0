/**
 * The definitions applier's target over the HTTP API (`/api/v1`, bearer token, optional TEAM
 * header), through the typed client of `@agent-runs/http` on `fetch`. Every failure becomes a
 * `ServerError` whose message says what the server (or the network) answered.
 */
import { FetchHttpClient, HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import type { DefinitionsApplier } from "@agent-runs/core"
import { Definitions } from "@agent-runs/core"
import { Api, Security } from "@agent-runs/api"
import { Data, Effect, Option, Redacted } from "effect"

/** Where the server is and who calls it. */
export interface Connection {
  /** e.g. `http://127.0.0.1:8080` (the API is under `/api/v1`). */
  readonly server: string
  readonly token: Redacted.Redacted<string>
  /** The team to act in (`X-Team-Uid`); the token's first team when absent. */
  readonly team: Option.Option<string>
}

/** A request the server refused, or could not be sent. */
export class ServerError extends Data.TaggedError("ServerError")<{
  readonly message: string
  /** The problem's `error_code` when the server answered one (`authentication_required`, …). */
  readonly errorCode?: string | undefined
}> {}

const describe = (server: string) => (error: unknown): ServerError => {
  const e = error as { readonly _tag?: string; readonly message?: string; readonly errorCode?: string }
  const message = e.message ?? String(error)
  if (e.errorCode !== undefined) {
    return new ServerError({ message: `the server answered ${e.errorCode}: ${message}`, errorCode: e.errorCode })
  }
  if (e._tag === "RequestError") return new ServerError({ message: `could not reach ${server}: ${message}` })
  return new ServerError({ message: `unexpected answer from ${server}: ${message}` })
}

/** The applier's target for a server. */
export const httpTarget = (connection: Connection) =>
  Effect.gen(function*() {
    const client = yield* HttpApiClient.make(Api.Api, {
      baseUrl: connection.server.replace(/\/+$/, ""),
      transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(Redacted.value(connection.token)))
    })
    const headers = Option.match(connection.team, {
      onNone: () => ({}),
      onSome: (team) => ({ [Security.TEAM_HEADER]: team })
    })
    const call = <A, E>(effect: Effect.Effect<A, E>) => Effect.mapError(effect, describe(connection.server))
    const target: DefinitionsApplier.DefinitionsTarget<ServerError> = {
      getGitHub: call(Effect.map(client.github.getGitHubConnection({ headers }), (r) => r.connection)),
      connectGitHub: (payload) => call(client.github.connectGitHub({ headers, payload })),
      listWebhooks: call(Effect.map(client.webhooks.listWebhooks({ headers }), (r) => r.webhooks)),
      createWebhook: (payload) => call(client.webhooks.createWebhook({ headers, payload })),
      patchWebhook: (uid, payload) => call(client.webhooks.updateWebhook({ headers, path: { uid }, payload })),
      listAutomations: call(Effect.map(client.automations.listAutomations({ headers }), (r) => r.automations)),
      createAutomation: (payload) => call(client.automations.createAutomation({ headers, payload })),
      updateAutomation: (id, payload) => call(client.automations.updateAutomation({ headers, path: { id }, payload })),
      secretProblem: (check) =>
        call(
          Effect.map(
            client.webhooks.checkWebhookSecret({ headers, payload: Definitions.checkWebhookSecretRequest(check) }),
            (r) => r.problem
          )
        ),
      listSecretNames: call(Effect.map(client.secrets.listSecrets({ headers }), (r) => r.secrets.map((secret) => secret.name))),
      listOutboundWebhooks: call(
        Effect.map(client.outboundWebhooks.listOutboundWebhooks({ headers }), (r) => r.outbound_webhooks)
      ),
      createOutboundWebhook: (payload) => call(client.outboundWebhooks.createOutboundWebhook({ headers, payload })),
      patchOutboundWebhook: (uid, payload) =>
        call(client.outboundWebhooks.updateOutboundWebhook({ headers, path: { uid }, payload })),
      rotateOutboundSecret: (uid, payload) =>
        call(client.outboundWebhooks.rotateOutboundWebhookSecret({ headers, path: { uid }, payload })),
      checkOutboundWebhook: (payload) => call(client.outboundWebhooks.checkOutboundWebhook({ headers, payload }))
    }
    return target
  }).pipe(Effect.provide(FetchHttpClient.layer))
