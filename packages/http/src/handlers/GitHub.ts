/** Handlers of the GitHub connection group. */
import { HttpApiBuilder } from "@effect/platform"
import { GitHubConnections } from "@agent-runs/core"
import { Effect } from "effect"
import { Api } from "@agent-runs/api/Api"
import { DeleteResponse } from "@agent-runs/api/Models"
import { CurrentViewer } from "@agent-runs/api/Security"

export const GitHubLive = HttpApiBuilder.group(Api, "github", (handlers) =>
  Effect.map(GitHubConnections.GitHubConnections, (github) =>
    handlers
      .handle("getGitHubConnection", () => Effect.flatMap(CurrentViewer, (v) => github.get(v)))
      .handle("connectGitHub", ({ payload }) => Effect.flatMap(CurrentViewer, (v) => github.connect(v, payload)))
      .handle("disconnectGitHub", () =>
        Effect.flatMap(CurrentViewer, (v) => github.disconnect(v)).pipe(Effect.as(new DeleteResponse({ success: true }))))
      .handle("listGitHubRepositories", () => Effect.flatMap(CurrentViewer, (v) => github.repositories(v)))))
