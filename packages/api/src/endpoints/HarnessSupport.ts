/** Endpoints an agent calls with its run token while it runs. */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Artifact } from "@agent-runs/core"
import * as Problems from "../Problems.js"
import { RunAuthentication } from "../Security.js"
import { doc } from "./Doc.js"

/** The harness support group, authenticated by run token (not by API token). */
export class HarnessSupportGroup extends HttpApiGroup.make("harnessSupport")
  .add(
    HttpApiEndpoint.post("reportArtifact", "/harness-support/report-artifact")
      .setPayload(Artifact.ArtifactReport)
      .addSuccess(Artifact.Artifact)
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(
        doc(
          "Report an artifact",
          "Records an artifact (pull request, plan, screenshot, file, external reference) on the run the token was " +
            "issued for; answers it stamped with created_at. An EXTERNAL_REFERENCE url is what " +
            "GET /agent/run-by-external-reference finds."
        )
      )
  )
  .middleware(RunAuthentication)
  .annotateContext(doc("Harness support", "Called by agents with their run token."))
{}
