/**
 * Claims from two connections to one SQLite file, as two processes would make them: SQLite's
 * write lock serializes the claims (each is one transaction whose first statement writes), so
 * no run is claimed twice and no claim fails with SQLITE_BUSY.
 */
import { creationEvents, makeRun, uid, uuid } from "@agent-runs/core/testing"
import type { ExecutionId, PrincipalUid, TeamUid } from "@agent-runs/core/domain/Ids"
import { RunStore } from "@agent-runs/core/ports/RunStore"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { SqliteStorage } from "../src/index.js"
import { freshDatabase, testKey } from "./harness.js"

describe("SQLite claims from two connections", () => {
  it.scopedLive("two connections claiming at once take every run exactly once", () =>
    Effect.gen(function* () {
      const { filename } = yield* freshDatabase
      const connection = Effect.map(
        Layer.build(SqliteStorage.layer({ filename, secretKey: testKey() })),
        Context.get(RunStore)
      )
      const a = yield* connection
      const b = yield* connection
      const team = uid<TeamUid>()
      const creator = uid<PrincipalUid>()
      const host = `host-${uid()}`
      const runs = Array.from({ length: 40 }, (_, i) =>
        makeRun({ team, creator, state: "QUEUED", worker_host: host, created_at: 1_700_000_000_000 + (i % 5) })
      )
      yield* a.create(runs.map((run) => ({ run, events: creationEvents(run) })))
      const claimer = (store: typeof a) =>
        Effect.all(
          Array.from({ length: 5 }, () =>
            Effect.map(
              store.claim({ worker_host: host, execution_id: uuid<ExecutionId>(), now: Date.now(), lease_ms: 60_000 }),
              Option.map((run) => run.item.run_id)
            )
          )
        )
      const results = yield* Effect.all(
        [...Array.from({ length: 4 }, () => claimer(a)), ...Array.from({ length: 4 }, () => claimer(b))],
        { concurrency: "unbounded" }
      )
      const ids = results.flat().flatMap((c) => (Option.isSome(c) ? [c.value] : []))
      expect(ids.length).toBe(40)
      expect(new Set(ids)).toEqual(new Set(runs.map((r) => r.item.run_id)))
      expect((yield* b.admission(team)).active).toBe(40)
    }))
})
