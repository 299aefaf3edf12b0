/**
 * Fair share across teams, as a store claims (RunStore.claim, FairShare.ts): while two teams have
 * runs waiting without end, the service's own claims go to each in proportion to its weight, within
 * a claim, whichever replica claims, claims made at once included. `replicas` builds two stores on
 * one fresh database: the same store twice on SQLite and in memory (one process), two pools on
 * PostgreSQL (two replicas). Call `fairShareSuite(name, replicas)` inside a vitest file.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, DateTime, Effect, Option } from "effect"
import type { Scope } from "effect"
import { Team } from "../src/domain/Identity.js"
import type { ExecutionId, PrincipalUid, TeamUid } from "../src/domain/Ids.js"
import { IdentityStore } from "../src/ports/IdentityStore.js"
import { RunStore } from "../src/ports/RunStore.js"
import { creationEvents, makeRun, uid, uuid } from "./RunStoreConformance.js"
import type { Stores } from "./Stores.js"

const HOUR = 3_600_000

const teamWith = (share_weight: number) =>
  new Team({
    uid: uid<TeamUid>(),
    name: `weight ${share_weight}`,
    features: { metadata_filtering: true, scheduled_agents: true },
    max_concurrent_runs: 100,
    created_at: DateTime.unsafeMake(0),
    share_weight
  })

export const fairShareSuite = <E>(
  name: string,
  replicas: Effect.Effect<readonly [Context.Context<Stores>, Context.Context<Stores>], E, Scope.Scope>
) =>
  describe(`fair share (${name})`, () => {
    /** Two teams of weights 2 and 1 on one database, 40 and 20 QUEUED runs; the light team's all older. */
    const setup = Effect.gen(function*() {
      const [one, two] = yield* replicas
      const heavy = teamWith(2)
      const light = teamWith(1)
      const identities = Context.get(one, IdentityStore)
      yield* identities.createTeam(heavy)
      yield* identities.createTeam(light)
      const creator = uid<PrincipalUid>()
      const runsOf = (team: Team, n: number, from: number) =>
        Array.from({ length: n }, (_, i) => makeRun({ team: team.uid, creator, state: "QUEUED", created_at: from + i }))
      // First come, first served would give the light team all of the first 20 claims.
      const runs = [...runsOf(light, 20, 1_700_000_000_000), ...runsOf(heavy, 40, 1_700_000_100_000)]
      yield* Context.get(one, RunStore).create(runs.map((run) => ({ run, events: creationEvents(run) })))
      return { stores: [Context.get(one, RunStore), Context.get(two, RunStore)] as const, heavy, light }
    })

    const claimFrom = (store: RunStore["Type"]) =>
      Effect.map(
        store.claim({ worker_host: null, execution_id: uuid<ExecutionId>(), now: Date.now(), lease_ms: HOUR }),
        Option.getOrThrow
      )

    it.scopedLive("each team gets claims in proportion to its weight, within one claim, until the runs run out", () =>
      Effect.gen(function*() {
        const { heavy, light, stores } = yield* setup
        const taken: Array<TeamUid> = []
        for (let n = 1; n <= 60; n++) {
          // The replicas take turns.
          taken.push((yield* claimFrom(stores[n % 2]!)).team_uid)
          const heavyCount = taken.filter((t) => t === heavy.uid).length
          expect(Math.abs(heavyCount - (n * 2) / 3)).toBeLessThanOrEqual(1)
        }
        expect([taken.filter((t) => t === heavy.uid).length, taken.filter((t) => t === light.uid).length]).toEqual([40, 20])
        expect(yield* stores[0].claim({ worker_host: null, execution_id: uuid(), now: Date.now(), lease_ms: HOUR })).toEqual(Option.none())
      }))

    it.scopedLive("claims made at once by both replicas keep the shares: after each round of 6, within one claim", () =>
      Effect.gen(function*() {
        const { heavy, stores } = yield* setup
        const ids = new Set<string>()
        let heavyCount = 0
        for (let round = 1; round <= 10; round++) {
          const claimed = yield* Effect.all(
            Array.from({ length: 6 }, (_, i) => claimFrom(stores[i % 2]!)),
            { concurrency: "unbounded" }
          )
          claimed.forEach((run) => ids.add(run.item.run_id))
          heavyCount += claimed.filter((run) => run.team_uid === heavy.uid).length
          expect(Math.abs(heavyCount - (round * 6 * 2) / 3)).toBeLessThanOrEqual(1)
        }
        // Each run once.
        expect(ids.size).toBe(60)
      }))
  })
