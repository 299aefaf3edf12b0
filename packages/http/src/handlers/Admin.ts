/** Handlers of the admin API (instance administrators only; core's `Identities` checks). */
import { HttpApiBuilder } from "@effect/platform"
import { Identities } from "@agent-runs/core"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { DeleteResponse } from "../Models.js"
import { CurrentViewer } from "../Security.js"

export const AdminLive = HttpApiBuilder.group(Api, "admin", (handlers) =>
  Effect.map(Identities.Identities, (identities) =>
    handlers
      .handle("createTeam", ({ payload }) => Effect.flatMap(CurrentViewer, (v) => identities.createTeam(v, payload)))
      .handle("listTeams", () => Effect.flatMap(CurrentViewer, (v) => identities.listTeams(v)))
      .handle("updateTeam", ({ path, payload }) =>
        Effect.flatMap(CurrentViewer, (v) => identities.updateTeam(v, path.uid, payload)))
      .handle("createPrincipal", ({ payload }) =>
        Effect.flatMap(CurrentViewer, (v) => identities.createPrincipal(v, payload)))
      .handle("createToken", ({ path, payload }) =>
        Effect.flatMap(CurrentViewer, (v) => identities.createToken(v, path.uid, payload)))
      .handle("revokeToken", ({ path }) =>
        Effect.flatMap(CurrentViewer, (v) => identities.revokeToken(v, path.token_id)).pipe(
          Effect.as(new DeleteResponse({ success: true }))
        ))))
