/** The admin API (instance administrators only): teams, principals, tokens. */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { ErasureRequest, Identity } from "@agent-runs/core"
import { DeleteResponse, ListPrincipalsUrlParams } from "../Models.js"
import { IdempotentHeaders } from "../Idempotency.js"
import * as Problems from "../Problems.js"
import { Authentication } from "../Security.js"
import { doc } from "./Doc.js"
import * as P from "./Params.js"

/** The admin group: every endpoint answers 403 to callers that are not instance administrators. */
export class AdminGroup extends HttpApiGroup.make("admin")
  .add(
    HttpApiEndpoint.post("createTeam", "/admin/teams")
      .setHeaders(IdempotentHeaders)
      .setPayload(Identity.CreateTeamRequest)
      .addSuccess(Identity.Team, { status: 201 })
      .addError(Problems.Conflict, { status: 409 })
      .addError(Problems.OperationNotSupported, { status: 422 })
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
      .annotateContext(doc("Change a team", "features (metadata_filtering, scheduled_agents), max_concurrent_runs and share_weight (1 to 100: the team's weight in fair share across teams)."))
  )
  .add(
    HttpApiEndpoint.post("createPrincipal", "/admin/principals")
      .setHeaders(IdempotentHeaders)
      .setPayload(Identity.CreatePrincipalRequest)
      .addSuccess(Identity.Principal, { status: 201 })
      .addError(Problems.Conflict, { status: 409 })
      .addError(Problems.OperationNotSupported, { status: 422 })
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(
        doc("Create a principal", "A user or service account with its team memberships; 404 for an unknown team.")
      )
  )
  .add(
    HttpApiEndpoint.get("listPrincipals", "/admin/principals")
      .setUrlParams(ListPrincipalsUrlParams)
      .addSuccess(Identity.ListPrincipalsResponse)
      .annotateContext(
        doc("List principals", "Users and service accounts (not deleted ones), in uid order; `team_uid` lists one team's members.")
      )
  )
  .add(
    HttpApiEndpoint.get("getPrincipal")`/admin/principals/${P.principalUid}`
      .addSuccess(Identity.Principal)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(doc("Read a principal", "With its memberships and whether it is disabled; a deleted principal is a 404."))
  )
  .add(
    HttpApiEndpoint.patch("updatePrincipal")`/admin/principals/${P.principalUid}`
      .setPayload(Identity.PatchPrincipalRequest)
      .addSuccess(Identity.Principal)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(
        doc(
          "Change a principal",
          "display_name, instance_admin, disabled (a disabled principal's tokens and its runs' tokens stop working at " +
            "once; enabling restores them). 409 when no active instance administrator would be left."
        )
      )
  )
  .add(
    HttpApiEndpoint.del("deletePrincipal")`/admin/principals/${P.principalUid}`
      .addSuccess(DeleteResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .annotateContext(
        doc(
          "Delete a principal",
          "Its tokens are revoked and its memberships removed at once; runs and audit entries keep its name. Cannot be undone."
        )
      )
  )
  .add(
    HttpApiEndpoint.post("erasePrincipal")`/admin/principals/${P.principalUid}/erase`
      .setPayload(ErasureRequest.EraseRequest)
      .addSuccess(ErasureRequest.EraseResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .annotateContext(
        doc(
          "Erase a principal's personal data",
          "Deletes the principal when it is not yet, replaces its name with `erased principal`, forgets its email and sign-in " +
            "link; the runs it created, in every team, are deleted for good (`runs: delete`) or kept with its name replaced " +
            "(`runs: anonymize`). 409 while one of those runs is live (cancel them first). Repeating it is harmless " +
            "(docs/retention.md#erasing-a-principal)."
        )
      )
  )
  .add(
    HttpApiEndpoint.put("setMembership")`/admin/principals/${P.principalUid}/memberships/${P.membershipTeamUid}`
      .setPayload(Identity.SetMembershipRequest)
      .addSuccess(Identity.Principal)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .annotateContext(
        doc("Set a principal's role in a team", "Adds the membership when new. 409 when the team would be left without an admin.")
      )
  )
  .add(
    HttpApiEndpoint.del("removeMembership")`/admin/principals/${P.principalUid}/memberships/${P.membershipTeamUid}`
      .addSuccess(DeleteResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .annotateContext(doc("Remove a principal from a team", "409 when the team would be left without an admin."))
  )
  .add(
    HttpApiEndpoint.post("createToken")`/admin/principals/${P.principalUid}/tokens`
      .setPayload(Identity.CreateTokenRequest)
      .addSuccess(Identity.CreateTokenResponse, { status: 201 })
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(
        doc(
          "Create an API token",
          "The token (`ar_…`) is shown this once; only its hash is stored (so this create takes no Idempotency-Key). " +
            "Optional: `expires_at`, `team_uid` (it acts " +
            "only there), `max_role` (it acts with at most that role); a limited token never opens the admin API."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("listTokens")`/admin/principals/${P.principalUid}/tokens`
      .addSuccess(Identity.ListTokensResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(
        doc("List a principal's tokens", `Newest first, at most ${Identity.MAX_LISTED_TOKENS}, revoked and expired ones included; never the token.`)
      )
  )
  .add(
    HttpApiEndpoint.del("revokeToken")`/admin/tokens/${P.tokenId}`
      .addSuccess(DeleteResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(doc("Revoke an API token", "Revocation is immediate."))
  )
  .middleware(Authentication)
  .annotateContext(doc("Admin", "Instance administration: teams, principals, memberships and API tokens."))
{}
