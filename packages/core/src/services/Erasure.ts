/**
 * Erasing a principal's personal data, for instance administrators
 * (`POST /admin/principals/{principal_uid}/erase`, docs/retention.md#erasing-a-principal).
 *
 * Decisions:
 * - Refused (409, nothing changed) while a run it created is live, or cannot be deleted now for
 *   another reason `DELETE /agent/runs/{id}` gives (`runs: delete`: cancelled moments ago, its
 *   sandbox kept, its conversation continued by a live run).
 * - Then, first, the principal: deleted when it is not yet (tokens revoked, memberships removed,
 *   as `DELETE /admin/principals/{uid}`), its name replaced by `ERASED_NAME`, its email and its
 *   sign-in link forgotten (audited `principal.erase`). So an erasure cut short has removed the
 *   person's identity already, and repeating it finishes the runs.
 * - The runs it created, in every team: `delete` removes them for good (as a deleted run goes),
 *   but for a run under another's kept run (whose budget counts it), which is anonymized;
 *   `anonymize` keeps them all with its name replaced. Runs others created that executed as it
 *   (an agent identity) are anonymized in both cases. Anonymizing writes only if the run did not
 *   change since it was read (read again and retried otherwise).
 * - Runs are taken in id order, `ERASE_BATCH` at a time, so its own parents go before their children.
 */
import { Effect, Option } from "effect"
import type { Viewer } from "../domain/Access.js"
import type { PrincipalRef } from "../domain/Common.js"
import { Conflict, ResourceNotFound } from "../domain/Errors.js"
import { ERASED_NAME, type EraseRequest, EraseResponse } from "../domain/Erasure.js"
import type { PrincipalUid, RunId } from "../domain/Ids.js"
import { RunItem } from "../domain/Run.js"
import { guardOf } from "../domain/RunRecords.js"
import type { RunState } from "../domain/RunState.js"
import { isTerminal } from "../domain/RunState.js"
import { removeQueuedKeys } from "../engine/DataRetention.js"
import { requireInstanceAdmin } from "../internal/Principals.js"
import { storageUnavailable } from "../internal/Services.js"
import { BlobStore } from "../ports/BlobStore.js"
import { IdentityStore } from "../ports/IdentityStore.js"
import { RetentionStore } from "../ports/RetentionStore.js"
import { RunStore, type StoredRun } from "../ports/RunStore.js"
import type { StorageError } from "../ports/Storage.js"
import { Audit } from "./Audit.js"
import { Principals } from "./Principals.js"
import { RunDeletion } from "./RunDeletion.js"

/** Runs read per batch. */
export const ERASE_BATCH = 100

/** What an erasure did so far. */
interface Counts {
  deleted: number
  anonymized: number
}

type Page = (principal: PrincipalUid, after: RunId | undefined, limit: number) => Effect.Effect<
  ReadonlyArray<{ readonly run_id: RunId; readonly state: RunState }>,
  StorageError
>

/** The reference with the erased name, when it names the principal. */
const erased = (ref: PrincipalRef, uid: PrincipalUid): PrincipalRef => ref.uid === uid ? { ...ref, display_name: ERASED_NAME } : ref

export class Erasure extends Effect.Service<Erasure>()("@agent-runs/core/Erasure", {
  dependencies: [Audit.Default, Principals.Default, RunDeletion.Default],
  effect: Effect.gen(function*() {
    const audit = yield* Audit
    const principals = yield* Principals
    const deletion = yield* RunDeletion
    const identities = yield* IdentityStore
    const retention = yield* RetentionStore
    const runs = yield* RunStore
    const blobs = yield* BlobStore

    /** Each run a page lists, a batch at a time. */
    const eachRun = <E>(page: Page, uid: PrincipalUid, f: (runId: RunId) => Effect.Effect<void, E>) =>
      Effect.gen(function*() {
        let after: RunId | undefined
        for (;;) {
          const found = yield* page(uid, after, ERASE_BATCH)
          yield* Effect.forEach(found, (run) => f(run.run_id), { discard: true })
          if (found.length < ERASE_BATCH) return
          after = found[found.length - 1]!.run_id
        }
      })

    /** 409 when one of its runs is live, or (to delete them) cannot go now. */
    const checkRuns = (uid: PrincipalUid, request: EraseRequest) =>
      eachRun(retention.runsCreatedBy, uid, (runId) =>
        Effect.gen(function*() {
          const run = yield* runs.get(runId)
          if (Option.isNone(run)) return
          if (!isTerminal(run.value.item.state)) {
            return yield* new Conflict({ message: `runs: run ${runId} this principal created is ${run.value.item.state}; cancel it first, then erase it` })
          }
          const blocked = request.runs === "delete" ? yield* deletion.blockers(run.value) : undefined
          if (blocked !== undefined) return yield* new Conflict({ ...blocked, message: `runs: run ${runId}: ${blocked.message}` })
        }))

    /** Replaces the principal's name in a run; 1 when it wrote, 0 when there was nothing to replace. */
    const anonymizeRun = (uid: PrincipalUid) => (runId: RunId): Effect.Effect<number, StorageError | Conflict> =>
      Effect.gen(function*() {
        const found = yield* runs.get(runId)
        if (Option.isNone(found)) return 0
        const run: StoredRun = found.value
        const item = new RunItem({ ...run.item, creator: erased(run.item.creator, uid), executor: erased(run.item.executor, uid) })
        if (item.creator.display_name === run.item.creator.display_name && item.executor.display_name === run.item.executor.display_name) return 0
        yield* runs.update(runId, { ...guardOf(run), expected: run }, { ...run, item }, [])
        return 1
      }).pipe(
        Effect.retry({ while: (e) => e._tag === "StaleWrite", times: 5 }),
        Effect.catchTag("StaleWrite", () =>
          Effect.fail(new Conflict({ message: `runs: run ${runId} kept changing during the erasure; erase again`, retryable: true })))
      )

    /** Deletes a run; one a team keeps for a kept run above it (its budget counts it) is anonymized instead. */
    const deleteRun = (uid: PrincipalUid, done: Counts) => (runId: RunId) =>
      retention.removeRun(runId).pipe(
        Effect.flatMap((keys) =>
          removeQueuedKeys(keys).pipe(Effect.provideService(BlobStore, blobs), Effect.provideService(RetentionStore, retention))),
        Effect.map(() => void done.deleted++),
        Effect.catchTag("StaleWrite", () =>
          Effect.gen(function*() {
            const run = yield* runs.get(runId)
            if (Option.isSome(run) && !isTerminal(run.value.item.state)) {
              return yield* new Conflict({ message: `runs: run ${runId} became ${run.value.item.state} during the erasure; cancel it, then erase again`, retryable: true })
            }
            done.anonymized += yield* anonymizeRun(uid)(runId)
          }))
      )

    const eraseRuns = (uid: PrincipalUid, request: EraseRequest) =>
      Effect.gen(function*() {
        const done: Counts = { deleted: 0, anonymized: 0 }
        const anonymize = (runId: RunId) => Effect.map(anonymizeRun(uid)(runId), (n) => void (done.anonymized += n))
        yield* eachRun(retention.runsCreatedBy, uid, request.runs === "delete" ? deleteRun(uid, done) : anonymize)
        yield* eachRun(retention.runsExecutedBy, uid, anonymize)
        return done
      })

    /** Erases a principal's personal data; what it did. */
    const erase = Effect.fn("Erasure.erase")(
      function*(viewer: Viewer, uid: PrincipalUid, request: EraseRequest) {
        yield* requireInstanceAdmin(viewer)
        const principal = yield* identities.getPrincipal(uid)
        if (Option.isNone(principal)) return yield* ResourceNotFound.of("principal", uid)
        yield* checkRuns(uid, request)
        if (principal.value.deleted_at === null) yield* principals.remove(viewer, uid)
        yield* audit.recording(viewer, identities.erasePrincipal(uid, ERASED_NAME), () => ({
          action: "principal.erase",
          resource: { type: "principal", id: uid },
          team_uid: null
        }))
        const done = yield* eraseRuns(uid, request)
        return new EraseResponse({ principal_uid: uid, runs_deleted: done.deleted, runs_anonymized: done.anonymized })
      },
      storageUnavailable,
      audit.refusals("principal.erase", (uid: PrincipalUid, _request: EraseRequest) => ({ type: "principal", id: uid }))
    )

    return { erase } as const
  })
}) {}
