/** Handlers of the GitHub connection group. */
import { HttpApiBuilder } from "@effect/platform"
import { GitHubConnections } from "@agent-runs/core"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { DeleteResponse } from "../Models.js"
import { CurrentViewer } from "../Security.js"

export const GitHubLive = HttpApiBuilder.group(Api, "github", (handlers) =>
  Effect.map(GitHubConnections.GitHubConnections, (github) =>
    handlers
      .handle("getGitHubConnection", () => Effect.flatMap(CurrentViewer, (v) => github.get(v)))
      .handle("connectGitHub", ({ payload }) => Effect.flatMap(CurrentViewer, (v) => github.connect(v, payload)))
      .handle("disconnectGitHub", () =>
        Effect.flatMap(CurrentViewer, (v) => github.disconnect(v)).pipe(Effect.as(new DeleteResponse({ success: true }))))
      .handle("listGitHubRepositories", () => Effect.flatMap(CurrentViewer, (v) => github.repositories(v)))))
