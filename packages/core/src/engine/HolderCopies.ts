/**
 * The lease holders' copies of their runs (RunExecutions.ts): each run as its execution claimed it
 * or last wrote it, so that the execution's next write goes from the copy, guarded by the whole
 * copy (`RunGuard.expected`), instead of reading the run first (docs/performance.md, statements
 * per run). A copy that is no longer what storage holds (the run was renewed, reported, cancelled
 * or followed up by someone else since, or by another replica) only costs a refused write and the
 * read it saved: nothing is ever written from a stale copy.
 *
 * A copy is kept only while its execution holds the run (CLAIMED or INPROGRESS under its lease), is
 * forgotten when a write or renewal of its execution fails (it may be stale, or the run lost), and
 * at most `MAX_COPIES` are kept (the oldest forgotten first: a holder whose run another replica
 * took leaves its copy behind until then). A renewal and a write of the same execution may race
 * and leave a copy already stale: the guard refuses the write from it, and it is read again.
 */
import type { ExecutionId, RunId } from "../domain/Ids.js"
import { holds } from "../domain/RunRecords.js"
import type { StoredRun } from "../ports/RunStore.js"

/** The most copies kept. */
const MAX_COPIES = 1_000

export const make = () => {
  const copies = new Map<ExecutionId, StoredRun>()

  /** Keeps `run` as `executionId`'s copy while it holds it (else forgets any). */
  const keep = (executionId: ExecutionId, run: StoredRun) => {
    copies.delete(executionId)
    if (!holds(run, executionId)) return
    copies.set(executionId, run)
    if (copies.size > MAX_COPIES) copies.delete(copies.keys().next().value!)
  }

  /** `executionId`'s copy of the run `runId`, if it keeps one. */
  const of = (runId: RunId, executionId: ExecutionId): StoredRun | undefined => {
    const copy = copies.get(executionId)
    return copy?.item.run_id === runId ? copy : undefined
  }

  /** Forgets `executionId`'s copy (it was found stale). */
  const drop = (executionId: ExecutionId) => void copies.delete(executionId)

  /** `executionId` renewed its lease until `expiresAt`: its copy says so. */
  const renewed = (executionId: ExecutionId, expiresAt: number) => {
    const copy = copies.get(executionId)
    if (copy?.lease != null) copies.set(executionId, { ...copy, lease: { ...copy.lease, expires_at: expiresAt } })
  }

  return { keep, of, drop, renewed } as const
}
