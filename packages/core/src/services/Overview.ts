/**
 * A team's overview (RunOverview.ts): what its runs did over the last hours, for the dashboard's
 * Overview page. Anyone acting in the team reads it (viewers too), over the runs it may see (as the
 * run list: the team's runs, its own personal runs, everyone's for the team's admins), so that each
 * figure is what the run list shows it.
 */
import { Clock, Effect } from "effect"
import type { Viewer } from "../domain/Access.js"
import { MAX_OVERVIEW_RUNS, overviewOf, windowStart } from "../domain/RunOverview.js"
import { storageUnavailable } from "../internal/Services.js"
import { RunStore } from "../ports/RunStore.js"

export class Overview extends Effect.Service<Overview>()("@agent-runs/core/Overview", {
  effect: Effect.gen(function*() {
    const runs = yield* RunStore

    /** The caller's team's overview over the last `hours` hours (the current one included). */
    const get = Effect.fn("Overview.get")(
      function*(viewer: Viewer, hours: number) {
        const since = windowStart(yield* Clock.currentTimeMillis, hours)
        // One more than is read: whether there were more.
        const read = yield* runs.overviewRuns(viewer, since, MAX_OVERVIEW_RUNS + 1)
        return overviewOf(read.slice(0, MAX_OVERVIEW_RUNS), since, hours, read.length > MAX_OVERVIEW_RUNS)
      },
      storageUnavailable
    )

    return { get } as const
  })
}) {}
