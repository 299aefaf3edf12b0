/** The admin API (instance administrators only): teams, principals, tokens. */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Identity } from "@agent-runs/core"
import { DeleteResponse } from "../Models.js"
import * as Problems from "../Problems.js"
import { Authentication } from "../Security.js"
import { doc } from "./Doc.js"
import * as P from "./Params.js"

/** The admin group: every endpoint answers 403 to callers that are not instance administrators. */
export class AdminGroup extends HttpApiGroup.make("admin")
  .add(
    HttpApiEndpoint.post("createTeam", "/admin/teams")
      .setPayload(Identity.CreateTeamRequest)
      .addSuccess(Identity.Team, { status: 201 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(doc("Create a team", "Features on and max_concurrent_runs 8 by default."))
  )
  .add(
    HttpApiEndpoint.get("listTeams", "/admin/teams")
      .addSuccess(Identity.ListTeamsResponse)
      .annotateContext(doc("List teams", "Every team of the instance."))
  )
  .add(
    HttpApiEndpoint.patch("updateTeam")`/admin/teams/${P.teamUid}`
      .setPayload(Identity.PatchTeamRequest)
      .addSuccess(Identity.Team)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(doc("Change a team", "features (metadata_filtering, scheduled_agents) and max_concurrent_runs."))
  )
  .add(
    HttpApiEndpoint.post("createPrincipal", "/admin/principals")
      .setPayload(Identity.CreatePrincipalRequest)
      .addSuccess(Identity.Principal, { status: 201 })
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(
        doc("Create a principal", "A user or service account with its team memberships; 404 for an unknown team.")
      )
  )
  .add(
    HttpApiEndpoint.post("createToken")`/admin/principals/${P.principalUid}/tokens`
      .setPayload(Identity.CreateTokenRequest)
      .addSuccess(Identity.CreateTokenResponse, { status: 201 })
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(doc("Create an API token", "The token (`ar_…`) is shown this once; only its hash is stored."))
  )
  .add(
    HttpApiEndpoint.del("revokeToken")`/admin/tokens/${P.tokenId}`
      .addSuccess(DeleteResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(doc("Revoke an API token", "Revocation is immediate."))
  )
  .middleware(Authentication)
  .annotateContext(doc("Admin", "Instance administration: teams, principals and API tokens."))
{}
