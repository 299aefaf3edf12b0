/**
 * Claims across connection pools, as two server replicas would make them: two PgStorage layers on
 * one database. Concurrent claimers never take the same run and never stall each other, and a
 * wake-up sent through one pool is heard through the other (LISTEN/NOTIFY).
 */
import { creationEvents, makeRun, uid, uuid } from "@agent-runs/core/testing"
import type { ExecutionId, PrincipalUid, TeamUid } from "@agent-runs/core/domain/Ids"
import { RunStore } from "@agent-runs/core/ports/RunStore"
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Context, Deferred, Effect, Fiber, Layer, Option, Redacted, Ref, Schedule, Stream } from "effect"
import { PgStorage } from "../src/index.js"
import { freshDatabase, testKey } from "./harness.js"

/** Two stores on one fresh database, each with its own pool (and its own LISTEN connection). */
const twoReplicasOn = Effect.gen(function* () {
  const { url } = yield* freshDatabase
  const replica = Effect.map(
    Layer.build(PgStorage.layer({ url: Redacted.make(url), secretKey: testKey(), maxConnections: 6 })),
    Context.get(RunStore)
  )
  return { url, stores: [yield* replica, yield* replica] as const }
})
const twoReplicas = Effect.map(twoReplicasOn, ({ stores }) => stores)

/** Ends every LISTEN connection of the database, as a restart of PostgreSQL or a network fault would. */
const dropListeners = (url: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const ended = yield* sql<{ pid: number }>`SELECT pg_terminate_backend(pid) AS pid FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE 'LISTEN%'`
    return ended.length
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })))

describe("PostgreSQL claims across pools", () => {
  it.scopedLive("two pools claiming at once take every run exactly once, and no claim comes back empty", () =>
    Effect.gen(function* () {
      const [a, b] = yield* twoReplicas
      const team = uid<TeamUid>()
      const creator = uid<PrincipalUid>()
      const host = `host-${uid()}`
      const runs = Array.from({ length: 60 }, (_, i) =>
        makeRun({ team, creator, state: "QUEUED", worker_host: host, created_at: 1_700_000_000_000 + (i % 5) })
      )
      yield* a.create(runs.map((run) => ({ run, events: creationEvents(run) })))
      const claimer = (store: typeof a) =>
        Effect.all(
          Array.from({ length: 6 }, () =>
            Effect.map(
              store.claim({ worker_host: host, execution_id: uuid<ExecutionId>(), now: Date.now(), lease_ms: 60_000 }),
              Option.map((run) => run.item.run_id)
            )
          )
        )
      // 5 claimers per pool × 6 claims = 60 claims for 60 runs, all at once.
      const results = yield* Effect.all(
        [...Array.from({ length: 5 }, () => claimer(a)), ...Array.from({ length: 5 }, () => claimer(b))],
        { concurrency: "unbounded" }
      )
      const claimed = results.flat()
      expect(claimed.filter(Option.isNone).length).toBe(0)
      const ids = claimed.flatMap((c) => (Option.isSome(c) ? [c.value] : []))
      expect(ids.length).toBe(60)
      expect(new Set(ids)).toEqual(new Set(runs.map((r) => r.item.run_id)))
      for (const store of [a, b]) {
        expect(Option.isNone(yield* store.claim({ worker_host: host, execution_id: uuid(), now: Date.now(), lease_ms: 1 })))
          .toBe(true)
      }
      expect((yield* b.admission(team)).active).toBe(60)
    }))

  it.scopedLive("a run queued through one pool wakes the dispatcher listening through the other", () =>
    Effect.gen(function* () {
      const [a, b] = yield* twoReplicas
      const heard = yield* Effect.fork(Stream.runHead(b.wakeups))
      yield* Effect.sleep("300 millis") // b's LISTEN is in place
      const host = `host-${uid()}`
      const run = makeRun({ team: uid(), creator: uid(), state: "QUEUED", worker_host: host })
      yield* a.create([{ run, events: creationEvents(run) }])
      const signal = yield* Fiber.join(heard).pipe(Effect.timeoutOption("5 seconds"), Effect.map(Option.flatten))
      expect(Option.isSome(signal)).toBe(true)
      const claimed = yield* b.claim({ worker_host: host, execution_id: uuid(), now: Date.now(), lease_ms: 60_000 })
      expect(Option.map(claimed, (r) => r.item.run_id)).toEqual(Option.some(run.item.run_id))
    }))

  it.scopedLive("a replica whose LISTEN connection was lost listens again, and looks once when it is back", () =>
    Effect.gen(function* () {
      const { stores: [a, b], url } = yield* twoReplicasOn
      const heard = yield* Ref.make(0)
      yield* b.wakeups.pipe(Stream.runForEach(() => Ref.update(heard, (n) => n + 1)), Effect.forkScoped)
      yield* Effect.sleep("300 millis")
      expect(yield* dropListeners(url)).toBe(2)
      // Back within its retry (1 s): the signal of its return, then what is created after.
      const waitFor = (n: number) =>
        Ref.get(heard).pipe(
          Effect.repeat({ until: (got) => got >= n, schedule: Schedule.spaced("20 millis") }),
          Effect.timeoutOption("3 seconds")
        )
      expect(Option.isSome(yield* waitFor(1))).toBe(true)
      yield* Effect.sleep("100 millis")
      const before = yield* Ref.get(heard)
      const run = makeRun({ team: uid(), creator: uid(), state: "QUEUED", worker_host: `host-${uid()}` })
      yield* a.create([{ run, events: creationEvents(run) }])
      expect(Option.isSome(yield* waitFor(before + 1))).toBe(true)
    }))

  it.scopedLive("a claim by share whose chosen team's run is locked by another writer takes the next team's run, not none", () =>
    Effect.gen(function* () {
      const { stores: [a], url } = yield* twoReplicasOn
      const creator = uid<PrincipalUid>()
      // Two teams waiting (claims go by share); the first team's one run is the older: it would be chosen.
      const first = makeRun({ team: uid(), creator, state: "QUEUED", created_at: 1_700_000_000_000 })
      const second = makeRun({ team: uid(), creator, state: "QUEUED", created_at: 1_700_000_100_000 })
      yield* a.create([first, second].map((run) => ({ run, events: creationEvents(run) })))
      // Another writer (a cancel, say) holds the first run's row.
      const locked = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const holder = yield* Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql.withTransaction(Effect.gen(function* () {
          yield* sql`SELECT run_id FROM runs WHERE run_id = ${first.item.run_id} FOR UPDATE`
          yield* Deferred.succeed(locked, undefined)
          yield* Deferred.await(release)
        }))
      }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })), Effect.fork)
      yield* Deferred.await(locked)
      const claimed = yield* a.claim({ worker_host: null, execution_id: uuid<ExecutionId>(), now: Date.now(), lease_ms: 60_000 })
      expect(Option.map(claimed, (r) => r.item.run_id)).toEqual(Option.some(second.item.run_id))
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holder)
      const next = yield* a.claim({ worker_host: null, execution_id: uuid<ExecutionId>(), now: Date.now(), lease_ms: 60_000 })
      expect(Option.map(next, (r) => r.item.run_id)).toEqual(Option.some(first.item.run_id))
    }))
})
