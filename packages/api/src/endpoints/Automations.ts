/** Automations: a prompt started by webhook deliveries matching a payload filter. */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Automation } from "@agent-runs/core"
import { DeleteResponse } from "../Models.js"
import * as Problems from "../Problems.js"
import { Authentication, TeamHeaders } from "../Security.js"
import { doc } from "./Doc.js"
import * as P from "./Params.js"

/** The automations group (managing automations needs the team admin role). */
export class AutomationsGroup extends HttpApiGroup.make("automations")
  .add(
    HttpApiEndpoint.post("createAutomation", "/agent/automations")
      .setHeaders(TeamHeaders)
      .setPayload(Automation.CreateAutomationRequest)
      .addSuccess(Automation.Automation, { status: 201 })
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .addError(Problems.Conflict, { status: 409 })
      .annotateContext(
        doc(
          "Create an automation",
          "Its webhook trigger names webhook uids of the team; 400 for an unknown webhook or an invalid payload " +
            "filter (the `error` names the field or the filter's path); 409 for a name already used in the team."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("listAutomations", "/agent/automations")
      .setHeaders(TeamHeaders)
      .addSuccess(Automation.ListAutomationsResponse)
      .annotateContext(doc("List automations", "The team's automations."))
  )
  .add(
    HttpApiEndpoint.get("getAutomation")`/agent/automations/${P.automationId}`
      .setHeaders(TeamHeaders)
      .addSuccess(Automation.Automation)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(doc("Get an automation", "404 when unknown or not visible."))
  )
  .add(
    HttpApiEndpoint.put("updateAutomation")`/agent/automations/${P.automationId}`
      .setHeaders(TeamHeaders)
      .setPayload(Automation.UpdateAutomationRequest)
      .addSuccess(Automation.Automation)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .addError(Problems.Conflict, { status: 409 })
      .annotateContext(doc("Replace an automation", "Every field except agent_config (kept when omitted) is required."))
  )
  .add(
    HttpApiEndpoint.del("deleteAutomation")`/agent/automations/${P.automationId}`
      .setHeaders(TeamHeaders)
      .addSuccess(DeleteResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(doc("Delete an automation", "Runs it started are kept."))
  )
  .add(
    HttpApiEndpoint.post("testAutomationFilter")`/agent/automations/${P.automationId}/test-filter`
      .setHeaders(TeamHeaders)
      .setPayload(Automation.TestFilterRequest)
      .addSuccess(Automation.TestFilterResult)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(
        doc(
          "Test an automation's filter",
          "Whether a stored delivery (`delivery_id`), or a pasted body (`payload`, any JSON value), would start a run " +
            "(WOULD_TRIGGER or WOULD_NOT_TRIGGER) and why. Exactly one of delivery_id and payload (400 naming the field " +
            "otherwise); a payload over 256 KiB as compact JSON (the webhook body limit) is a 413. " +
            "A pasted payload is read as an accepted delivery of a selected webhook: only the filter decides. 404: " +
            "unknown automation or delivery."
        )
      )
  )
  .middleware(Authentication)
  .annotateContext(doc("Automations", "Prompts started by webhook deliveries that match a payload filter."))
{}
