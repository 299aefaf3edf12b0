/** Custom webhooks (management, not ingress): CRUD, secret rotation, delivery log. */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Webhook } from "@agent-runs/core"
import { DeleteResponse, ListDeliveriesUrlParams } from "../Models.js"
import * as Problems from "../Problems.js"
import { Authentication, TeamHeaders } from "../Security.js"
import { doc } from "./Doc.js"
import * as P from "./Params.js"

/** The webhooks group (managing webhooks needs the team admin role). */
export class WebhooksGroup extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.post("createWebhook", "/agent/webhooks")
      .setHeaders(TeamHeaders)
      .setPayload(Webhook.CreateWebhookRequest)
      .addSuccess(Webhook.WebhookWithSecret, { status: 201 })
      .addError(Problems.Conflict, { status: 409 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(
        doc(
          "Create a webhook",
          "Returns the webhook with its secret, shown this once. 409 conflict: the team already has 20 webhooks."
        )
      )
  )
  .add(
    HttpApiEndpoint.post("checkWebhookSecret", "/agent/webhooks/check-secret")
      .setHeaders(TeamHeaders)
      .setPayload(Webhook.CheckWebhookSecretRequest)
      .addSuccess(Webhook.CheckWebhookSecretResponse)
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(
        doc(
          "Check a team secret for a webhook",
          "Whether the named team secret would do as the credential (`secret_name`) of a webhook with this " +
            "`auth_mode` and `signature_scheme`: it exists and its value has the right form (URL-safe for " +
            "url_token, ...). Creates nothing; `problem` says what is wrong. Team admins only. Used by " +
            "`agent-runs apply` to check definitions before applying any."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("listWebhooks", "/agent/webhooks")
      .setHeaders(TeamHeaders)
      .addSuccess(Webhook.ListWebhooksResponse)
      .annotateContext(doc("List webhooks", "The team's webhooks, without secrets."))
  )
  .add(
    HttpApiEndpoint.get("getWebhook")`/agent/webhooks/${P.webhookUid}`
      .setHeaders(TeamHeaders)
      .addSuccess(Webhook.Webhook)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(doc("Get a webhook", "Without its secret."))
  )
  .add(
    HttpApiEndpoint.patch("updateWebhook")`/agent/webhooks/${P.webhookUid}`
      .setHeaders(TeamHeaders)
      .setPayload(Webhook.PatchWebhookRequest)
      .addSuccess(Webhook.Webhook)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .addError(Problems.Conflict, { status: 409 })
      .annotateContext(
        doc(
          "Change a webhook",
          "name, enabled, delivery_id_header (null clears it). A disabled webhook answers senders 404 at once."
        )
      )
  )
  .add(
    HttpApiEndpoint.del("deleteWebhook")`/agent/webhooks/${P.webhookUid}`
      .setHeaders(TeamHeaders)
      .addSuccess(DeleteResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .annotateContext(
        doc("Delete a webhook", "Senders get 404 at once; automations that select it stay but stop firing.")
      )
  )
  .add(
    HttpApiEndpoint.post("rotateWebhookSecret")`/agent/webhooks/${P.webhookUid}/rotate-secret`
      .setHeaders(TeamHeaders)
      .addSuccess(Webhook.WebhookWithSecret)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .addError(Problems.OperationNotSupported, { status: 422 })
      .annotateContext(doc(
          "Rotate a webhook's secret",
          "The new secret is shown once; the old one stops at once. 422 for a webhook whose credential is a team " +
            "secret (`secret_name`): change the secret and toggle the webhook off and on instead."
        ))
  )
  .add(
    HttpApiEndpoint.get("listWebhookDeliveries")`/agent/webhooks/${P.webhookUid}/deliveries`
      .setHeaders(TeamHeaders)
      .setUrlParams(ListDeliveriesUrlParams)
      .addSuccess(Webhook.ListDeliveriesResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(
        doc(
          "List a webhook's deliveries",
          "Newest first, cursor-paginated; accepted and duplicate deliveries: at least the newest 50 and 7 days kept " +
            "(up to the server's cap); rejected ones: only the newest 20. `counts`: every delivery logged, by outcome."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("getWebhookDelivery")`/agent/webhooks/${P.webhookUid}/deliveries/${P.deliveryId}`
      .setHeaders(TeamHeaders)
      .addSuccess(Webhook.Delivery)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(doc("Get a delivery", "With its stored payload when it was ACCEPTED."))
  )
  .middleware(Authentication)
  .annotateContext(doc("Webhooks", "Custom webhooks that start automation runs, and their delivery logs."))
{}
