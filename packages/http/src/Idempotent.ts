/**
 * The creates that honour `Idempotency-Key` (core's Idempotency service): without the header the
 * work runs and answers as usual; with it, the work runs at most once per caller and key, and a
 * repeat of the request answers the stored status and body with `Idempotent-Replayed: true`.
 * A request is its method, URL, team and body as the API decoded it (as JSON text: the same
 * request however its JSON was spaced or ordered).
 */
import { type HttpApiEndpoint, type HttpApiGroup, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { type Access, Idempotency, IdempotencyKeys } from "@agent-runs/core"
import { Effect } from "effect"
import { type EndpointOf, successEncoder } from "./Respond.js"

const jsonAnswer = (answer: IdempotencyKeys.StoredAnswer, replayed: boolean) =>
  HttpServerResponse.text(answer.body, {
    status: answer.status,
    contentType: "application/json",
    headers: replayed ? { [IdempotencyKeys.REPLAYED_HEADER]: "true" } : {}
  })

/**
 * For `group`'s endpoint `name`: runs `work` (the endpoint's success value) for `viewer`, once per
 * `key` when a key was sent, and answers it encoded with the endpoint's success schema at its status.
 */
export const idempotent = Effect.map(Idempotency.Idempotency, (idempotency) =>
  <
    Group extends HttpApiGroup.HttpApiGroup.Any,
    Name extends HttpApiEndpoint.HttpApiEndpoint.Name<HttpApiGroup.HttpApiGroup.Endpoints<Group>>
  >(group: Group, name: Name) => {
    const { encode, status } = successEncoder(group, name)
    const answerOf = (value: unknown) =>
      Effect.map(encode(value), (body): IdempotencyKeys.StoredAnswer => ({ status, body: JSON.stringify(body) }))
    return <E, R>(
      viewer: Access.Viewer,
      request: { readonly key: string | undefined; readonly payload?: unknown },
      work: Effect.Effect<HttpApiEndpoint.HttpApiEndpoint.Success<EndpointOf<Group, Name>>, E, R>
    ) => {
      const answer = Effect.flatMap(work, answerOf)
      const key = request.key
      if (key === undefined) return Effect.map(answer, (stored) => jsonAnswer(stored, false))
      return Effect.gen(function*() {
        const http = yield* HttpServerRequest.HttpServerRequest
        const body = JSON.stringify(request.payload ?? null)
        const facts = { method: http.method, path: http.url, team_uid: viewer.team_uid, body }
        const once = yield* idempotency.once(viewer, key, facts, answer)
        return jsonAnswer(once.answer, once.replayed)
      })
    }
  })
