/**
 * The agents group. `GET /agent` lists the skills of the caller's environments (core `Skills`;
 * `repo`, `sort_by` and the boolean parameters are checked there, 400 naming the parameter). The
 * self-hosted worker protocol arrives with its own issue; until then no worker can connect, so that
 * list is truthfully empty.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Skills, Worker } from "@agent-runs/core"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { CurrentViewer } from "../Security.js"

export const AgentsLive = HttpApiBuilder.group(Api, "agents", (handlers) =>
  Effect.map(Skills.Skills, (skills) =>
    handlers
      .handle("listAgents", ({ urlParams }) => Effect.flatMap(CurrentViewer, (v) => skills.list(v, urlParams)))
      .handle("listConnectedWorkers", () => Effect.succeed(new Worker.ListConnectedWorkersResponse({ workers: [] })))))
