/** Handlers of the admin API (instance administrators only; core's services check). */
import { HttpApiBuilder } from "@effect/platform"
import { Erasure, Identities, Identity, Principals, TeamMembers, Tokens } from "@agent-runs/core"
import { Effect } from "effect"
import { Api } from "@agent-runs/api/Api"
import { DeleteResponse } from "@agent-runs/api/Models"
import { AdminGroup } from "@agent-runs/api/endpoints/Admin"
import { CurrentViewer } from "@agent-runs/api/Security"
import { idempotent } from "../Idempotent.js"

const deleted = Effect.as(new DeleteResponse({ success: true }))

export const AdminLive = HttpApiBuilder.group(Api, "admin", (handlers) =>
  Effect.gen(function*() {
    const identities = yield* Identities.Identities
    const principals = yield* Principals.Principals
    const erasure = yield* Erasure.Erasure
    const members = yield* TeamMembers.TeamMembers
    const tokens = yield* Tokens.Tokens
    const once = yield* idempotent
    const teamCreated = once(AdminGroup, "createTeam")
    const principalCreated = once(AdminGroup, "createPrincipal")
    return handlers
      .handle("createTeam", ({ headers, payload }) =>
        Effect.flatMap(CurrentViewer, (v) => teamCreated(v, { key: headers["idempotency-key"], payload }, identities.createTeam(v, payload))))
      .handle("listTeams", () => Effect.flatMap(CurrentViewer, (v) => identities.listTeams(v)))
      .handle("updateTeam", ({ path, payload }) =>
        Effect.flatMap(CurrentViewer, (v) => identities.updateTeam(v, path.uid, payload)))
      .handle("createPrincipal", ({ headers, payload }) =>
        Effect.flatMap(CurrentViewer, (v) =>
          principalCreated(v, { key: headers["idempotency-key"], payload }, identities.createPrincipal(v, payload))))
      .handle("listPrincipals", ({ urlParams }) =>
        Effect.flatMap(CurrentViewer, (v) =>
          principals.list(v, {
            team_uid: urlParams.team_uid,
            after: urlParams.cursor,
            limit: urlParams.limit ?? Identity.PRINCIPAL_PAGE_LIMIT.default
          })))
      .handle("getPrincipal", ({ path }) => Effect.flatMap(CurrentViewer, (v) => principals.get(v, path.uid)))
      .handle("updatePrincipal", ({ path, payload }) =>
        Effect.flatMap(CurrentViewer, (v) => principals.update(v, path.uid, payload)))
      .handle("deletePrincipal", ({ path }) => Effect.flatMap(CurrentViewer, (v) => principals.remove(v, path.uid)).pipe(deleted))
      .handle("erasePrincipal", ({ path, payload }) => Effect.flatMap(CurrentViewer, (v) => erasure.erase(v, path.uid, payload)))
      .handle("setMembership", ({ path, payload }) =>
        Effect.flatMap(CurrentViewer, (v) => members.setRole(v, path.team_uid, path.uid, payload.role)))
      .handle("removeMembership", ({ path }) =>
        Effect.flatMap(CurrentViewer, (v) => members.remove(v, path.team_uid, path.uid)).pipe(deleted))
      .handle("createToken", ({ path, payload }) => Effect.flatMap(CurrentViewer, (v) => tokens.create(v, path.uid, payload)))
      .handle("listTokens", ({ path }) => Effect.flatMap(CurrentViewer, (v) => tokens.list(v, path.uid)))
      .handle("revokeToken", ({ path }) => Effect.flatMap(CurrentViewer, (v) => tokens.revoke(v, path.token_id)).pipe(deleted))
  }))
