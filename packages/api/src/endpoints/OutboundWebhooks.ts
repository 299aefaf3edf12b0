/** Outbound webhooks: endpoints told of the team's runs' events, their secrets, delivery logs and redelivery. */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { OutboundWebhook } from "@agent-runs/core"
import { DeleteResponse, ListOutboundDeliveriesUrlParams, OverviewUrlParams } from "../Models.js"
import * as Problems from "../Problems.js"
import { Authentication, TeamHeaders } from "../Security.js"
import { doc } from "./Doc.js"
import * as P from "./Params.js"

const ADMINS = "Team admins only (an endpoint hears of every run of the team)."

/** The outbound webhooks group (team admins). */
export class OutboundWebhooksGroup extends HttpApiGroup.make("outboundWebhooks")
  .add(
    HttpApiEndpoint.post("createOutboundWebhook", "/agent/outbound-webhooks")
      .setHeaders(TeamHeaders)
      .setPayload(OutboundWebhook.CreateOutboundWebhookRequest)
      .addSuccess(OutboundWebhook.OutboundWebhookWithSecret, { status: 201 })
      .addError(Problems.Conflict, { status: 409 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(doc(
        "Create an outbound webhook",
        "Returns the endpoint with its signing secret (Standard Webhooks, `whsec_…`), shown this once; with " +
          "`secret_name`, it signs with that team secret's value instead (at least 24 bytes once decoded; 400 naming " +
          "`secret_name` otherwise) and `secret` is empty. 400 naming `url` for a URL deliveries may not reach (a " +
          "private address unless allowed, or a host that does not resolve). 409: the team already has " +
          `${OutboundWebhook.MAX_OUTBOUND_WEBHOOKS_PER_TEAM}, or one with this \`name\`. ${ADMINS}`
      ))
  )
  .add(
    HttpApiEndpoint.post("checkOutboundWebhook", "/agent/outbound-webhooks/check")
      .setHeaders(TeamHeaders)
      .setPayload(OutboundWebhook.CheckOutboundWebhookRequest)
      .addSuccess(OutboundWebhook.CheckOutboundWebhookResponse)
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(doc(
        "Check an outbound webhook's URL and team secret",
        "Whether `url` would be accepted now (deliveries may reach it) and whether the team secret `secret_name` " +
          "would do as its signing secret, as create checks them; creates nothing. Each problem is null when fine " +
          `or not asked. Used by \`agent-runs apply\` before applying any definition. ${ADMINS}`
      ))
  )
  .add(
    HttpApiEndpoint.get("listOutboundWebhooks", "/agent/outbound-webhooks")
      .setHeaders(TeamHeaders)
      .addSuccess(OutboundWebhook.ListOutboundWebhooksResponse)
      .annotateContext(doc("List outbound webhooks", `The team's endpoints, oldest first, without secrets. ${ADMINS}`))
  )
  .add(
    HttpApiEndpoint.get("getOutboundWebhook")`/agent/outbound-webhooks/${P.outboundWebhookUid}`
      .setHeaders(TeamHeaders)
      .addSuccess(OutboundWebhook.OutboundWebhook)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(doc("Get an outbound webhook", `Without its secret. ${ADMINS}`))
  )
  .add(
    HttpApiEndpoint.patch("updateOutboundWebhook")`/agent/outbound-webhooks/${P.outboundWebhookUid}`
      .setHeaders(TeamHeaders)
      .setPayload(OutboundWebhook.PatchOutboundWebhookRequest)
      .addSuccess(OutboundWebhook.OutboundWebhook)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(doc(
        "Change an outbound webhook",
        "name, url, events, filters, description, enabled (a null or absent key is left as it is; a name can be " +
          "changed, 409 when taken, not removed). Turning it off fails its pending deliveries; turning it on " +
          `clears disabled_reason (redeliver what failed meanwhile). ${ADMINS}`
      ))
  )
  .add(
    HttpApiEndpoint.del("deleteOutboundWebhook")`/agent/outbound-webhooks/${P.outboundWebhookUid}`
      .setHeaders(TeamHeaders)
      .addSuccess(DeleteResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(doc("Delete an outbound webhook", `With its delivery log; nothing more is sent to it. ${ADMINS}`))
  )
  .add(
    HttpApiEndpoint.post("rotateOutboundWebhookSecret")`/agent/outbound-webhooks/${P.outboundWebhookUid}/rotate-secret`
      .setHeaders(TeamHeaders)
      .setPayload(OutboundWebhook.RotateOutboundSecretRequest)
      .addSuccess(OutboundWebhook.OutboundWebhookWithSecret)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(doc(
        "Rotate an outbound webhook's secret",
        "The new secret is shown once (with `secret_name`, it is that team secret's value, not shown). Until " +
          "`previous_secret_expires_at` (`overlap_seconds` from now, a day unless asked, 0 to 7 days) each delivery " +
          `carries a signature by each secret. ${ADMINS}`
      ))
  )
  .add(
    HttpApiEndpoint.get("listOutboundDeliveries")`/agent/outbound-webhooks/${P.outboundWebhookUid}/deliveries`
      .setHeaders(TeamHeaders)
      .setUrlParams(ListOutboundDeliveriesUrlParams)
      .addSuccess(OutboundWebhook.ListOutboundDeliveriesResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(doc(
        "List an outbound webhook's deliveries",
        `Newest first, cursor-paginated, optionally of one state: each with its latest try's status, latency and response excerpt. ${ADMINS}`
      ))
  )
  .add(
    HttpApiEndpoint.post("redeliverOutboundDelivery")`/agent/outbound-webhooks/${P.outboundWebhookUid}/deliveries/${P.outboundDeliveryId}/redeliver`
      .setHeaders(TeamHeaders)
      .addSuccess(OutboundWebhook.RedeliverResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(doc(
        "Redeliver one delivery",
        `Queues it again, due now, with a fresh retry period (a pending one is left as it is). Same webhook-id. ${ADMINS}`
      ))
  )
  .add(
    HttpApiEndpoint.post("redeliverOutboundWebhook")`/agent/outbound-webhooks/${P.outboundWebhookUid}/redeliver`
      .setHeaders(TeamHeaders)
      .setPayload(OutboundWebhook.RedeliverRequest)
      .addSuccess(OutboundWebhook.RedeliverResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(doc(
        "Redeliver what failed",
        `Queues again every failed delivery created at or after \`since\`, in their order; answers how many. ${ADMINS}`
      ))
  )
  .add(
    HttpApiEndpoint.get("getOutboundWebhookHealth", "/agent/team/outbound-webhook-health")
      .setHeaders(TeamHeaders)
      .setUrlParams(OverviewUrlParams)
      .addSuccess(OutboundWebhook.OutboundHealthResponse)
      .annotateContext(doc(
        "Outbound webhooks' delivery health",
        "Each endpoint's deliveries created in the last `hours` hours (24 unless given, 1 to 168), by their state now: " +
          `delivered, failed, pending; with whether it is on and why the service turned it off. ${ADMINS}`
      ))
  )
  .middleware(Authentication)
  .annotateContext(doc(
    "Outbound webhooks",
    "Endpoints told of the team's runs' events (created, state changed, ended), signed in the Standard Webhooks format."
  ))
{}
