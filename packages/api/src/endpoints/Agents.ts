/** Agents (skills) and connected self-hosted workers. */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Agent, Worker } from "@agent-runs/core"
import { ListAgentsUrlParams } from "../Models.js"
import { Authentication, TeamHeaders } from "../Security.js"
import { doc } from "./Doc.js"

/** The agents group. */
export class AgentsGroup extends HttpApiGroup.make("agents")
  .add(
    HttpApiEndpoint.get("listAgents", "/agent")
      .setHeaders(TeamHeaders)
      .setUrlParams(ListAgentsUrlParams)
      .addSuccess(Agent.ListAgentsResponse)
      .annotateContext(
        doc(
          "List agents (skills)",
          "The SKILL.md files of the repositories of the environments the caller can see, grouped by front-matter " +
            "name. Malformed skills are listed (with `error`) only with include_malformed_skills=true. 400: invalid " +
            "repository specification."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("listConnectedWorkers", "/agent/connected-self-hosted-workers")
      .setHeaders(TeamHeaders)
      .addSuccess(Worker.ListConnectedWorkersResponse)
      .annotateContext(
        doc(
          "List connected self-hosted workers",
          "Workers of the caller's team that are connected now, from their heartbeats (may be briefly stale)."
        )
      )
  )
  .middleware(Authentication)
  .annotateContext(doc("Agents", "Agents (skills) and connected self-hosted workers."))
{}
