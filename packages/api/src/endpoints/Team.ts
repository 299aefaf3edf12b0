/** A team's members, service accounts and their tokens, managed by the team's admins (no instance administrator needed). */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Budget, Budgets, Identity, Retention, RunOverview } from "@agent-runs/core"
import { DeleteResponse, OverviewUrlParams, PrincipalPageUrlParams, SpendUrlParams } from "../Models.js"
import * as Problems from "../Problems.js"
import { Authentication, TeamHeaders } from "../Security.js"
import { doc } from "./Doc.js"
import * as P from "./Params.js"

const ADMINS = "Admins of the team (X-Team-Uid) and instance administrators; never a run token."

/** The team group: every endpoint acts in the team of the request only. */
export class TeamGroup extends HttpApiGroup.make("team")
  .add(
    HttpApiEndpoint.get("listTeamMembers", "/agent/team/members")
      .setHeaders(TeamHeaders)
      .setUrlParams(PrincipalPageUrlParams)
      .addSuccess(Identity.ListTeamMembersResponse)
      .annotateContext(doc("List the team's members", `${ADMINS} In uid order, a page at a time.`))
  )
  .add(
    HttpApiEndpoint.put("setTeamMember")`/agent/team/members/${P.memberUid}`
      .setHeaders(TeamHeaders)
      .setPayload(Identity.SetMembershipRequest)
      .addSuccess(Identity.TeamMember)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .annotateContext(
        doc(
          "Add a member or change its role",
          `${ADMINS} Names an existing principal by uid; a team admin adds users only (not another team's service accounts). ` +
            "Answers the member as the team sees it. 409 when the team would be left without an admin."
        )
      )
  )
  .add(
    HttpApiEndpoint.del("removeTeamMember")`/agent/team/members/${P.memberUid}`
      .setHeaders(TeamHeaders)
      .addSuccess(DeleteResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .annotateContext(doc("Remove a member", `${ADMINS} 409 when the team would be left without an admin.`))
  )
  .add(
    HttpApiEndpoint.post("createServiceAccount", "/agent/team/service-accounts")
      .setHeaders(TeamHeaders)
      .setPayload(Identity.CreateServiceAccountRequest)
      .addSuccess(Identity.TeamMember, { status: 201 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(doc("Create a service account", `${ADMINS} A member of this team only, with a role no higher than the caller's.`))
  )
  .add(
    HttpApiEndpoint.del("deleteServiceAccount")`/agent/team/service-accounts/${P.memberUid}`
      .setHeaders(TeamHeaders)
      .addSuccess(DeleteResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .annotateContext(doc("Delete a service account", `${ADMINS} Only one that is a member of no other team (409 otherwise).`))
  )
  .add(
    HttpApiEndpoint.post("createServiceAccountToken")`/agent/team/service-accounts/${P.memberUid}/tokens`
      .setHeaders(TeamHeaders)
      .setPayload(Identity.CreateTokenRequest)
      .addSuccess(Identity.CreateTokenResponse, { status: 201 })
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(
        doc("Create a service account's token", `${ADMINS} Always limited to this team; \`max_role\` no higher than the caller's role. Shown once.`)
      )
  )
  .add(
    HttpApiEndpoint.get("listServiceAccountTokens")`/agent/team/service-accounts/${P.memberUid}/tokens`
      .setHeaders(TeamHeaders)
      .addSuccess(Identity.ListTokensResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(doc("List a service account's tokens", `${ADMINS} Only its tokens limited to this team, newest first.`))
  )
  .add(
    HttpApiEndpoint.del("revokeTeamToken")`/agent/team/tokens/${P.tokenId}`
      .setHeaders(TeamHeaders)
      .addSuccess(DeleteResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(doc("Revoke a token limited to the team", `${ADMINS} Immediate; any other token is a 404.`))
  )
  .add(
    HttpApiEndpoint.get("getTeamBudgets", "/agent/team/budgets")
      .setHeaders(TeamHeaders)
      .addSuccess(Budget.TeamBudgets)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(
        doc("Get the team's budgets", "Anyone acting in the team. The defaults of its runs' `max_cost_usd` and `max_turns`, and the ceilings over them.")
      )
  )
  .add(
    HttpApiEndpoint.put("setTeamBudgets", "/agent/team/budgets")
      .setHeaders(TeamHeaders)
      .setPayload(Budget.TeamBudgets)
      .addSuccess(Budget.TeamBudgets)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(
        doc(
          "Set the team's budgets",
          `${ADMINS} Replaces all four values (an absent key removes it); a default above its ceiling is a 400. ` +
            "Applies to runs created afterwards: a run's budget is fixed when it is created (docs/budgets.md)."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("getTeamRetention", "/agent/team/retention")
      .setHeaders(TeamHeaders)
      .addSuccess(Retention.TeamRetentionResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(
        doc(
          "Get the team's retention",
          "Anyone acting in the team. How many days its ended runs (`run_days`) and its webhook deliveries with their payloads " +
            "(`webhook_delivery_days`) are kept: the team's own setting, the server's ceilings, and what applies (the shorter). " +
            "An absent key: no limit at that level (docs/retention.md)."
        )
      )
  )
  .add(
    HttpApiEndpoint.put("setTeamRetention", "/agent/team/retention")
      .setHeaders(TeamHeaders)
      .setPayload(Retention.TeamRetention)
      .addSuccess(Retention.TeamRetentionResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(
        doc(
          "Set the team's retention",
          `${ADMINS} Replaces both values (an absent key removes the team's limit); a value above the server's ceiling is a 400. ` +
            "The sweep removes what is past it within the hour, for good: runs with their timeline, conversation, transcript, " +
            "artifacts and agent state, deliveries with their payloads (docs/retention.md)."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("getTeamSpend", "/agent/team/spend")
      .setHeaders(TeamHeaders)
      .setUrlParams(SpendUrlParams)
      .addSuccess(Budgets.TeamSpendResponse)
      .annotateContext(
        doc(
          "What the team's runs spent, by day",
          "Anyone acting in the team. The cost (US dollars, as the agents reported it) and tokens of the runs created on each UTC day " +
            "of the window (today included), days without runs left out."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("getTeamOverview", "/agent/team/overview")
      .setHeaders(TeamHeaders)
      .setUrlParams(OverviewUrlParams)
      .addSuccess(RunOverview.TeamOverviewResponse)
      .annotateContext(
        doc(
          "What the team's runs did, hour by hour",
          "Anyone acting in the team, over the runs it may see (as the run list). Over the last `hours` UTC hours (the current " +
            "one included): per hour, the runs created in it by their state now, with percentiles of the wait from creation to " +
            "the agent's start and of durations; the same percentiles over the window. `truncated`: more runs were created in " +
            "the window than are read (20,000), the figures cover the newest."
        )
      )
  )
  .middleware(Authentication)
  .annotateContext(doc("Team", "The team's members, service accounts and their tokens, for the team's admins; its budgets, retention, spend and overview."))
{}
