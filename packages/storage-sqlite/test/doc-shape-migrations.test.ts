/**
 * Migrations 0017, 0018 and 0019: run documents stored before runs had a trace, a budget or a priority, are marked
 * with the shape that has them (those fields are optional, so such a document is the run's encoding
 * under it), and so are spliced by lists again, not decoded and encoded; what a list sends stays
 * the same.
 */
import { expect, it } from "@effect/vitest"
import type { PrincipalUid, TeamUid } from "@agent-runs/core/domain/Ids"
import { RUN_DOC_SHAPE } from "@agent-runs/core/domain/RunJson"
import { RunStore } from "@agent-runs/core/ports/RunStore"
import { creationEvents, makeRun, uid } from "@agent-runs/core/testing"
import { Migrations } from "@agent-runs/storage-sql"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option } from "effect"
import { SqliteStorage } from "../src/index.js"
import { freshDatabase, testKey } from "./harness.js"

const { BEFORE_TRACES, WITH_TRACES, default: traceDocShape } = Migrations.TraceDocShape
const { WITH_BUDGETS } = Migrations.Budgets
const { WITH_PRIORITY } = Migrations.FairShare

/** A database with one run whose document is marked `shape`; what a list sent before, and a way to read it again. */
const storedUnder = (shape: string) =>
  Effect.gen(function* () {
    const { filename } = yield* freshDatabase
    const context = yield* Layer.build(SqliteStorage.layer({ filename, secretKey: testKey() }))
    const sql = yield* Effect.provide(SqlClient.SqlClient, context)
    const store = yield* Effect.provide(RunStore, context)
    const run = makeRun({ team: uid<TeamUid>(), creator: uid<PrincipalUid>(), state: "SUCCEEDED" })
    yield* store.create([{ run, events: creationEvents(run) }])
    // As parsed JSON: a spliced document and an encoded run order their keys differently.
    const read = store.getJson(run.item.run_id).pipe(Effect.map(Option.map((r) => JSON.parse(r.json) as unknown)))
    const before = yield* read
    yield* sql`UPDATE runs SET doc_shape = ${shape}`
    const shapes = sql<{ doc_shape: string }>`SELECT doc_shape FROM runs`.pipe(Effect.map((rows) => rows.map((r) => r.doc_shape)))
    return { context, before, shapes, again: read }
  })

it.scoped("0017 marks documents of the shape before traces with the shape with them; lists send the same", () =>
  Effect.gen(function* () {
    const db = yield* storedUnder(BEFORE_TRACES)
    yield* Effect.provide(traceDocShape, db.context)
    expect(yield* db.shapes).toEqual([WITH_TRACES])
    expect(yield* db.again).toEqual(db.before)
  }))

it.scoped.each([BEFORE_TRACES, WITH_TRACES])("0018 marks documents of shape %s with the shape with budgets; lists send the same", (shape) =>
  Effect.gen(function* () {
    const db = yield* storedUnder(shape)
    const sql = yield* Effect.provide(SqlClient.SqlClient, db.context)
    // The migration as it runs on a database that has not had it yet (its column is added again).
    yield* sql`ALTER TABLE teams DROP COLUMN budgets`
    yield* Effect.provide(Migrations.Budgets.default, db.context)
    expect(yield* db.shapes).toEqual([WITH_BUDGETS])
    expect(yield* db.again).toEqual(db.before)
  }))

it.scoped("0019 marks documents of the shape with budgets with the shape with priorities; lists send the same", () =>
  Effect.gen(function* () {
    const db = yield* storedUnder(WITH_BUDGETS)
    const sql = yield* Effect.provide(SqlClient.SqlClient, db.context)
    // The migration as it runs on a database that has not had it yet (what it adds is dropped first).
    yield* sql`DROP INDEX runs_claim`
    yield* sql`ALTER TABLE runs DROP COLUMN priority`
    yield* sql`DROP TABLE team_shares`
    yield* sql`DROP TABLE share_clock`
    yield* sql`ALTER TABLE teams DROP COLUMN share_weight`
    yield* Effect.provide(Migrations.FairShare.default, db.context)
    expect(yield* db.shapes).toEqual([WITH_PRIORITY])
    expect(yield* db.again).toEqual(db.before)
    // The shape with priorities is the current one. When RunItem changes again, this line goes (and
    // the change may want a migration like this one).
    expect(WITH_PRIORITY).toBe(RUN_DOC_SHAPE)
  }))
