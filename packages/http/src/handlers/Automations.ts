/** Handlers of the automations group. */
import { HttpApiBuilder } from "@effect/platform"
import { Automations } from "@agent-runs/core"
import { Effect } from "effect"
import { Api } from "@agent-runs/api/Api"
import { DeleteResponse } from "@agent-runs/api/Models"
import { CurrentViewer } from "@agent-runs/api/Security"

export const AutomationsLive = HttpApiBuilder.group(Api, "automations", (handlers) =>
  Effect.map(Automations.Automations, (automations) =>
    handlers
      .handle("createAutomation", ({ payload }) => Effect.flatMap(CurrentViewer, (v) => automations.create(v, payload)))
      .handle("listAutomations", () => Effect.flatMap(CurrentViewer, (v) => automations.list(v)))
      .handle("getAutomation", ({ path }) => Effect.flatMap(CurrentViewer, (v) => automations.get(v, path.id)))
      .handle("updateAutomation", ({ path, payload }) =>
        Effect.flatMap(CurrentViewer, (v) => automations.update(v, path.id, payload)))
      .handle("deleteAutomation", ({ path }) =>
        Effect.flatMap(CurrentViewer, (v) => automations.remove(v, path.id)).pipe(
          Effect.as(new DeleteResponse({ success: true }))
        ))
      .handle("testAutomationFilter", ({ path, payload }) =>
        Effect.flatMap(CurrentViewer, (v) => automations.testFilter(v, path.id, payload)))))
