/**
 * The agents group. `GET /agent` lists the skills of the caller's environments (core `Skills`;
 * `repo`, `sort_by` and the boolean parameters are checked there, 400 naming the parameter). Connected
 * self-hosted workers come from core's `Workers` (heartbeats, scoped to the caller's team).
 */
import { HttpApiBuilder } from "@effect/platform"
import { Skills, Workers } from "@agent-runs/core"
import { Effect } from "effect"
import { Api } from "@agent-runs/api/Api"
import { CurrentViewer } from "@agent-runs/api/Security"

export const AgentsLive = HttpApiBuilder.group(Api, "agents", (handlers) =>
  Effect.map(Effect.all([Workers.Workers, Skills.Skills]), ([workers, skills]) =>
    handlers
      .handle("listAgents", ({ urlParams }) => Effect.flatMap(CurrentViewer, (v) => skills.list(v, urlParams)))
      .handle("listConnectedWorkers", () => Effect.flatMap(CurrentViewer, (viewer) => workers.list(viewer)))))
