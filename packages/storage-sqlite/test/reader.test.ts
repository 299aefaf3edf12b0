/**
 * Reads outside a transaction go through the read-only connection (storage-sql's Reader.ts): while
 * another fiber's transaction is open on the writer's connection, a read neither sees its writes
 * (rolled back below) nor waits for it to end.
 */
import { RunStore } from "@agent-runs/core"
import { creationEvents, makeRun, uid } from "@agent-runs/core/testing"
import type { PrincipalUid, TeamUid } from "@agent-runs/core/domain/Ids"
import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Reader } from "@agent-runs/storage-sql"
import { Deferred, Duration, Effect, Exit, Fiber, Layer, Option } from "effect"
import { SqliteStorage } from "../src/index.js"
import { storageLayer, testKey } from "./harness.js"

describe("reads outside a transaction (sqlite)", () => {
  it.scoped("see the last commit while a transaction is open, without waiting for it", () =>
    Effect.gen(function* () {
      const store = yield* RunStore.RunStore
      const sql = yield* SqlClient.SqlClient
      const run = makeRun({ team: uid<TeamUid>(), creator: uid<PrincipalUid>(), state: "QUEUED" })
      const runId = run.item.run_id
      yield* store.create([{ run, events: creationEvents(run) }])

      const written = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      // A transaction that changes the run, holds the writer's connection, then rolls back.
      const transaction = yield* sql.withTransaction(
        Effect.gen(function* () {
          yield* sql`UPDATE runs SET state = 'CANCELLED', doc = '{}' WHERE run_id = ${runId}`
          yield* Deferred.succeed(written, undefined)
          yield* Deferred.await(release)
          return yield* Effect.fail("rolled back")
        })
      ).pipe(Effect.either, Effect.fork)
      yield* Deferred.await(written)

      const read = yield* store.get(runId).pipe(Effect.timeout(Duration.seconds(5)))
      expect(Option.getOrThrow(read).item.state).toBe("QUEUED")
      const json = Option.getOrThrow(yield* store.getJson(runId).pipe(Effect.timeout(Duration.seconds(5))))
      expect(JSON.parse(json.json).state).toBe("QUEUED")

      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(transaction)
      expect(Option.getOrThrow(yield* store.get(runId)).item.state).toBe("QUEUED")

      // The reading connection cannot write.
      const reader = yield* Reader.Reader
      const refused = yield* Effect.flip(reader`DELETE FROM runs WHERE run_id = ${runId}`)
      expect(refused._tag).toBe("SqlError")
      expect(Option.isSome(yield* store.get(runId))).toBe(true)
    }).pipe(Effect.provide(storageLayer)), 20_000)

  it.scoped("refuse an in-memory database, which the two connections could not share", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(Layer.build(SqliteStorage.layer({ filename: ":memory:", secretKey: testKey() })))
      expect(Exit.isFailure(exit) && String(Exit.causeOption(exit).pipe(Option.getOrThrow))).toMatch(/must be a file/)
    }))
})
