/** The identity group: `GET /agent/me` answers core's `Identities.me` for the authenticated caller. */
import { HttpApiBuilder } from "@effect/platform"
import { Identities } from "@agent-runs/core"
import { Effect } from "effect"
import { Api } from "@agent-runs/api/Api"
import { CurrentViewer } from "@agent-runs/api/Security"

export const IdentityLive = HttpApiBuilder.group(Api, "identity", (handlers) =>
  Effect.map(Identities.Identities, (identities) =>
    handlers.handle("me", () => Effect.flatMap(CurrentViewer, (v) => identities.me(v)))))
