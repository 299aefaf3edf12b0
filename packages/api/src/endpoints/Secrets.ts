/** Team secrets: values stored encrypted, never returned. */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Secret } from "@agent-runs/core"
import { DeleteResponse } from "../Models.js"
import * as Problems from "../Problems.js"
import { Authentication, TeamHeaders } from "../Security.js"
import { doc } from "./Doc.js"
import * as P from "./Params.js"

/** The secrets group (team admins only). */
export class SecretsGroup extends HttpApiGroup.make("secrets")
  .add(
    HttpApiEndpoint.get("listSecrets", "/agent/secrets")
      .setHeaders(TeamHeaders)
      .addSuccess(Secret.ListSecretsResponse)
      .annotateContext(doc("List secrets", "Names and times only; values are never returned."))
  )
  .add(
    HttpApiEndpoint.put("putSecret")`/agent/secrets/${P.secretName}`
      .setHeaders(TeamHeaders)
      .setPayload(Secret.PutSecretRequest)
      .addSuccess(Secret.SecretMetadata)
      .addError(Problems.PayloadTooLarge, { status: 413 })
      .annotateContext(doc("Create or replace a secret", "Stores the value encrypted; answers its name and times."))
  )
  .add(
    HttpApiEndpoint.del("deleteSecret")`/agent/secrets/${P.secretName}`
      .setHeaders(TeamHeaders)
      .addSuccess(DeleteResponse)
      .addError(Problems.ResourceNotFound, { status: 404 })
      .addError(Problems.Conflict, { status: 409 })
      .annotateContext(doc(
          "Delete a secret",
          "409 while an enabled webhook takes its credential from it (`secret_name`): disable or delete those first."
        ))
  )
  .middleware(Authentication)
  .annotateContext(doc("Secrets", "Team secrets, referenced by webhooks; values are never returned."))
{}
