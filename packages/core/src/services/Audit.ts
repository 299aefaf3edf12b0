/**
 * The audit log's service (domain/Audit.ts, docs/audit.md): the other services record what callers
 * do through it, and team and instance administrators read it.
 *
 * Decisions:
 * - A write records its entry with `recording`, in the same transaction as the write (AuditLog):
 *   an entry exists exactly when the change does.
 * - A refused write records a `denied` or `failed` entry on its own (`refusals`, for `Effect.fn`),
 *   best effort: when storage fails the refusal is still answered, and the entry is lost (logged).
 *   Refusals are recorded at most `REFUSALS_PER_MINUTE` a minute per principal (per process), so
 *   a caller cannot grow the log without bound by failing on purpose; the others are only logged.
 * - Reads (`read`) record a `succeeded` entry on their own, best effort too, at most one an hour
 *   per principal, action and resource (per process): reading a transcript again and again adds
 *   nothing more to say, and would grow the log at the price of a GET.
 * - Work the service does itself (cron ticks, webhook deliveries, the execution engine) is not
 *   recorded here: runs keep their timeline, webhooks their delivery log.
 */
import { Chunk, Clock, Effect, Option, Stream } from "effect"
import { canManageFactory, type Viewer } from "../domain/Access.js"
import { type AuditFacts, type AuditFilters, AuditLogPage, type AuditResource, auditEntry, refusalOutcome } from "../domain/Audit.js"
import { type AuditPageQuery, type AuditQueryParams, parseAuditQuery } from "../domain/AuditQuery.js"
import { InvalidRequest, NotAuthorized } from "../domain/Errors.js"
import { type AuditEntryId, Ids } from "../domain/Ids.js"
import { storageUnavailable, storageUnavailableStream } from "../internal/Services.js"
import { makeLimiter } from "../domain/RateLimit.js"
import { AuditLog } from "../ports/AuditLog.js"

/** Entries read at a time by an export. */
const EXPORT_PAGE = 500

/** How long a read is not recorded again for the same reader and resource. */
export const READ_COLLAPSE_MS = 60 * 60 * 1000

/** The most refusals recorded per principal in any minute (per process). */
export const REFUSALS_PER_MINUTE = 60

/** The error code of a failure (its `errorCode`), `internal_error` for one without. */
const errorCodeOf = (error: unknown): string =>
  typeof error === "object" && error !== null && "errorCode" in error && typeof error.errorCode === "string"
    ? error.errorCode
    : "internal_error"

export class Audit extends Effect.Service<Audit>()("@agent-runs/core/Audit", {
  effect: Effect.gen(function*() {
    const log = yield* AuditLog
    const ids = yield* Ids
    const refusalBudget = makeLimiter({ max: REFUSALS_PER_MINUTE, windowMs: 60_000 })
    const recentReads = makeLimiter({ max: 1, windowMs: READ_COLLAPSE_MS })
    let prunedAt = 0

    /** Forgets the limiters' idle keys, once a minute. */
    const prune = (now: number) => {
      if (now - prunedAt < 60_000) return
      refusalBudget.prune(now)
      recentReads.prune(now)
      prunedAt = now
    }

    /** An entry's id and time, taken before the write it records. */
    const stamp = Effect.all({ id: ids.auditEntryId, at: Clock.currentTimeMillis })

    const entry = (viewer: Viewer, facts: AuditFacts) =>
      Effect.map(stamp, ({ at, id }) => auditEntry(viewer, viewer.display_name ?? null, facts, id, at))

    /**
     * Runs `write` and records its success in the same transaction (`facts` of its result, the
     * outcome `succeeded`): both stored, or neither.
     */
    const recording = <A, E, R>(viewer: Viewer, write: Effect.Effect<A, E, R>, facts: (result: A) => Omit<AuditFacts, "outcome">) =>
      Effect.flatMap(stamp, ({ at, id }) =>
        log.recording(write, (result) =>
          auditEntry(viewer, viewer.display_name ?? null, { ...facts(result), outcome: "succeeded" }, id, at)))

    /** The entry of a success that a store writes with the change itself (`NewRun.audit`). */
    const succeeded = (viewer: Viewer, facts: Omit<AuditFacts, "outcome">) => entry(viewer, { ...facts, outcome: "succeeded" })

    /** Records an entry on its own, best effort: a storage failure is logged. */
    const recordAlone = (viewer: Viewer, facts: AuditFacts) =>
      Effect.flatMap(entry(viewer, facts), log.record).pipe(
        Effect.catchAll((e) => Effect.logWarning(`audit: could not record ${facts.action} (${facts.outcome})`, e))
      )

    /** Records a read (a transcript someone else's run wrote, say), best effort, once an hour per reader and resource. */
    const read = (viewer: Viewer, action: string, resource: AuditResource) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        prune(now)
        return recentReads.take(`${viewer.principal_uid} ${action} ${resource.type} ${resource.id}`, now).allowed
          ? recordAlone(viewer, { action, resource, outcome: "succeeded" })
          : Effect.void
      })

    /** Records a refused `action` on `resource` with `error`'s code, within the principal's budget. */
    const refused = (viewer: Viewer, action: string, resource: AuditResource, error: unknown) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        prune(now)
        const errorCode = errorCodeOf(error)
        if (!refusalBudget.take(viewer.principal_uid, now).allowed) {
          return yield* Effect.logWarning(`audit: ${action} refused (${errorCode}) for ${viewer.principal_uid}, past its budget of recorded refusals`)
        }
        yield* recordAlone(viewer, { action, resource, outcome: refusalOutcome(errorCode), error_code: errorCode })
      })

    /**
     * For `Effect.fn(name)(body, …, refusals(action, resourceOf))`: records the method's failures as
     * refusals of `action`; `resourceOf` names the resource from the method's arguments after the
     * viewer (the id a path named; null for a create).
     */
    const refusals = <Args extends ReadonlyArray<unknown>>(
      action: string,
      resourceOf: (...args: Args) => AuditResource
    ) =>
    <A, E, R>(effect: Effect.Effect<A, E, R>, viewer: Viewer, ...args: Args): Effect.Effect<A, E, R> =>
      Effect.tapError(effect, (error) => refused(viewer, action, resourceOf(...args), error))

    /** A page of the entries `filters` select, newest first, after `cursor`. */
    const pageOf = (filters: AuditFilters, query: AuditPageQuery) =>
      Effect.map(
        log.list({ ...filters, limit: query.limit + 1, order: "newest_first", cursor: query.cursor }),
        (found) => {
          const entries = found.slice(0, query.limit)
          const last = entries[entries.length - 1]
          return new AuditLogPage({
            entries,
            page_info: found.length > query.limit && last !== undefined ? { has_next_page: true, next_cursor: last.id } : { has_next_page: false }
          }, true)
        }
      )

    /** Every entry `filters` select, oldest first, read a page at a time. */
    const everything = (filters: AuditFilters) =>
      Stream.paginateChunkEffect(undefined as AuditEntryId | undefined, (cursor) =>
        Effect.map(log.list({ ...filters, limit: EXPORT_PAGE, order: "oldest_first", cursor }), (page) => [
          Chunk.unsafeFromArray(page),
          page.length < EXPORT_PAGE ? Option.none() : Option.some(page[page.length - 1]!.id)
        ]))

    /** The filters of the viewer's team's log (team admins, never a run token), from the query's parameters. */
    const teamFilters = (viewer: Viewer, params: AuditQueryParams) =>
      Effect.gen(function*() {
        if (!canManageFactory(viewer) || viewer.acting_run_id !== undefined) {
          return yield* new NotAuthorized({ message: "only team admins read the team's audit log" })
        }
        const query = yield* parseAuditQuery(params)
        if (query.team_uid !== undefined) {
          return yield* InvalidRequest.forField("team_uid", "the team's log is the team of the request (X-Team-Uid); other teams are read through /admin/audit-log")
        }
        return { query, filters: { ...query.filters, team_uid: viewer.team_uid } }
      })

    /** The filters of the whole log (instance administrators), from the query's parameters. */
    const instanceFilters = (viewer: Viewer, params: AuditQueryParams) =>
      Effect.gen(function*() {
        if (!viewer.instance_admin || viewer.acting_run_id !== undefined) {
          return yield* new NotAuthorized({ message: "the admin API is for instance administrators only" })
        }
        const query = yield* parseAuditQuery(params)
        return { query, filters: { ...query.filters, ...(query.team_uid === undefined ? {} : { team_uid: query.team_uid }) } }
      })

    /** `GET /agent/audit-log`: a page of the viewer's team's log. */
    const teamPage = Effect.fn("Audit.teamPage")(
      function*(viewer: Viewer, params: AuditQueryParams) {
        const { filters, query } = yield* teamFilters(viewer, params)
        return yield* pageOf(filters, query)
      },
      storageUnavailable
    )

    /** `GET /admin/audit-log`: a page of the whole log (or one team's). */
    const instancePage = Effect.fn("Audit.instancePage")(
      function*(viewer: Viewer, params: AuditQueryParams) {
        const { filters, query } = yield* instanceFilters(viewer, params)
        return yield* pageOf(filters, query)
      },
      storageUnavailable
    )

    /** `GET /agent/audit-log/export`: every entry of the viewer's team's log the filters select, oldest first. */
    const teamExport = Effect.fn("Audit.teamExport")(
      function*(viewer: Viewer, params: AuditQueryParams) {
        return everything((yield* teamFilters(viewer, params)).filters).pipe(storageUnavailableStream)
      }
    )

    /** `GET /admin/audit-log/export`: every entry of the whole log (or one team's) the filters select, oldest first. */
    const instanceExport = Effect.fn("Audit.instanceExport")(
      function*(viewer: Viewer, params: AuditQueryParams) {
        return everything((yield* instanceFilters(viewer, params)).filters).pipe(storageUnavailableStream)
      }
    )

    return { recording, succeeded, read, refused, refusals, teamPage, instancePage, teamExport, instanceExport } as const
  })
}) {}
