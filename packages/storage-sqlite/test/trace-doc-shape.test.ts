/**
 * Migration 0017: run documents stored before runs had a trace are marked with the shape that has
 * one (its fields are optional, so such a document is the run's encoding under it), and so are
 * spliced by lists again, not decoded and encoded; what a list sends stays the same.
 */
import { expect, it } from "@effect/vitest"
import type { PrincipalUid, TeamUid } from "@agent-runs/core/domain/Ids"
import { RUN_DOC_SHAPE } from "@agent-runs/core/domain/RunJson"
import { RunStore } from "@agent-runs/core/ports/RunStore"
import { creationEvents, makeRun, uid } from "@agent-runs/core/testing"
import { Migrations } from "@agent-runs/storage-sql"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { SqliteStorage } from "../src/index.js"
import { freshDatabase, testKey } from "./harness.js"

const { BEFORE_TRACES, WITH_TRACES, default: traceDocShape } = Migrations.TraceDocShape

it.scoped("marks documents of the shape before traces with the shape with them; lists send the same", () =>
  Effect.gen(function* () {
    const { filename } = yield* freshDatabase
    const context = yield* Layer.build(SqliteStorage.layer({ filename, secretKey: testKey() }))
    const sql = yield* Effect.provide(SqlClient.SqlClient, context)
    const store = yield* Effect.provide(RunStore, context)
    const team = uid<TeamUid>()
    const run = makeRun({ team, creator: uid<PrincipalUid>(), state: "SUCCEEDED" })
    yield* store.create([{ run, events: creationEvents(run) }])
    const before = yield* store.getJson(run.item.run_id)
    yield* sql`UPDATE runs SET doc_shape = ${BEFORE_TRACES}`
    yield* Effect.provide(traceDocShape, context)
    const rows = yield* sql<{ doc_shape: string }>`SELECT doc_shape FROM runs`
    expect(rows.map((r) => r.doc_shape)).toEqual([WITH_TRACES])
    expect(yield* store.getJson(run.item.run_id)).toEqual(before)
    // The shape with traces is the current one. When RunItem changes again, this line goes (and
    // the change may want a migration like this one).
    expect(WITH_TRACES).toBe(RUN_DOC_SHAPE)
  }))
