/**
 * `/docs/errors`: one section per `error_code`, the target of every problem body's `type`
 * (`/docs/errors#<error_code>`): what the error means and what to do about it.
 */
import type { Errors } from "@agent-runs/core"
import { statusOf, titleOf } from "@agent-runs/api/Problems"
import { escapeHtml, page } from "./Page.js"

/** What each code means, and what to do. */
export const meaningOf: Record<Errors.HttpErrorCode, string> = {
  invalid_request:
    "The request is malformed or misses something: `error` starts with the field (`config.model_id: …`) and `field` names it. Fix that field and send again.",
  authentication_required:
    "No bearer token, or one that is unknown, revoked or expired. Send `Authorization: Bearer <token>` with a valid token.",
  not_authorized:
    "The token is valid but may not do this: the team header names a team the caller is not in, the role does not allow it, or a named resource is not the caller's to use. Ask a team admin.",
  feature_not_available:
    "The team has this feature turned off (`feature` names it). An instance administrator can turn it on.",
  resource_not_found:
    "Nothing with this id, or nothing the caller may see (the two are never told apart); also an unknown path.",
  conflict:
    "The request collides with the resource's state or with another write. When `retryable` is true, send it again; otherwise change the request.",
  operation_not_supported: "The operation does not apply to this kind of resource.",
  rate_limited: "Over a rate limit or cap. Wait the seconds of `Retry-After` (and `retry_after_seconds`), then send it again.",
  payload_too_large: "The body, or one of its fields, is over its limit (`limit_bytes`). Send less.",
  method_not_allowed: "The path exists but does not take this method: `Allow` (and `allow`) list the methods it takes.",
  unsupported_media_type: "The body is not JSON. Send JSON with `Content-Type: application/json`.",
  internal_error: "The service failed. Send the request again; if it keeps failing, the service's log says why.",
  resource_unavailable:
    "Storage or another dependency does not answer for now (a full disk, the database down). Wait the seconds of `Retry-After`, then send it again."
}

const inline = (text: string) => escapeHtml(text).replace(/`([^`]+)`/g, "<code>$1</code>")

export const errorsPage = (basePath: string) =>
  page(
    "Agent Runs: errors",
    `<h1>Errors</h1>
<p>Every error is an <code>application/problem+json</code> body: <code>type</code> (a link to this page),
<code>title</code>, <code>status</code>, <code>error</code> (what went wrong), <code>error_code</code> and
<code>retryable</code>; a retryable one also sends <code>x-should-retry: true</code>.
<a href="${escapeHtml(`${basePath}/docs`)}">API documentation</a>.</p>
<dl>
${
      (Object.keys(meaningOf) as Array<Errors.HttpErrorCode>).map((code) =>
        `<div id="${code}"><dt><code>${code}</code>: ${statusOf[code]} ${escapeHtml(titleOf[code])}</dt><dd>${inline(meaningOf[code])}</dd></div>`
      ).join("\n")
    }
</dl>`
  )
