/** Handlers of the environments group. */
import { HttpApiBuilder } from "@effect/platform"
import { Environments } from "@agent-runs/core"
import { Effect } from "effect"
import { Api } from "@agent-runs/api/Api"
import { DeleteResponse } from "@agent-runs/api/Models"
import { CurrentViewer } from "@agent-runs/api/Security"

export const EnvironmentsLive = HttpApiBuilder.group(Api, "environments", (handlers) =>
  Effect.map(Environments.Environments, (environments) =>
    handlers
      .handle("listEnvironments", ({ urlParams }) =>
        Effect.flatMap(CurrentViewer, (v) => environments.list(v, urlParams)))
      .handle("createEnvironment", ({ payload }) => Effect.flatMap(CurrentViewer, (v) => environments.create(v, payload)))
      .handle("getEnvironment", ({ path }) => Effect.flatMap(CurrentViewer, (v) => environments.get(v, path.uid)))
      .handle("updateEnvironment", ({ path, payload }) =>
        Effect.flatMap(CurrentViewer, (v) => environments.update(v, path.uid, payload)))
      .handle("deleteEnvironment", ({ path }) =>
        Effect.flatMap(CurrentViewer, (v) => environments.remove(v, path.uid)).pipe(
          Effect.as(new DeleteResponse({ success: true }))
        ))))
