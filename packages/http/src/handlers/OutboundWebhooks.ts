/** Handlers of the outbound webhooks group. */
import { HttpApiBuilder } from "@effect/platform"
import { OutboundWebhooks, RunOverview } from "@agent-runs/core"
import { Effect } from "effect"
import { Api } from "@agent-runs/api/Api"
import { DeleteResponse } from "@agent-runs/api/Models"
import { CurrentViewer } from "@agent-runs/api/Security"

export const OutboundWebhooksLive = HttpApiBuilder.group(Api, "outboundWebhooks", (handlers) =>
  Effect.map(OutboundWebhooks.OutboundWebhooks, (hooks) =>
    handlers
      .handle("createOutboundWebhook", ({ payload }) => Effect.flatMap(CurrentViewer, (v) => hooks.create(v, payload)))
      .handle("checkOutboundWebhook", ({ payload }) => Effect.flatMap(CurrentViewer, (v) => hooks.check(v, payload)))
      .handle("listOutboundWebhooks", () => Effect.flatMap(CurrentViewer, (v) => hooks.list(v)))
      .handle("getOutboundWebhook", ({ path }) => Effect.flatMap(CurrentViewer, (v) => hooks.get(v, path.uid)))
      .handle("updateOutboundWebhook", ({ path, payload }) =>
        Effect.flatMap(CurrentViewer, (v) => hooks.patch(v, path.uid, payload)))
      .handle("deleteOutboundWebhook", ({ path }) =>
        Effect.flatMap(CurrentViewer, (v) => hooks.remove(v, path.uid)).pipe(Effect.as(new DeleteResponse({ success: true }))))
      .handle("rotateOutboundWebhookSecret", ({ path, payload }) =>
        Effect.flatMap(CurrentViewer, (v) => hooks.rotateSecret(v, path.uid, payload)))
      .handle("listOutboundDeliveries", ({ path, urlParams }) =>
        Effect.flatMap(CurrentViewer, (v) => hooks.deliveries(v, path.uid, urlParams)))
      .handle("redeliverOutboundDelivery", ({ path }) =>
        Effect.flatMap(CurrentViewer, (v) => hooks.redeliver(v, path.uid, path.delivery_id)))
      .handle("redeliverOutboundWebhook", ({ path, payload }) =>
        Effect.flatMap(CurrentViewer, (v) => hooks.redeliverFailed(v, path.uid, payload.since)))
      .handle("getOutboundWebhookHealth", ({ urlParams }) =>
        Effect.flatMap(CurrentViewer, (v) => hooks.health(v, urlParams.hours ?? RunOverview.DEFAULT_OVERVIEW_HOURS)))))
