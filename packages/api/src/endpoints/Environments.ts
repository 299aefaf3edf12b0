/** Environments: where runs execute (image, repositories, setup commands, harness). */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Environment } from "@agent-runs/core"
import { DeleteResponse, ListEnvironmentsUrlParams } from "../Models.js"
import * as Problems from "../Problems.js"
import { Authentication, TeamHeaders } from "../Security.js"
import { doc } from "./Doc.js"
import * as P from "./Params.js"

/** The environments group. */
export class EnvironmentsGroup extends HttpApiGroup.make("environments")
  .add(
    HttpApiEndpoint.get("listEnvironments", "/agent/environments")
      .setHeaders(TeamHeaders)
      .setUrlParams(ListEnvironmentsUrlParams)
      .addSuccess(Environment.ListEnvironmentsResponse)
      .annotateContext(
        doc(
          "List environments",
          "Environments the caller owns, was granted guest access to, or reached via link sharing."
        )
      )
  )
  .add(
    HttpApiEndpoint.post("createEnvironment", "/agent/environments")
      .setHeaders(TeamHeaders)
      .setPayload(Environment.CreateEnvironmentRequest)
      .addSuccess(Environment.Environment, { status: 201 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(doc("Create an environment", "`team: true` gives it Team scope (default: User)."))
  )
  .add(
    HttpApiEndpoint.get("getEnvironment")`/agent/environments/${P.environmentUid}`
      .setHeaders(TeamHeaders)
      .addSuccess(Environment.Environment)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(doc("Get an environment", "404 when unknown or not visible to the caller."))
  )
  .add(
    HttpApiEndpoint.put("updateEnvironment")`/agent/environments/${P.environmentUid}`
      .setHeaders(TeamHeaders)
      .setPayload(Environment.UpdateEnvironmentRequest)
      .addSuccess(Environment.Environment)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(doc("Replace an environment's configuration", "Sharing is kept when omitted."))
  )
  .add(
    HttpApiEndpoint.del("deleteEnvironment")`/agent/environments/${P.environmentUid}`
      .setHeaders(TeamHeaders)
      .addSuccess(DeleteResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(doc("Delete an environment", "Runs that used it keep their history."))
  )
  .middleware(Authentication)
  .annotateContext(doc("Environments", "Where runs execute: image, repositories, setup commands, harness."))
{}
