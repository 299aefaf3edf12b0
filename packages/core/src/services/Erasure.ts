/**
 * Erasing a principal's personal data, for instance administrators
 * (`POST /admin/principals/{principal_uid}/erase`, docs/retention.md#erasing-a-principal).
 *
 * Decisions:
 * - The principal is deleted first when it is not yet (tokens revoked, memberships removed, as
 *   `DELETE /admin/principals/{uid}`), then its name is replaced by `ERASED_NAME`, its email and
 *   its sign-in link forgotten.
 * - The runs it created, in every team: `delete` removes them for good (as `DELETE
 *   /agent/runs/{id}`: timeline, conversation, follow-ups, transcript, agent state, artifacts),
 *   but for a run under another's run that is kept (whose budget counts it), which is anonymized;
 *   `anonymize` keeps them all for their teams with the creator's name replaced.
 * - Refused (409, nothing changed) while any of those runs is live: an agent still at work would
 *   write its run back. Cancel them first.
 * - Idempotent: a request cut short (a restart) is repeated and finishes; runs are taken in
 *   batches of `ERASE_BATCH`. Audited `principal.erase` with the counts, refusals too. The audit
 *   log itself keeps the entries that name the principal until its own retention removes them.
 */
import { Effect, Option } from "effect"
import type { Viewer } from "../domain/Access.js"
import { Conflict } from "../domain/Errors.js"
import { ERASED_NAME, type EraseRequest, EraseResponse } from "../domain/Erasure.js"
import type { PrincipalUid, RunId } from "../domain/Ids.js"
import { guardOf } from "../domain/RunRecords.js"
import { isTerminal } from "../domain/RunState.js"
import { RunItem } from "../domain/Run.js"
import { removeQueuedKeys } from "../engine/DataRetention.js"
import { requireInstanceAdmin } from "../internal/Principals.js"
import { storageUnavailable } from "../internal/Services.js"
import { ResourceNotFound } from "../domain/Errors.js"
import { BlobStore } from "../ports/BlobStore.js"
import { IdentityStore } from "../ports/IdentityStore.js"
import { RetentionStore } from "../ports/RetentionStore.js"
import { RunStore } from "../ports/RunStore.js"
import { Audit } from "./Audit.js"
import { Principals } from "./Principals.js"

/** What an erasure did so far. */
interface Counts {
  deleted: number
  anonymized: number
}

/** Runs read per batch. */
export const ERASE_BATCH = 100

export class Erasure extends Effect.Service<Erasure>()("@agent-runs/core/Erasure", {
  dependencies: [Audit.Default, Principals.Default],
  effect: Effect.gen(function*() {
    const audit = yield* Audit
    const principals = yield* Principals
    const identities = yield* IdentityStore
    const retention = yield* RetentionStore
    const runs = yield* RunStore
    const blobs = yield* BlobStore

    /** Each run the principal created, a batch at a time. */
    const eachRun = <E>(uid: PrincipalUid, f: (runId: RunId, ended: boolean) => Effect.Effect<void, E>) =>
      Effect.gen(function*() {
        let after: RunId | undefined
        for (;;) {
          const page = yield* retention.runsCreatedBy(uid, after, ERASE_BATCH)
          yield* Effect.forEach(page, (run) => f(run.run_id, isTerminal(run.state)), { discard: true })
          if (page.length < ERASE_BATCH) return
          after = page[page.length - 1]!.run_id
        }
      })

    const countLive = (uid: PrincipalUid) =>
      Effect.gen(function*() {
        let live = 0
        yield* eachRun(uid, (_id, ended) => Effect.sync(() => void (ended ? 0 : live++)))
        return live
      })

    /** Deletes a run; one a team keeps for a run above it (its budget counts it) is anonymized instead. */
    const deleteRun = (runId: RunId, done: Counts) =>
      retention.removeRun(runId).pipe(
        Effect.flatMap((keys) =>
          removeQueuedKeys(keys).pipe(Effect.provideService(BlobStore, blobs), Effect.provideService(RetentionStore, retention))),
        Effect.map(() => void done.deleted++),
        Effect.catchTag("StaleWrite", () => Effect.map(anonymizeRun(runId), (n) => void (done.anonymized += n)))
      )

    const anonymizeRun = (runId: RunId) =>
      Effect.gen(function*() {
        const found = yield* runs.get(runId)
        if (Option.isNone(found) || found.value.item.creator.display_name === ERASED_NAME) return 0
        const run = found.value
        const next = { ...run, item: new RunItem({ ...run.item, creator: { ...run.item.creator, display_name: ERASED_NAME } }) }
        yield* runs.update(runId, guardOf(run), next, [])
        return 1
      })

    /** Runs in id order, so a principal's own parents go before their children. */
    const eraseRuns = (uid: PrincipalUid, request: EraseRequest) =>
      Effect.gen(function*() {
        const done: Counts = { deleted: 0, anonymized: 0 }
        yield* eachRun(uid, (runId) =>
          request.runs === "delete" ? deleteRun(runId, done) : Effect.map(anonymizeRun(runId), (n) => void (done.anonymized += n)))
        return done
      })

    /** Erases a principal's personal data; what it did. */
    const erase = Effect.fn("Erasure.erase")(
      function*(viewer: Viewer, uid: PrincipalUid, request: EraseRequest) {
        yield* requireInstanceAdmin(viewer)
        const principal = yield* identities.getPrincipal(uid)
        if (Option.isNone(principal)) return yield* ResourceNotFound.of("principal", uid)
        const live = yield* countLive(uid)
        if (live > 0) {
          return yield* new Conflict({ message: `runs: ${live} runs this principal created are still live; cancel them first, then erase it` })
        }
        if (principal.value.deleted_at === null) yield* principals.remove(viewer, uid)
        const done = yield* eraseRuns(uid, request)
        const answer = new EraseResponse({ principal_uid: uid, runs_deleted: done.deleted, runs_anonymized: done.anonymized })
        yield* audit.recording(viewer, identities.erasePrincipal(uid, ERASED_NAME), () => ({
          action: "principal.erase",
          resource: { type: "principal", id: uid },
          team_uid: null
        }))
        return answer
      },
      Effect.catchTag("StaleWrite", () =>
        Effect.fail(new Conflict({ message: "runs: a run changed while it was being erased; try again", retryable: true }))),
      storageUnavailable,
      audit.refusals("principal.erase", (uid: PrincipalUid, _request: EraseRequest) => ({ type: "principal", id: uid }))
    )

    return { erase } as const
  })
}) {}
