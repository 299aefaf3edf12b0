/**
 * The audit log (docs/audit.md): who did what, to what, in which team, when, from where, and how
 * it ended, one entry per write through the API (and per read of a transcript by someone other
 * than its run's creator), append-only.
 *
 * Decisions:
 * - An entry names its actor by principal, with the display name it had then (an entry keeps the
 *   name after the principal is renamed or deleted), the API token it used (`token_id`, never the
 *   token), the run it acted for (a run token), and whether it acted as an instance administrator.
 * - `action` is `<resource>.<verb>` (`run.create`, `secret.put`, …); `resource` names the thing
 *   changed by type and id (null when a refused create never got one).
 * - `outcome` is `succeeded` (written in the same transaction as the change it records),
 *   `denied` (401/403/404 answers: the caller may not) or `failed` (any other refusal: a bad body,
 *   a conflict, a quota, storage); `error_code` is then the answer's `error_code`.
 * - `origin` is the client's address (the forwarded one behind trusted proxies) and user agent
 *   (at most 256 characters); both null for work the service does itself.
 * - No entry holds a secret's value, a token, a prompt or a message: only names and ids.
 */
import { DateTime, Schema } from "effect"
import type { Viewer } from "./Access.js"
import { PageInfo, Timestamp } from "./Common.js"
import { AuditEntryId, PrincipalUid, RunId, TeamUid, TokenId } from "./Ids.js"

/** The longest user agent an entry keeps (characters). */
export const MAX_USER_AGENT_CHARS = 256

export const AuditOutcome = Schema.Literal("succeeded", "denied", "failed")
export type AuditOutcome = typeof AuditOutcome.Type

/** Where a request came from. */
export const RequestOrigin = Schema.Struct({
  address: Schema.NullOr(Schema.String),
  user_agent: Schema.NullOr(Schema.String)
}).annotations({ identifier: "RequestOrigin" })
export type RequestOrigin = typeof RequestOrigin.Type

/** The origin of a request from its peer address and User-Agent header (cut to MAX_USER_AGENT_CHARS). */
export const requestOrigin = (address: string | undefined, userAgent: string | undefined): RequestOrigin => ({
  address: address ?? null,
  user_agent: userAgent === undefined ? null : userAgent.slice(0, MAX_USER_AGENT_CHARS)
})

export const AuditActor = Schema.Struct({
  principal_uid: Schema.NullOr(PrincipalUid),
  display_name: Schema.NullOr(Schema.String),
  token_id: Schema.NullOr(TokenId),
  run_id: Schema.NullOr(RunId),
  instance_admin: Schema.Boolean
}).annotations({ identifier: "AuditActor" })
export type AuditActor = typeof AuditActor.Type

export const AuditResource = Schema.Struct({
  type: Schema.String,
  id: Schema.NullOr(Schema.String)
}).annotations({ identifier: "AuditResource" })
export type AuditResource = typeof AuditResource.Type

/** One entry of the audit log. */
export class AuditEntry extends Schema.Class<AuditEntry>("AuditEntry")({
  id: AuditEntryId,
  at: Timestamp,
  team_uid: Schema.NullOr(TeamUid),
  actor: AuditActor,
  action: Schema.String,
  resource: AuditResource,
  outcome: AuditOutcome,
  error_code: Schema.NullOr(Schema.String),
  origin: RequestOrigin
}) {}

/** What an entry says besides its id and time. */
export interface AuditFacts {
  readonly action: string
  readonly resource: AuditResource
  readonly outcome: AuditOutcome
  readonly error_code?: string | null | undefined
  /** The team it happened in; the viewer's by default (null: none, an instance-level action). */
  readonly team_uid?: TeamUid | null | undefined
}

/** The entry of `facts` done by `viewer` (named `displayName`). */
export const auditEntry = (
  viewer: Viewer,
  displayName: string | null,
  facts: AuditFacts,
  id: AuditEntryId,
  at: number
): AuditEntry =>
  new AuditEntry({
    id,
    at: DateTime.unsafeMake(at),
    team_uid: facts.team_uid !== undefined ? facts.team_uid : viewer.team_uid === "" ? null : viewer.team_uid,
    actor: {
      principal_uid: viewer.principal_uid,
      display_name: displayName,
      token_id: viewer.token_id ?? null,
      run_id: viewer.acting_run_id ?? null,
      instance_admin: viewer.instance_admin
    },
    action: facts.action,
    resource: facts.resource,
    outcome: facts.outcome,
    error_code: facts.error_code ?? null,
    origin: viewer.origin ?? { address: null, user_agent: null }
  }, true)

/** The outcome of a refusal by its error code: the caller may not (denied), or it failed. */
export const refusalOutcome = (errorCode: string): AuditOutcome =>
  errorCode === "authentication_required" || errorCode === "not_authorized" || errorCode === "resource_not_found"
    ? "denied"
    : "failed"

/** Which entries a query selects: all of them match every filter given. */
export interface AuditFilters {
  readonly team_uid?: TeamUid | undefined
  readonly principal_uid?: PrincipalUid | undefined
  readonly action?: string | undefined
  readonly resource_type?: string | undefined
  readonly resource_id?: string | undefined
  readonly outcome?: AuditOutcome | undefined
  /** Epoch ms: entries at or after. */
  readonly since?: number | undefined
  /** Epoch ms: entries before. */
  readonly until?: number | undefined
}

/** The order of entries: by id, which is by time. */
export type AuditOrder = "newest_first" | "oldest_first"

/** A page of entries in `order`, after the entry `cursor` (its id; in that order) when given. */
export interface AuditQuery extends AuditFilters {
  readonly limit: number
  readonly order: AuditOrder
  readonly cursor?: AuditEntryId | undefined
}

/** Whether an entry comes after the cursor in the query's order (the reference of the stores' paging). */
export const afterCursor = (entry: AuditEntry, query: AuditQuery): boolean =>
  query.cursor === undefined || (query.order === "newest_first" ? entry.id < query.cursor : entry.id > query.cursor)

/** Whether an entry passes the query's filters (the reference the stores are checked against). */
export const matchesAudit = (entry: AuditEntry, filters: AuditFilters): boolean =>
  (filters.team_uid === undefined || entry.team_uid === filters.team_uid) &&
  (filters.principal_uid === undefined || entry.actor.principal_uid === filters.principal_uid) &&
  (filters.action === undefined || entry.action === filters.action) &&
  (filters.resource_type === undefined || entry.resource.type === filters.resource_type) &&
  (filters.resource_id === undefined || entry.resource.id === filters.resource_id) &&
  (filters.outcome === undefined || entry.outcome === filters.outcome) &&
  (filters.since === undefined || DateTime.toEpochMillis(entry.at) >= filters.since) &&
  (filters.until === undefined || DateTime.toEpochMillis(entry.at) < filters.until)

/** `GET /agent/audit-log`, `GET /admin/audit-log`: a page of entries, newest first. */
export class AuditLogPage extends Schema.Class<AuditLogPage>("AuditLogPage")({
  entries: Schema.Array(AuditEntry),
  page_info: PageInfo
}) {}
