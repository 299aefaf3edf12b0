/** Who the caller is: its principal and the teams it may act in. */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Identity } from "@agent-runs/core"
import { Authentication, TeamHeaders } from "../Security.js"
import { doc } from "./Doc.js"

/** The identity group: any authenticated caller, whatever its role; no admin rights needed. */
export class IdentityGroup extends HttpApiGroup.make("identity")
  .add(
    HttpApiEndpoint.get("me", "/agent/me")
      .setHeaders(TeamHeaders)
      .addSuccess(Identity.MeResponse)
      .annotateContext(
        doc(
          "Who am I",
          "The caller's principal (`type`, `uid`, `display_name`), whether it is an instance administrator, and " +
            `the teams it may act in (uid, name, its role), in the order it joined them, at most ${Identity.MAX_LISTED_TEAMS} ` +
            "(`teams_truncated` when there are more); `default_team_uid` is the team a request without the TEAM " +
            "header acts in (null for an instance administrator in no team). The TEAM header is not needed; when " +
            "sent it must name one of the caller's teams (403 otherwise). An agent's run token sees only its run's " +
            "team. Nothing about other principals or teams."
        )
      )
  )
  .middleware(Authentication)
  .annotateContext(doc("Identity", "Who the caller is, and the teams it may act in."))
{}
