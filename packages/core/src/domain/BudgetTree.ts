/**
 * A run's budget over its tree of runs (docs/budgets.md, Budget.ts): what its descendants hold of
 * it, and whether a new child's share still fits. A child's budget is carved out of its parent's
 * when it is created; it holds all of it while it (or one of its own descendants) may still spend,
 * what they spent once all ended.
 */
import { leftOf } from "./Budget.js"

/** A run descending from another, as budgets read it (RunStore.descendants). */
export interface Descendant {
  readonly run_id: string
  /** Its ancestors, the root first. */
  readonly ancestor_run_ids: ReadonlyArray<string>
  /** Whether it may still spend (not ended). */
  readonly live: boolean
  /** What it spent itself, in US dollars. */
  readonly cost: number
  readonly max_cost_usd: number | null
}

/** How many descendants of a run budgets read at most: a run with more has nothing left to give. */
export const MAX_DESCENDANTS = 10_000

/** What is held of a budget when its run has too many descendants to read: all of it. */
const ALL_OF_IT = 1e12

/**
 * What a run's descendants hold of its budget (`committedBy`), as read by storage (at most
 * `MAX_DESCENDANTS` of them): all of it when there are that many (the ones not read may hold the rest).
 */
export const heldBy = (runId: string, descendants: ReadonlyArray<Descendant>): number =>
  descendants.length >= MAX_DESCENDANTS ? ALL_OF_IT : committedBy(runId, descendants)

/**
 * What a run's descendants hold of its budget: for each of its children, what the child and its own
 * descendants spent, or the child's whole budget while any of them may still spend (a child's
 * budget was carved out of the run's when it was created, and its descendants' out of the child's).
 */
export const committedBy = (runId: string, descendants: ReadonlyArray<Descendant>): number => {
  const children = new Map<string, { cost: number; live: boolean; budget: number }>()
  for (const d of descendants) {
    const at = d.ancestor_run_ids.indexOf(runId)
    const child = at < 0 ? d.run_id : d.ancestor_run_ids[at + 1] ?? d.run_id
    const sum = children.get(child) ?? { cost: 0, live: false, budget: 0 }
    children.set(child, {
      cost: sum.cost + d.cost,
      live: sum.live || d.live,
      budget: d.run_id === child ? d.max_cost_usd ?? 0 : sum.budget
    })
  }
  let committed = 0
  for (const child of children.values()) committed += child.live ? Math.max(child.budget, child.cost) : child.cost
  return committed
}

/**
 * Whether a child asking `child` still fits in its parent's budget, the parent having spent
 * `parentCost` and its descendants (the child not among them yet) holding what `descendants` say.
 */
export const fitsInParent = (parentId: string, parentBudget: number, parentCost: number, descendants: ReadonlyArray<Descendant>, child: number): boolean =>
  child <= (leftOf(parentBudget, parentCost + heldBy(parentId, descendants)) ?? 0) + 1e-9
