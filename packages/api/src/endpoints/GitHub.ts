/** The team's connection to GitHub: the host and the team secrets holding its credential. */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { GitHub } from "@agent-runs/core"
import { DeleteResponse } from "../Models.js"
import * as Problems from "../Problems.js"
import { Authentication, TeamHeaders } from "../Security.js"
import { doc } from "./Doc.js"

/** The GitHub group: every member reads, admins change. */
export class GitHubGroup extends HttpApiGroup.make("github")
  .add(
    HttpApiEndpoint.get("getGitHubConnection", "/agent/github")
      .setHeaders(TeamHeaders)
      .addSuccess(GitHub.GitHubConnectionResponse)
      .annotateContext(doc("Get the team's GitHub connection", "Every member: whether the team is connected, the host, the kind of credential and the names of its secrets (never a value)."))
  )
  .add(
    HttpApiEndpoint.put("connectGitHub", "/agent/github")
      .setHeaders(TeamHeaders)
      .setPayload(GitHub.ConnectGitHubRequest)
      .addSuccess(GitHub.GitHubConnectionResponse)
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(
        doc(
          "Connect the team to GitHub, or change its connection",
          "Team admins. `base_url` is https://github.com (the default) or a GitHub Enterprise Server; `auth` names team secrets: " +
            "`{type: \"token\", token_secret}` (a fine-grained personal access token) or `{type: \"app\", app_id, installation_id, private_key_secret}`. " +
            "The secrets must exist and the host must accept the credential (400 naming the field otherwise)."
        )
      )
  )
  .add(
    HttpApiEndpoint.del("disconnectGitHub", "/agent/github")
      .setHeaders(TeamHeaders)
      .addSuccess(DeleteResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(doc("Disconnect the team from GitHub", "Team admins. 404 when the team has no connection. The secrets stay."))
  )
  .add(
    HttpApiEndpoint.get("listGitHubRepositories", "/agent/github/repositories")
      .setHeaders(TeamHeaders)
      .addSuccess(GitHub.ReachableRepositoriesResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .annotateContext(
        doc(
          "List the repositories the team's credential reaches",
          "Every member. Asks the host (at most 1,000, `truncated` past them); 404 without a connection, 503 with the host's answer when it refuses or cannot be reached."
        )
      )
  )
  .middleware(Authentication)
  .annotateContext(doc("GitHub", "The team's connection to GitHub, through which runs clone repositories and open pull requests."))
{}
