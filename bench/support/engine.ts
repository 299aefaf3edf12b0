/**
 * What the engine benchmarks (bench/queue, bench/engine) share: a team with room for every run and
 * a member who creates them, the core's `Runs` service over a store (as `POST /agent/runs` uses
 * it, without rate or admission limits in the way), no repositories, and no logs.
 */
import type { Viewer } from "@agent-runs/core/domain/Access"
import { Ids, IdsLive, type PrincipalUid, type TeamUid } from "@agent-runs/core/domain/Ids"
import { Principal, Team } from "@agent-runs/core/domain/Identity"
import { defaultQuotas, Quotas } from "@agent-runs/core/domain/Quotas"
import { IdentityStore } from "@agent-runs/core/ports/IdentityStore"
import { RepoSource } from "@agent-runs/core/ports/RepoSource"
import { Runs } from "@agent-runs/core/services/Runs"
import { DateTime, Effect, Layer, Logger, LogLevel, Option } from "effect"

/** No logs, as graphile-worker's logger in these benches logs nothing: writing logs is not the queue's cost. */
export const quiet = Logger.withMinimumLogLevel(LogLevel.None)

/** A team with room for every run, and a member of it who creates them. */
export const seedTeam = Effect.gen(function*() {
  const identities = yield* IdentityStore
  const ids = yield* Ids
  const team = (yield* ids.uid22) as TeamUid
  const member = (yield* ids.uid22) as PrincipalUid
  const now = DateTime.unsafeNow()
  yield* identities.createTeam(new Team({
    uid: team,
    name: "bench",
    features: { metadata_filtering: true, scheduled_agents: true },
    max_concurrent_runs: 10_000,
    created_at: now
  }))
  yield* identities.createPrincipal(new Principal({
    uid: member,
    type: "user",
    display_name: "bench",
    instance_admin: false,
    memberships: [{ team_uid: team, role: "member" }],
    created_at: now
  }))
  const viewer: Viewer = { principal_uid: member, team_uid: team, role: "member", instance_admin: false }
  return viewer
})

/** No repositories: the runs name none. */
export const noRepos = Layer.succeed(RepoSource, { has: () => Effect.succeed(false), findFiles: () => Effect.succeed(Option.none()) })

/** The core's Runs service over the stores of the context; one team creates every run, so no rate limit. */
export const runsService = Effect.provide(Runs, Runs.Default.pipe(Layer.provide(Layer.merge(IdsLive, noRepos)))).pipe(
  Effect.provideService(Quotas, { ...defaultQuotas, runsPerMinute: Number.MAX_SAFE_INTEGER })
)
