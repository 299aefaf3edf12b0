/** Handlers of the team group: the team of the request's members, service accounts and tokens (core's `TeamMembers`, `Tokens`). */
import { HttpApiBuilder } from "@effect/platform"
import { Budgets, Identity, Overview, RunOverview, TeamMembers, TeamRetention, Tokens } from "@agent-runs/core"
import { Effect } from "effect"
import { Api } from "@agent-runs/api/Api"
import { DeleteResponse } from "@agent-runs/api/Models"
import { CurrentViewer } from "@agent-runs/api/Security"

const deleted = Effect.as(new DeleteResponse({ success: true }))

export const TeamLive = HttpApiBuilder.group(Api, "team", (handlers) =>
  Effect.gen(function*() {
    const members = yield* TeamMembers.TeamMembers
    const tokens = yield* Tokens.Tokens
    const budgets = yield* Budgets.Budgets
    const overview = yield* Overview.Overview
    const retention = yield* TeamRetention.Retention
    return handlers
      .handle("listTeamMembers", ({ urlParams }) =>
        Effect.flatMap(CurrentViewer, (v) =>
          members.list(v, v.team_uid, { after: urlParams.cursor, limit: urlParams.limit ?? Identity.PRINCIPAL_PAGE_LIMIT.default })))
      .handle("setTeamMember", ({ path, payload }) =>
        Effect.flatMap(CurrentViewer, (v) =>
          Effect.map(members.setRole(v, v.team_uid, path.principal_uid, payload.role), (p) => Identity.teamMemberOf(p, v.team_uid))))
      .handle("removeTeamMember", ({ path }) =>
        Effect.flatMap(CurrentViewer, (v) => members.remove(v, v.team_uid, path.principal_uid)).pipe(deleted))
      .handle("createServiceAccount", ({ payload }) =>
        Effect.flatMap(CurrentViewer, (v) => Effect.map(members.createServiceAccount(v, payload), (p) => Identity.teamMemberOf(p, v.team_uid))))
      .handle("deleteServiceAccount", ({ path }) =>
        Effect.flatMap(CurrentViewer, (v) => members.deleteServiceAccount(v, path.principal_uid)).pipe(deleted))
      .handle("createServiceAccountToken", ({ path, payload }) =>
        Effect.flatMap(CurrentViewer, (v) => tokens.createInTeam(v, path.principal_uid, payload)))
      .handle("listServiceAccountTokens", ({ path }) => Effect.flatMap(CurrentViewer, (v) => tokens.listInTeam(v, path.principal_uid)))
      .handle("revokeTeamToken", ({ path }) => Effect.flatMap(CurrentViewer, (v) => tokens.revokeInTeam(v, path.token_id)).pipe(deleted))
      .handle("getTeamBudgets", () => Effect.flatMap(CurrentViewer, (v) => budgets.get(v)))
      .handle("setTeamBudgets", ({ payload }) => Effect.flatMap(CurrentViewer, (v) => budgets.set(v, payload)))
      .handle("getTeamRetention", () => Effect.flatMap(CurrentViewer, (v) => retention.get(v)))
      .handle("setTeamRetention", ({ payload }) => Effect.flatMap(CurrentViewer, (v) => retention.set(v, payload)))
      .handle("getTeamSpend", ({ urlParams }) =>
        Effect.flatMap(CurrentViewer, (v) => budgets.spend(v, urlParams.days ?? Budgets.DEFAULT_SPEND_DAYS)))
      .handle("getTeamOverview", ({ urlParams }) =>
        Effect.flatMap(CurrentViewer, (v) => overview.get(v, urlParams.hours ?? RunOverview.DEFAULT_OVERVIEW_HOURS)))
  }))
