/**
 * The audit log (docs/audit.md): a team's log for its admins, the whole log for instance
 * administrators, as pages (newest first) or exported as JSON lines (oldest first).
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "@effect/platform"
import { Audit, AuditQuery } from "@agent-runs/core"
import { Schema } from "effect"
import { Authentication, TeamHeaders } from "../Security.js"
import { doc } from "./Doc.js"

const param = (description: string) => Schema.optional(Schema.String.annotations({ description }))

/** The filters and paging of the audit log's endpoints (core's `AuditQuery.parseAuditQuery` validates). */
export const AuditUrlParams = Schema.Struct({
  principal_uid: param("entries of this actor"),
  action: param("entries of this action (`run.create`, `secret.put`, …)"),
  resource_type: param("entries about this kind of resource (`run`, `secret`, …)"),
  resource_id: param("entries about this resource"),
  outcome: param("`succeeded`, `denied` or `failed`"),
  since: param("entries at or after this time (RFC 3339)"),
  until: param("entries before this time (RFC 3339)"),
  limit: param(`page size, ${AuditQuery.AUDIT_PAGE_LIMIT.min} to ${AuditQuery.AUDIT_PAGE_LIMIT.max} (default ${AuditQuery.AUDIT_PAGE_LIMIT.default}); ignored by exports`),
  cursor: param("the next_cursor of the previous page; ignored by exports")
})

/** The admin endpoints also filter by team. */
export const AdminAuditUrlParams = Schema.Struct({
  ...AuditUrlParams.fields,
  team_uid: param("entries of this team")
})

/** A stream of JSON lines (`application/x-ndjson`): one entry per line. */
export const JsonLines = Schema.String.pipe(
  HttpApiSchema.withEncoding({ kind: "Text", contentType: "application/x-ndjson" })
).annotations({ description: "JSON lines (`application/x-ndjson`): one audit entry per line, oldest first" })

const PAGE = "Newest first; `page_info.next_cursor` continues. Filters: actor, action, resource, outcome, time."
const EXPORT = "Every entry the filters select, oldest first, one JSON object per line, streamed."

export class AuditGroup extends HttpApiGroup.make("audit")
  .add(
    HttpApiEndpoint.get("listAuditLog", "/agent/audit-log")
      .setHeaders(TeamHeaders)
      .setUrlParams(AuditUrlParams)
      .addSuccess(Audit.AuditLogPage)
      .annotateContext(doc("Read the team's audit log", `Team admins. ${PAGE}`))
  )
  .add(
    HttpApiEndpoint.get("exportAuditLog", "/agent/audit-log/export")
      .setHeaders(TeamHeaders)
      .setUrlParams(AuditUrlParams)
      .addSuccess(JsonLines)
      .annotateContext(doc("Export the team's audit log", `Team admins. ${EXPORT}`))
  )
  .add(
    HttpApiEndpoint.get("listInstanceAuditLog", "/admin/audit-log")
      .setUrlParams(AdminAuditUrlParams)
      .addSuccess(Audit.AuditLogPage)
      .annotateContext(doc("Read the whole audit log", `Instance administrators: every team's, and the admin API's. ${PAGE}`))
  )
  .add(
    HttpApiEndpoint.get("exportInstanceAuditLog", "/admin/audit-log/export")
      .setUrlParams(AdminAuditUrlParams)
      .addSuccess(JsonLines)
      .annotateContext(doc("Export the whole audit log", `Instance administrators. ${EXPORT}`))
  )
  .middleware(Authentication)
  .annotateContext(doc("Audit", "Who did what, when, from where, and how it ended: every write through the API."))
{}
