/**
 * The agents group. Skill discovery (SKILL.md files in environments' repositories) and the
 * self-hosted worker protocol arrive with their own issue; until then no skill is discovered and
 * no worker can connect, so both lists are truthfully empty. The `repo` parameter is validated
 * already (400 naming `repo` when it is not `owner/repo`).
 */
import { HttpApiBuilder } from "@effect/platform"
import { Agent, Errors, Worker } from "@agent-runs/core"
import { Effect, Schema } from "effect"
import { Api } from "../Api.js"

const isRepoSegment = Schema.is(Agent.RepoSegment)

export const AgentsLive = HttpApiBuilder.group(Api, "agents", (handlers) =>
  handlers
    .handle("listAgents", ({ urlParams }) => {
      const parts = urlParams.repo?.split("/")
      if (parts !== undefined && (parts.length !== 2 || !parts.every(isRepoSegment))) {
        return Effect.fail(Errors.InvalidRequest.forField("repo", "must be owner/repo"))
      }
      return Effect.succeed(new Agent.ListAgentsResponse({ agents: [] }))
    })
    .handle("listConnectedWorkers", () => Effect.succeed(new Worker.ListConnectedWorkersResponse({ workers: [] }))))
