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
 * - Reads (`read`) record a `succeeded` entry on their own, best effort too.
 * - Work the service does itself (cron ticks, webhook deliveries, the execution engine) is not
 *   recorded here: runs keep their timeline, webhooks their delivery log.
 */
import { Clock, Effect } from "effect"
import type { Viewer } from "../domain/Access.js"
import { type AuditFacts, type AuditResource, auditEntry, refusalOutcome } from "../domain/Audit.js"
import { Ids } from "../domain/Ids.js"
import { makeLimiter } from "../domain/RateLimit.js"
import { AuditLog } from "../ports/AuditLog.js"

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
    let prunedAt = 0

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

    /** Records an entry on its own, best effort: a storage failure is logged. */
    const recordAlone = (viewer: Viewer, facts: AuditFacts) =>
      Effect.flatMap(entry(viewer, facts), log.record).pipe(
        Effect.catchAll((e) => Effect.logWarning(`audit: could not record ${facts.action} (${facts.outcome})`, e))
      )

    /** Records a read (a transcript someone else's run wrote, say), best effort. */
    const read = (viewer: Viewer, action: string, resource: AuditResource) =>
      recordAlone(viewer, { action, resource, outcome: "succeeded" })

    /** Records a refused `action` on `resource` with `error`'s code, within the principal's budget. */
    const refused = (viewer: Viewer, action: string, resource: AuditResource, error: unknown) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        if (now - prunedAt >= 60_000) {
          refusalBudget.prune(now)
          prunedAt = now
        }
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

    return { recording, read, refused, refusals, log } as const
  })
}) {}
