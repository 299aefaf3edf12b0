/** Handlers of the webhooks group (management; the ingress is served beside the API). */
import { HttpApiBuilder } from "@effect/platform"
import { Webhooks } from "@agent-runs/core"
import { Effect } from "effect"
import { Api } from "@agent-runs/api/Api"
import { DeleteResponse } from "@agent-runs/api/Models"
import { CurrentViewer } from "@agent-runs/api/Security"

export const WebhooksLive = HttpApiBuilder.group(Api, "webhooks", (handlers) =>
  Effect.map(Webhooks.Webhooks, (webhooks) =>
    handlers
      .handle("createWebhook", ({ payload }) => Effect.flatMap(CurrentViewer, (v) => webhooks.create(v, payload)))
      .handle("checkWebhookSecret", ({ payload }) =>
        Effect.flatMap(CurrentViewer, (v) => webhooks.checkSecret(v, payload)))
      .handle("listWebhooks", () => Effect.flatMap(CurrentViewer, (v) => webhooks.list(v)))
      .handle("getWebhook", ({ path }) => Effect.flatMap(CurrentViewer, (v) => webhooks.get(v, path.uid)))
      .handle("updateWebhook", ({ path, payload }) =>
        Effect.flatMap(CurrentViewer, (v) => webhooks.patch(v, path.uid, payload)))
      .handle("deleteWebhook", ({ path }) =>
        Effect.flatMap(CurrentViewer, (v) => webhooks.remove(v, path.uid)).pipe(
          Effect.as(new DeleteResponse({ success: true }))
        ))
      .handle("rotateWebhookSecret", ({ path }) =>
        Effect.flatMap(CurrentViewer, (v) => webhooks.rotateSecret(v, path.uid)))
      .handle("listWebhookDeliveries", ({ path, urlParams }) =>
        Effect.flatMap(CurrentViewer, (v) => webhooks.deliveries(v, path.uid, urlParams)))
      .handle("getWebhookDelivery", ({ path }) =>
        Effect.flatMap(CurrentViewer, (v) => webhooks.delivery(v, path.uid, path.delivery_id)))))
