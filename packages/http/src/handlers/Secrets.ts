/** Handlers of the team secrets group (values are never returned). */
import { HttpApiBuilder } from "@effect/platform"
import { Secrets } from "@agent-runs/core"
import { Effect } from "effect"
import { Api } from "@agent-runs/api/Api"
import { DeleteResponse } from "@agent-runs/api/Models"
import { CurrentViewer } from "@agent-runs/api/Security"

export const SecretsLive = HttpApiBuilder.group(Api, "secrets", (handlers) =>
  Effect.map(Secrets.Secrets, (secrets) =>
    handlers
      .handle("listSecrets", () => Effect.flatMap(CurrentViewer, (v) => secrets.list(v)))
      .handle("putSecret", ({ path, payload }) => Effect.flatMap(CurrentViewer, (v) => secrets.put(v, path.name, payload)))
      .handle("deleteSecret", ({ path }) =>
        Effect.flatMap(CurrentViewer, (v) => secrets.remove(v, path.name)).pipe(
          Effect.as(new DeleteResponse({ success: true }))
        ))))
