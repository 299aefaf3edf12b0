/**
 * The query of the audit log's endpoints (docs/audit.md): its parameters parsed and checked, each
 * refusal a 400 naming the parameter. Unknown parameters are ignored, as the run list does.
 */
import { Either } from "effect"
import type { AuditFilters, AuditOutcome } from "./Audit.js"
import { AuditOutcome as Outcomes } from "./Audit.js"
import { InvalidRequest } from "./Errors.js"
import { type AuditEntryId, isUid22, isUuidV7, type PrincipalUid, type TeamUid } from "./Ids.js"
import { parseRfc3339Millis } from "./RunQuery.js"

/** The sizes a page of the audit log may have. */
export const AUDIT_PAGE_LIMIT = { min: 1, max: 500, default: 50 } as const

/** The longest action, resource type and resource id a filter may name. */
const MAX_FILTER_CHARS = 128

/** The parameters as the transport decoded them (each at most once). */
export type AuditQueryParams = Readonly<Record<string, string | undefined>>

/** A checked query: filters (the team left to the caller's access), the page size and cursor. */
export interface AuditPageQuery {
  readonly filters: Omit<AuditFilters, "team_uid">
  readonly team_uid: TeamUid | undefined
  readonly limit: number
  readonly cursor: AuditEntryId | undefined
}

const fail = (field: string, problem: string) => Either.left(InvalidRequest.forField(field, problem))
const shown = (s: string): string => JSON.stringify(s.length > 80 ? `${s.slice(0, 80)}…` : s)

const text = (field: string, value: string | undefined) =>
  value === undefined
    ? Either.right(undefined)
    : value === "" || value.length > MAX_FILTER_CHARS
    ? fail(field, `must be 1 to ${MAX_FILTER_CHARS} characters`)
    : Either.right(value)

const uid = <A extends string>(field: string, value: string | undefined) =>
  value === undefined
    ? Either.right(undefined)
    : isUid22(value)
    ? Either.right(value as A)
    : fail(field, `must be a uid (22 letters and digits); got ${shown(value)}`)

const time = (field: string, value: string | undefined) => {
  if (value === undefined) return Either.right(undefined)
  const millis = parseRfc3339Millis(value, "floor")
  return millis === undefined ? fail(field, `must be an RFC 3339 date-time such as 2026-11-22T03:17:28Z; got ${shown(value)}`) : Either.right(millis)
}

const limitOf = (value: string | undefined) => {
  if (value === undefined) return Either.right(AUDIT_PAGE_LIMIT.default)
  const n = /^[0-9]{1,6}$/.test(value) ? Number(value) : NaN
  return n >= AUDIT_PAGE_LIMIT.min && n <= AUDIT_PAGE_LIMIT.max
    ? Either.right(n)
    : fail("limit", `must be an integer from ${AUDIT_PAGE_LIMIT.min} to ${AUDIT_PAGE_LIMIT.max}; got ${shown(value)}`)
}

const outcomeOf = (value: string | undefined) =>
  value === undefined
    ? Either.right(undefined)
    : (Outcomes.literals as ReadonlyArray<string>).includes(value)
    ? Either.right(value as AuditOutcome)
    : fail("outcome", `must be one of ${Outcomes.literals.join(", ")}; got ${shown(value)}`)

const cursorOf = (value: string | undefined) =>
  value === undefined || value === ""
    ? Either.right(undefined)
    : isUuidV7(value)
    ? Either.right(value as AuditEntryId)
    : fail("cursor", "must be the next_cursor of a previous page")

/** Parses the audit log's query parameters (400 naming the parameter). */
export const parseAuditQuery = (params: AuditQueryParams): Either.Either<AuditPageQuery, InvalidRequest> =>
  Either.gen(function* () {
    const since = yield* time("since", params["since"])
    const until = yield* time("until", params["until"])
    const filters = {
      principal_uid: yield* uid<PrincipalUid>("principal_uid", params["principal_uid"]),
      action: yield* text("action", params["action"]),
      resource_type: yield* text("resource_type", params["resource_type"]),
      resource_id: yield* text("resource_id", params["resource_id"]),
      outcome: yield* outcomeOf(params["outcome"]),
      since,
      until
    }
    return {
      filters: Object.fromEntries(Object.entries(filters).filter(([, v]) => v !== undefined)) as AuditPageQuery["filters"],
      team_uid: yield* uid<TeamUid>("team_uid", params["team_uid"]),
      limit: yield* limitOf(params["limit"]),
      cursor: yield* cursorOf(params["cursor"])
    }
  })
